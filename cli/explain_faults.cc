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

#include "absl/strings/str_cat.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/gpu_fault/fault_text.h"
#include "lib/gpu_fault/gpu_core_dump.h"

namespace gmt::cli {
namespace {

// The variables the dump is armed with; a user's own setting of any of them
// would decide where the dump goes or whether the program survives it.
constexpr const char* kDumpVariables[] = {
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_GENERATION_FLAGS",
    "CUDA_COREDUMP_FILE", "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP"};

int Fail(int status, const std::string& message) {
  std::fprintf(stderr, "gpumemtrace run: error: %s\n", message.c_str());
  return status;
}

// The regular files `dir` holds, sorted.
std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 &&
          S_ISREG(st.st_mode)) {
        out.push_back(path);
      }
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

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

std::vector<std::pair<std::string, std::string>> GpuDumpEnvironment(
    const std::string& dump_dir) {
  return {
      {"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1"},
      // The host process's own core file is not wanted.
      {"CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0"},
      // Lightweight: no memory contents. Never skip_abort.
      {"CUDA_COREDUMP_GENERATION_FLAGS",
       "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,"
       "skip_local_memory,skip_constbank_memory"},
      {"CUDA_COREDUMP_FILE", dump_dir + "/gpu.%p.cudacore"},
  };
}

int RunExplainingFaults(const std::string& program,
                        const std::vector<std::string>& argv, bool keep_dump) {
  for (const char* name : kDumpVariables) {
    if (const char* value = std::getenv(name)) {
      return Fail(1, absl::StrCat("--explain-faults arms the GPU core dump "
                                  "itself, and ",
                                  name, " is already set (to '", value,
                                  "'): unset it, or drop --explain-faults"));
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                   "/gpumemtrace-dump.XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return Fail(1, absl::StrCat("cannot make a folder for the GPU core dump (",
                                dir, "): ", std::strerror(errno)));
  }
  for (const auto& [name, value] : GpuDumpEnvironment(dir)) {
    setenv(name.c_str(), value.c_str(), 1);
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
  bool all_read = true;
  const std::vector<std::string> dumps = FilesIn(dir);
  for (const std::string& path : dumps) {
    if (!ExplainDump(path)) all_read = false;
  }
  if (keep_dump || !all_read) {
    for (const std::string& path : dumps) {
      std::fprintf(stderr,
                   "gpumemtrace: the GPU core dump is kept at %s; cuda-gdb "
                   "opens it: cuda-gdb -batch -ex 'target cudacore %s'\n",
                   path.c_str(), path.c_str());
    }
  } else {
    for (const std::string& path : dumps) unlink(path.c_str());
  }
  rmdir(dir.c_str());  // fails, harmlessly, while a kept dump is in it
  if (WIFSIGNALED(status)) {
    return EndAsSignal(WTERMSIG(status), 128 + WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace gmt::cli
