#include "lib/gpu_fault/gpu_exception.h"

namespace gmt::gpu_fault {
namespace {

struct ExceptionText {
  GpuException code;
  const char* name;
  const char* meaning;
  bool address;
};

constexpr ExceptionText kExceptions[] = {
    {GpuException::kNone, "No Exception", "no exception", false},
    {GpuException::kLaneIllegalAddress, "Lane Illegal Address",
     "a thread accessed an address outside any mapped memory", true},
    {GpuException::kLaneUserStackOverflow, "Lane User Stack Overflow",
     "a thread overflowed its call stack (deep recursion or large locals)",
     false},
    {GpuException::kDeviceHardwareStackOverflow,
     "Device Hardware Stack Overflow", "the device's hardware stack overflowed",
     false},
    {GpuException::kWarpIllegalInstruction, "Warp Illegal Instruction",
     "a warp executed an illegal instruction (often a trap or a corrupted "
     "function pointer)",
     false},
    {GpuException::kWarpOutOfRangeAddress, "Warp Out-of-range Address",
     "a shared or local memory access went outside its window", true},
    {GpuException::kWarpMisalignedAddress, "Warp Misaligned Address",
     "an access was not aligned to its size", true},
    {GpuException::kWarpInvalidAddressSpace, "Warp Invalid Address Space",
     "an address lies in no memory space the instruction may use (outside "
     "global, shared and local memory)",
     true},
    {GpuException::kWarpInvalidPc, "Warp Invalid PC",
     "a warp jumped to an address that is not code", false},
    {GpuException::kWarpHardwareStackOverflow, "Warp Hardware Stack Overflow",
     "a warp overflowed its hardware stack", false},
    {GpuException::kDeviceIllegalAddress, "Device Illegal Address",
     "the memory unit refused an access to an unmapped address", true},
    {GpuException::kLaneMisalignedAddress, "Lane Misaligned Address",
     "a thread's access was not aligned to its size", true},
    {GpuException::kWarpAssert, "Warp Assert", "a device-side assert failed",
     false},
    {GpuException::kLaneSyscallError, "Lane Syscall Error",
     "a device-side system call (malloc, printf) failed", false},
    {GpuException::kWarpIllegalAddress, "Warp Illegal Address",
     "a warp accessed an address outside any mapped memory", true},
    {GpuException::kLaneNonMigratableAtomSys, "Lane Nonmigratable Atomsys",
     "a system-scope atomic on memory that cannot migrate", true},
    {GpuException::kLaneInvalidAtomSys, "Lane Invalid Atomsys",
     "an invalid system-scope atomic", true},
    {GpuException::kClusterOutOfRangeAddress, "Cluster Out-of-range Address",
     "a distributed shared memory access went outside its cluster's window",
     true},
    {GpuException::kClusterBlockNotPresent, "Cluster Target Block Not Present",
     "a distributed shared memory access named a block not in the cluster",
     true},
    {GpuException::kWarpStackCanary, "Warp Stack Canary",
     "a thread's stack canary was overwritten (a local buffer overflow)",
     false},
    {GpuException::kWarpTensorMemoryAccessCheck,
     "Warp Tensor Memory Access Check", "an invalid tensor memory access",
     true},
    {GpuException::kWarpTensorMemoryLeak, "Warp Tensor Memory Leak",
     "a block exited with tensor memory still allocated", false},
    {GpuException::kWarpCallRequiresNewerDriver,
     "Warp Call Requires Newer Driver",
     "the kernel called a function this driver does not have", false},
};

const ExceptionText* Find(uint32_t code) {
  for (const ExceptionText& e : kExceptions) {
    if (static_cast<uint32_t>(e.code) == code) return &e;
  }
  return nullptr;
}

}  // namespace

const char* GpuExceptionName(uint32_t code) {
  if (const ExceptionText* e = Find(code)) return e->name;
  if (code == static_cast<uint32_t>(GpuException::kUnknown)) {
    return "Unknown Exception";
  }
  // A newer driver's code: a fixed name (the caller prints the number).
  return "Exception (code unknown to this build)";
}

absl::string_view GpuExceptionMeaning(uint32_t code) {
  if (const ExceptionText* e = Find(code)) return e->meaning;
  return "an exception this build does not know";
}

bool GpuExceptionIsAboutAnAddress(uint32_t code) {
  const ExceptionText* e = Find(code);
  return e != nullptr && e->address;
}

}  // namespace gmt::gpu_fault
