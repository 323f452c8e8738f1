// `gpumemtrace run --explain-faults` (see explain_faults.h).
#include "cli/explain_faults.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/gpu_fault/fault_text.h"
#include "lib/gpu_fault/gpu_core_dump.h"
#include "lib/gpu_fault/gpu_dump_arming.h"

namespace gmt::cli {
namespace {

int Fail(int status, const std::string& message) {
  std::fprintf(stderr, "gpumemtrace run: error: %s\n", message.c_str());
  return status;
}

// The dumps `dir` holds (every regular file but the readers' markers),
// sorted.
std::vector<std::string> DumpsIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 &&
          S_ISREG(st.st_mode) &&
          !absl::EndsWith(path, gpu_fault::ExplainedMarkerPath(""))) {
        out.push_back(path);
      }
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Prints what the dump at `path` says; false when it cannot be read.
bool ExplainDump(const std::string& path) {
  absl::StatusOr<gpu_fault::GpuCoreDump> dump =
      gpu_fault::ReadGpuCoreDumpFile(path);
  if (!dump.ok()) {
    std::fprintf(stderr,
                 "gpumemtrace: the driver's GPU core dump %s could not be "
                 "read: %s\n",
                 path.c_str(), std::string(dump.status().message()).c_str());
    return false;
  }
  const std::string text = gpu_fault::RenderGpuFaultText(
      gpu_fault::ExplainGpuFaults(*dump, gpu_fault::ExplainOptions{}),
      gpu_fault::FaultTextOptions{});
  std::fprintf(stderr,
               "gpumemtrace: the GPU fault, from the driver's core dump:\n%s",
               text.c_str());
  return true;
}

// Ends this process as the program ended: by the same signal (its default
// action, without a core file of the launcher's own), else with `fallback`.
int EndAsSignal(int sig, int fallback) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  return fallback;
}

}  // namespace

std::string ExplainOptionsText(const std::string& dump_dir, bool keep_dump) {
  return absl::StrCat("explain_faults=1:gpu_dump_dir=", dump_dir,
                      keep_dump ? ":keep_gpu_dump=1" : "");
}

int RunExplainingFaults(const std::string& program,
                        const std::vector<std::string>& argv, bool keep_dump) {
  if (const char* name = gpu_fault::UserGpuDumpVariable()) {
    return Fail(1,
                absl::StrCat("--explain-faults arms the GPU core dump "
                             "itself, and ",
                             name, " is already set (to '", std::getenv(name),
                             "'): unset it, or drop --explain-faults"));
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                   "/gpumemtrace-dump.XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return Fail(1, absl::StrCat("cannot make a folder for the GPU core dump (",
                                dir, "): ", std::strerror(errno)));
  }
  // Armed here, for a program the library reaches only after cuInit
  // (injection); the library takes it as armed (the same variables) and
  // explains the dump in its crash report, among the program's blocks.
  for (const auto& [name, value] : gpu_fault::GpuDumpEnvironment(dir)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  {
    const char* user = std::getenv("GMT_OPTIONS");
    std::string options = user != nullptr ? user : "";
    if (!options.empty()) options += ':';
    options += ExplainOptionsText(dir, keep_dump);
    setenv("GMT_OPTIONS", options.c_str(), 1);
  }
  std::vector<char*> exec_argv;
  for (const std::string& a : argv) {
    exec_argv.push_back(const_cast<char*>(a.c_str()));
  }
  exec_argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    rmdir(dir.c_str());
    return Fail(1, absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (child == 0) {
    execv(program.c_str(), exec_argv.data());
    const int exec_errno = errno;
    std::fprintf(stderr, "gpumemtrace run: error: cannot execute '%s': %s\n",
                 program.c_str(), std::strerror(exec_errno));
    _exit(exec_errno == ENOENT ? 127 : 126);
  }
  // A terminal's Ctrl-C reaches the program; the launcher stays to explain.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // A dump the library explained (in its crash report, with the blocks)
  // is gone, or kept beside its marker; the rest are explained here.
  bool all_read = true;
  const std::vector<std::string> dumps = DumpsIn(dir);
  for (const std::string& path : dumps) {
    const std::string marker = gpu_fault::ExplainedMarkerPath(path);
    if (Exists(marker)) {
      unlink(marker.c_str());
      continue;  // the library also said where it is kept
    }
    if (!ExplainDump(path)) all_read = false;
    if (keep_dump || !all_read) {
      std::fprintf(stderr,
                   "gpumemtrace: the GPU core dump is kept at %s; cuda-gdb "
                   "opens it: cuda-gdb -batch -ex 'target cudacore %s'\n",
                   path.c_str(), path.c_str());
    } else {
      unlink(path.c_str());
    }
  }
  rmdir(dir.c_str());  // fails, harmlessly, while a kept dump is in it
  if (WIFSIGNALED(status)) {
    return EndAsSignal(WTERMSIG(status), 128 + WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace gmt::cli
