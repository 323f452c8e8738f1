#include "lib/gpu_fault/gpu_dump_arming.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gmt::gpu_fault {
namespace {

ArmedGpuDump* g_armed = nullptr;  // set once, at load; never freed

}  // namespace

const char* UserGpuDumpVariable() {
  for (const char* name : kGpuDumpVariables) {
    if (std::getenv(name) != nullptr) return name;
  }
  return nullptr;
}

bool GpuDumpArmed() {
  const char* on = std::getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  return on != nullptr && on[0] != '\0' && std::strcmp(on, "0") != 0;
}

std::vector<std::pair<std::string, std::string>> GpuDumpEnvironment(
    const std::string& dir) {
  return {
      {"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1"},
      // The host process's own core file is not wanted.
      {"CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0"},
      // Lightweight: no memory contents. Never skip_abort.
      {"CUDA_COREDUMP_GENERATION_FLAGS",
       "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,"
       "skip_local_memory,skip_constbank_memory"},
      {"CUDA_COREDUMP_FILE", dir + "/gpu.%p.cudacore"},
  };
}

std::string GpuDumpPath(const std::string& dir, pid_t pid) {
  return absl::StrCat(dir, "/gpu.", pid, ".cudacore");
}

absl::StatusOr<ArmedGpuDump> ArmGpuDump(const std::string& dir) {
  // Armed already, exactly as here, by the tool in a parent process: the
  // dump of this one goes to the same folder and is read here too.
  if (const char* file = std::getenv("CUDA_COREDUMP_FILE")) {
    constexpr absl::string_view kName = "/gpu.%p.cudacore";
    if (absl::EndsWith(file, kName)) {
      const std::string armed_dir(file, std::strlen(file) - kName.size());
      bool armed_already = true;
      for (const auto& [name, value] : GpuDumpEnvironment(armed_dir)) {
        const char* set = std::getenv(name.c_str());
        armed_already = armed_already && set != nullptr && value == set;
      }
      if (armed_already) return ArmedGpuDump{armed_dir, false, getpid()};
    }
  }
  if (const char* name = UserGpuDumpVariable()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name,
                     " is set already: the GPU core dump is left as it was "
                     "asked for, and explain_faults arms nothing"));
  }
  ArmedGpuDump armed;
  armed.pid = getpid();
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    armed.dir = absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                             "/gpumemtrace-dump.XXXXXX");
    if (mkdtemp(armed.dir.data()) == nullptr) {
      return absl::InternalError(
          absl::StrCat("cannot make a folder for the GPU core dump (",
                       armed.dir, "): ", std::strerror(errno)));
    }
    armed.own_dir = true;
  } else {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_dump_dir=", dir,
                       " is not a folder: explain_faults arms "
                       "nothing"));
    }
    armed.dir = dir;
  }
  for (const auto& [name, value] : GpuDumpEnvironment(armed.dir)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  return armed;
}

const ArmedGpuDump* ArmedGpuDumpOfProcess() { return g_armed; }

absl::Status ArmGpuDumpForProcess(const std::string& dir) {
  if (g_armed != nullptr) return absl::OkStatus();
  absl::StatusOr<ArmedGpuDump> armed = ArmGpuDump(dir);
  if (!armed.ok()) return armed.status();
  g_armed = new ArmedGpuDump(*std::move(armed));
  return absl::OkStatus();
}

void DisarmGpuDumpOfProcess() {
  // Only by the process that made it: a forked child's exit must not take
  // the folder its parent's driver would dump into.
  if (g_armed != nullptr && g_armed->own_dir && g_armed->pid == getpid()) {
    rmdir(g_armed->dir.c_str());
  }
}

}  // namespace gmt::gpu_fault
