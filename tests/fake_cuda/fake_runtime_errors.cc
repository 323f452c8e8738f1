// Fake runtime: error names and strings, and driver entry points
// (cudaGetDriverEntryPoint*, which forward to the driver's cuGetProcAddress).
#include "tests/fake_cuda/fake_runtime.h"

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError",
     "initialization error"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice",
     "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice",
     "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized",
     "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound",
     "named symbol not found"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorHostMemoryAlreadyRegistered,
     "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure",
     "unspecified launch failure"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Find(cudaError_t code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

extern "C" FAKE_CUDART_VISIBILITY const char* Fake_cudaGetErrorName(
    cudaError_t error) __asm__("cudaGetErrorName");
extern "C" const char* Fake_cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = Find(error);
  return e ? e->name : "unrecognized error code";
}

extern "C" FAKE_CUDART_VISIBILITY const char* Fake_cudaGetErrorString(
    cudaError_t error) __asm__("cudaGetErrorString");
extern "C" const char* Fake_cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = Find(error);
  return e ? e->text : "unrecognized error code";
}

namespace {

// Forwards to the driver's cuGetProcAddress (the one the runtime itself got
// through cuGetProcAddress, so a tool hooking it sees these lookups too).
cudaError_t EntryPoint(const char* symbol, void** fn, unsigned int version,
                       unsigned long long flags,
                       cudaDriverEntryPointQueryResult* status) {
  const fake_cudart::DriverApi* d = fake_cudart::Driver();
  if (d == nullptr) return fake_cudart::Return(cudaErrorInsufficientDriver);
  if (symbol == nullptr || fn == nullptr) {
    return fake_cudart::Return(cudaErrorInvalidValue);
  }
  CUdriverProcAddressQueryResult cu_status =
      CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = d->get_proc_address(symbol, fn, static_cast<int>(version), flags,
                                   &cu_status);
  if (status != nullptr) {
    *status = static_cast<cudaDriverEntryPointQueryResult>(cu_status);
  }
  return fake_cudart::Return(r);
}

// The _ptsz flavours default to the per-thread stream variants.
unsigned long long PerThread(unsigned long long flags) {
  constexpr unsigned long long kStreamBits =
      cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream;
  return (flags & kStreamBits) == 0 ? flags | cudaEnablePerThreadDefaultStream
                                    : flags;
}

}  // namespace

FAKE_CUDART_API(cudaGetDriverEntryPoint,
                (const char* symbol, void** fn, unsigned long long flags,
                 cudaDriverEntryPointQueryResult* status)) {
  return EntryPoint(symbol, fn, fake_cudart::kRuntimeVersion, flags, status);
}

FAKE_CUDART_API(cudaGetDriverEntryPoint_ptsz,
                (const char* symbol, void** fn, unsigned long long flags,
                 cudaDriverEntryPointQueryResult* status)) {
  return EntryPoint(symbol, fn, fake_cudart::kRuntimeVersion, PerThread(flags),
                    status);
}

FAKE_CUDART_API(cudaGetDriverEntryPointByVersion,
                (const char* symbol, void** fn, unsigned int version,
                 unsigned long long flags,
                 cudaDriverEntryPointQueryResult* status)) {
  return EntryPoint(symbol, fn, version, flags, status);
}

FAKE_CUDART_API(cudaGetDriverEntryPointByVersion_ptsz,
                (const char* symbol, void** fn, unsigned int version,
                 unsigned long long flags,
                 cudaDriverEntryPointQueryResult* status)) {
  return EntryPoint(symbol, fn, version, PerThread(flags), status);
}
