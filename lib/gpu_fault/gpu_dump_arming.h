// Arming the driver's GPU core dump for this process, and finding the dump it
// wrote: what the explain_faults option and `gpumemtrace run
// --explain-faults` share.
//
// The driver reads its CUDA_COREDUMP_* variables when it initializes (cuInit),
// so they are set at the library's load, before the program's first CUDA
// call. The dump is the lightweight one (no memory contents: the five skip_*
// flags, about 370 KB, well under a second on an H200). Never skip_abort: the
// driver would then swallow the fault, and every later call would return
// success on garbage (measured on the H200). The driver aborts the program
// after writing the dump; the crash report (its SIGABRT) reads it.
#ifndef GMT_LIB_GPU_FAULT_GPU_DUMP_ARMING_H_
#define GMT_LIB_GPU_FAULT_GPU_DUMP_ARMING_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gmt::gpu_fault {

// The variables that decide whether and where the driver dumps. A user's own
// setting of any of them is left alone: the tool then arms nothing.
inline constexpr const char* kGpuDumpVariables[] = {
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_GENERATION_FLAGS",
    "CUDA_COREDUMP_FILE", "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP"};

// The first of kGpuDumpVariables set in this environment, or nullptr.
const char* UserGpuDumpVariable();

// Whether the driver will write a GPU core dump at a GPU exception in this
// process: CUDA_ENABLE_COREDUMP_ON_EXCEPTION set to something other than 0,
// by the user or by ArmGpuDump. Two things of the tool's keep the driver from
// writing it, measured on the H200 (driver 580): a CUPTI subscriber ("not
// supported with other developer tools") and NVML in the process (the driver
// says "not supported with late attach", writes nothing, and the faulting
// program spins in its next synchronization). Where this is true the tool
// uses neither before its exit report. (A program that arms the dump through
// cuCoredumpSetAttributeGlobal is not seen.)
bool GpuDumpArmed();

// The environment that arms a lightweight dump written into `dir` as
// gpu.<pid>.cudacore: (name, value) pairs.
std::vector<std::pair<std::string, std::string>> GpuDumpEnvironment(
    const std::string& dir);

// Where the driver puts the dump of process `pid` armed into `dir`.
std::string GpuDumpPath(const std::string& dir, pid_t pid);

struct ArmedGpuDump {
  std::string dir;
  bool own_dir = false;  // made here (mkdtemp): removed when done
  pid_t pid = 0;         // the process that armed it
};

// Arms the dump into `dir`, or into a private folder under $TMPDIR (/tmp)
// when `dir` is empty. Where the environment holds exactly what
// GpuDumpEnvironment sets for some folder (the tool armed it in a parent
// process: a traced Python's subprocesses inherit its environment), that is
// taken as armed, in that folder. An error (a CUDA_COREDUMP_* variable set
// otherwise, a folder that cannot be made or is not one) arms nothing.
absl::StatusOr<ArmedGpuDump> ArmGpuDump(const std::string& dir);

// The dump armed in this process by ArmGpuDumpForProcess, or nullptr.
const ArmedGpuDump* ArmedGpuDumpOfProcess();
// Arms it once for the process (the library's load), keeping what it armed
// for the crash report; an error is returned for the caller to say.
absl::Status ArmGpuDumpForProcess(const std::string& dir);
// Removes the folder the process armed into, if it made it and it is empty
// (at exit).
void DisarmGpuDumpOfProcess();

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_GPU_DUMP_ARMING_H_
