// LaunchArgs: one kernel launch as the program made it ("launch as
// launched"): the function, its grid and block, and where its arguments are.
// The launch shims and the CUPTI launch callback fill it from the call's own
// arguments and pass it on; nothing in it is copied, so it is only valid
// during the launch call.
#ifndef GMT_LIB_LAUNCH_LAUNCH_ARGS_H_
#define GMT_LIB_LAUNCH_LAUNCH_ARGS_H_

#include <cstdint>

namespace gmt {

// How the launch named its kernel: the driver's CUfunction (or a CUkernel
// passed as one, which CUDA 12 accepts), or the runtime's `func` (a host stub,
// or a cudaKernel_t). Each is asked for its parameters differently.
enum class KernelHandleKind : uint8_t { kDriver, kRuntime };

struct LaunchDims {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t shared_bytes = 0;
};

struct LaunchArgs {
  KernelHandleKind kind = KernelHandleKind::kDriver;
  const void* function = nullptr;
  LaunchDims dims;
  // One pointer per parameter, to its value (kernelParams / args).
  void* const* params = nullptr;
  // The driver's `extra`: key/value pairs ending with 0, the parameter buffer
  // packed by the caller (kLaunchParamBufferPointer / ...Size).
  void* const* extra = nullptr;
};

// The keys of `extra` (cuda.h: CU_LAUNCH_PARAM_*, values of the driver ABI).
inline constexpr uintptr_t kLaunchParamEnd = 0x00;
inline constexpr uintptr_t kLaunchParamBufferPointer = 0x01;
inline constexpr uintptr_t kLaunchParamBufferSize = 0x02;

}  // namespace gmt

#endif  // GMT_LIB_LAUNCH_LAUNCH_ARGS_H_
