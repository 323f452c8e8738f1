// `gpumemtrace run`: flags -> environment -> exec. The flag logic is in
// launcher_flags.cc and the library search in preload_library.cc; this file
// only touches the process (environment, PATH lookup, exec).
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/explain_faults.h"
#include "cli/launcher_flags.h"
#include "cli/preload_library.h"
#include "cli/usage.h"

namespace gmt::cli {
namespace {

int Fail(int status, const std::string& message) {
  std::fprintf(stderr, "gpumemtrace run: error: %s\n", message.c_str());
  return status;
}

std::string LauncherDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// What execvp would run, or "" with `status` 127 (not found) or 126 (found,
// not executable) and `error` set, as a shell reports them.
std::string ResolveProgram(const std::string& name, int* status,
                           std::string* error) {
  auto check = [&](const std::string& path) -> bool {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      *status = 127;
      *error = absl::StrCat("'", path, "': ", std::strerror(errno));
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      *status = 126;
      *error = absl::StrCat("'", path, "' is a directory");
      return false;
    }
    if (access(path.c_str(), X_OK) != 0) {
      *status = 126;
      *error = absl::StrCat("'", path,
                            "' is not executable: ", std::strerror(errno));
      return false;
    }
    return true;
  };
  if (name.find('/') != std::string::npos) {
    return check(name) ? name : "";
  }
  const char* path_env = std::getenv("PATH");
  std::string search = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(search, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  *status = 127;
  *error = absl::StrCat("'", name, "': command not found in PATH");
  return "";
}

}  // namespace

int RunMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  RunParse parsed = ParseRunFlags(args);
  if (!parsed.ok()) return UsageError("run", parsed.error);
  if (parsed.plan.help) {
    std::fputs(RunUsage().c_str(), stdout);
    return 0;
  }
  const RunPlan& plan = parsed.plan;

  std::string error;
  const char* env_library = std::getenv("GMT_LIBRARY");
  const std::string library =
      FindLibrary(LauncherDir(), env_library ? env_library : "", &error);
  if (library.empty()) return Fail(1, error);

  int status = 0;
  const std::string program = ResolveProgram(plan.program[0], &status, &error);
  if (program.empty()) return Fail(status, error);

  const char* user_preload = std::getenv("LD_PRELOAD");
  const char* user_options = std::getenv("GMT_OPTIONS");
  const std::string preload =
      MergePreload(library, user_preload ? user_preload : "");
  if (plan.explain_faults) {
    if (std::string why = WhyFaultsCannotBeExplained(); !why.empty()) {
      return Fail(1, why);
    }
  }
  std::string plan_options = plan.OptionsText();
  if (plan.explain_faults) {
    if (!plan_options.empty()) plan_options += ':';
    plan_options += ExplainOptionsText(plan.keep_gpu_dump);
  }
  const std::string options =
      MergeOptions(user_options ? user_options : "", plan_options);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!options.empty()) setenv("GMT_OPTIONS", options.c_str(), 1);
  // CUPTI injection reaches statically linked cudart, which LD_PRELOAD does
  // not. Only a library that has the entry point is named: the driver would
  // otherwise be handed a library it cannot initialize. A profiler's
  // injection library already set stays (one CUPTI subscriber per process).
  // Not with --explain-faults: with the library injected as well, the
  // driver wrote no GPU core dump at the fault (seen on the H200, driver
  // 580), while with LD_PRELOAD alone it does.
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  if (!plan.explain_faults && (injection == nullptr || injection[0] == '\0') &&
      ElfExports(library, "InitializeInjection")) {
    setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
  }

  std::vector<char*> exec_argv;
  for (const std::string& a : plan.program) {
    exec_argv.push_back(const_cast<char*>(a.c_str()));
  }
  exec_argv.push_back(nullptr);
  execv(program.c_str(), exec_argv.data());
  const int exec_errno = errno;
  return Fail(exec_errno == ENOENT ? 127 : 126,
              absl::StrCat("cannot execute '", program,
                           "': ", std::strerror(exec_errno)));
}

}  // namespace gmt::cli
