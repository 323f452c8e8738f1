#include "lib/gpu_fault/gpu_exception.h"

namespace gmt::gpu_fault {
namespace {

struct ExceptionText {
  GpuException code;
  bool address;
  const char* name;
  const char* meaning;
};

constexpr ExceptionText kExceptions[] = {
    {GpuException::kNone, false, "No Exception", "no exception"},
    {GpuException::kLaneIllegalAddress, true, "Lane Illegal Address",
     "a thread accessed an address outside any mapped memory"},
    {GpuException::kLaneUserStackOverflow, false, "Lane User Stack Overflow",
     "a thread overflowed its call stack (deep recursion or large locals)"},
    {GpuException::kDeviceHardwareStackOverflow, false,
     "Device Hardware Stack Overflow",
     "the device's hardware stack overflowed"},
    {GpuException::kWarpIllegalInstruction, false, "Warp Illegal Instruction",
     "a warp executed an illegal instruction (often a trap or a corrupted "
     "function pointer)"},
    {GpuException::kWarpOutOfRangeAddress, true, "Warp Out-of-range Address",
     "a shared or local memory access went outside its window"},
    {GpuException::kWarpMisalignedAddress, true, "Warp Misaligned Address",
     "an access was not aligned to its size"},
    {GpuException::kWarpInvalidAddressSpace, true, "Warp Invalid Address Space",
     "an address lies in no memory space the instruction may use (outside "
     "global, shared and local memory)"},
    {GpuException::kWarpInvalidPc, false, "Warp Invalid PC",
     "a warp jumped to an address that is not code"},
    {GpuException::kWarpHardwareStackOverflow, false,
     "Warp Hardware Stack Overflow", "a warp overflowed its hardware stack"},
    {GpuException::kDeviceIllegalAddress, true, "Device Illegal Address",
     "the memory unit refused an access to an unmapped address"},
    {GpuException::kLaneMisalignedAddress, true, "Lane Misaligned Address",
     "a thread's access was not aligned to its size"},
    {GpuException::kWarpAssert, false, "Warp Assert",
     "a device-side assert failed"},
    {GpuException::kLaneSyscallError, false, "Lane Syscall Error",
     "a device-side system call (malloc, printf) failed"},
    {GpuException::kWarpIllegalAddress, true, "Warp Illegal Address",
     "a warp accessed an address outside any mapped memory"},
    {GpuException::kLaneNonMigratableAtomSys, true,
     "Lane Nonmigratable Atomsys",
     "a system-scope atomic on memory that cannot migrate"},
    {GpuException::kLaneInvalidAtomSys, true, "Lane Invalid Atomsys",
     "an invalid system-scope atomic"},
    {GpuException::kClusterOutOfRangeAddress, true,
     "Cluster Out-of-range Address",
     "a distributed shared memory access went outside its cluster's window"},
    {GpuException::kClusterBlockNotPresent, true,
     "Cluster Target Block Not Present",
     "a distributed shared memory access named a block not in the cluster"},
    {GpuException::kWarpStackCanary, false, "Warp Stack Canary",
     "a thread's stack canary was overwritten (a local buffer overflow)"},
    {GpuException::kWarpTensorMemoryAccessCheck, true,
     "Warp Tensor Memory Access Check", "an invalid tensor memory access"},
    {GpuException::kWarpTensorMemoryLeak, false, "Warp Tensor Memory Leak",
     "a block exited with tensor memory still allocated"},
    {GpuException::kWarpCallRequiresNewerDriver, false,
     "Warp Call Requires Newer Driver",
     "the kernel called a function this driver does not have"},
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
