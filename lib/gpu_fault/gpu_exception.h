// The exceptions a GPU core dump records per lane and per SM (CUDA's
// CUDBGException_t codes, public in cuda-gdb's cudadebugger.h), with the name
// cuda-gdb prints and what each means for the program.
#ifndef GMT_LIB_GPU_FAULT_GPU_EXCEPTION_H_
#define GMT_LIB_GPU_FAULT_GPU_EXCEPTION_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace gmt::gpu_fault {

enum class GpuException : uint32_t {
  kNone = 0,
  kLaneIllegalAddress = 1,
  kLaneUserStackOverflow = 2,
  kDeviceHardwareStackOverflow = 3,
  kWarpIllegalInstruction = 4,
  kWarpOutOfRangeAddress = 5,
  kWarpMisalignedAddress = 6,
  kWarpInvalidAddressSpace = 7,
  kWarpInvalidPc = 8,
  kWarpHardwareStackOverflow = 9,
  kDeviceIllegalAddress = 10,
  kLaneMisalignedAddress = 11,
  kWarpAssert = 12,
  kLaneSyscallError = 13,
  kWarpIllegalAddress = 14,
  kLaneNonMigratableAtomSys = 15,
  kLaneInvalidAtomSys = 16,
  kClusterOutOfRangeAddress = 17,
  kClusterBlockNotPresent = 18,
  kWarpStackCanary = 19,
  kWarpTensorMemoryAccessCheck = 20,
  kWarpTensorMemoryLeak = 21,
  kWarpCallRequiresNewerDriver = 22,
  kUnknown = 0xffffffffu,
};

// The name cuda-gdb prints ("Warp Illegal Address"); a fixed "unknown" name
// for a code this build does not know (a newer driver's).
const char* GpuExceptionName(uint32_t code);

// One line in plain words: what the program did to raise it.
absl::string_view GpuExceptionMeaning(uint32_t code);

// Whether the exception is about a memory address, so that the instruction's
// address operand is worth decoding.
bool GpuExceptionIsAboutAnAddress(uint32_t code);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_GPU_EXCEPTION_H_
