// Calls that take a block by its start, translated to the raw block behind a
// guarded one (docs/transparency.md, class "allocation start"), and the
// pools whose blocks the tool must leave unguarded.
//
//   cudaStreamAttachMemAsync, cuStreamAttachMemAsync   a managed allocation's
//       start, with length 0 or the allocation's size ("the whole
//       allocation"): the raw block's start and size, so the redzones move
//       with the program's bytes;
//   cudaMemPoolExportPointer, cuMemPoolExportPointer   the raw start: CUDA
//       answers as it would for the program's block (a block of a pool that
//       can be exported is never guarded in the first place; see below);
//   cudaMemPoolCreate / cuMemPoolCreate (+ Destroy), cudaDeviceSetMemPool /
//       cuDeviceSetMemPool                              noted: blocks of a pool
//       with export handle types may be imported by a process the tool does
//       not run in, which reads them from their raw start, so they get no
//       redzones (interpose/alloc_shims.h, GuardedAlloc);
//   cudaMemPoolImportFromShareableHandle / cuMemPoolImportFromShareableHandle
//                                                     forwarded after the
//       engine stops CUPTI's memory records (Engine::BeforeMemPoolImport):
//       with them on, CUPTI 13.0 crashes freeing a pointer of the imported
//       pool.
//
// Any other pointer (interior, unguarded, untracked) and every nested call
// (cudart's own driver call) go to CUDA untouched: CUDA judges them as it
// would without the tool.
#include "interpose/alloc_shims.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::InterceptScope;

namespace {

// The pointer and length CUDA gets for an attach of [address, +length):
// the raw block when `address` is a guarded block's start and `length` means
// the whole allocation.
void ToWholeRawBlock(uint64_t* address, uint64_t* length) {
  std::optional<gmt::BlockView> view = gmt::Engine::Get().FindBlock(*address);
  if (!view || !view->guarded || view->user_address != *address) return;
  if (*length != 0 && *length != view->user_bytes) return;
  *address = view->raw_address;
  if (*length != 0) *length = view->raw_bytes;
}

// The raw start behind a guarded block's start; any other address as is.
uint64_t ToRawStart(uint64_t address) {
  std::optional<gmt::BlockView> view = gmt::Engine::Get().FindBlock(address);
  if (!view || !view->guarded || view->user_address != address) return address;
  return view->raw_address;
}

template <typename Real>
cudaError_t AttachRuntime(Real real, cudaStream_t stream, void* ptr,
                          size_t length, unsigned int flags) {
  InterceptScope scope;
  if (!scope.Recording()) return real(stream, ptr, length, flags);
  uint64_t address = gmt::AddressOf(ptr);
  uint64_t bytes = length;
  ToWholeRawBlock(&address, &bytes);
  return real(stream, gmt::FromAddress<void*>(address), bytes, flags);
}

template <typename Real>
CUresult AttachDriver(Real real, CUstream stream, CUdeviceptr ptr,
                      size_t length, unsigned int flags) {
  InterceptScope scope;
  if (!scope.Recording()) return real(stream, ptr, length, flags);
  uint64_t address = ptr;
  uint64_t bytes = length;
  ToWholeRawBlock(&address, &bytes);
  return real(stream, address, bytes, flags);
}

}  // namespace

cudaError_t Shim_cudaStreamAttachMemAsync(cudaStream_t stream, void* ptr,
                                          size_t length, unsigned int flags) {
  auto real = gmt::g_real_cudaStreamAttachMemAsync.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return AttachRuntime(real, stream, ptr, length, flags);
}

cudaError_t Shim_cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void* ptr,
                                               size_t length,
                                               unsigned int flags) {
  auto real = gmt::g_real_cudaStreamAttachMemAsync_ptsz.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return AttachRuntime(real, stream, ptr, length, flags);
}

CUresult Shim_cuStreamAttachMemAsync(CUstream stream, CUdeviceptr ptr,
                                     size_t length, unsigned int flags) {
  auto real = gmt::g_real_cuStreamAttachMemAsync.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AttachDriver(real, stream, ptr, length, flags);
}

CUresult Shim_cuStreamAttachMemAsync_ptsz(CUstream stream, CUdeviceptr ptr,
                                          size_t length, unsigned int flags) {
  auto real = gmt::g_real_cuStreamAttachMemAsync_ptsz.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AttachDriver(real, stream, ptr, length, flags);
}

cudaError_t Shim_cudaMemPoolExportPointer(cudaMemPoolPtrExportData* data,
                                          void* ptr) {
  auto real = gmt::g_real_cudaMemPoolExportPointer.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (!scope.Recording()) return real(data, ptr);
  return real(data, gmt::FromAddress<void*>(ToRawStart(gmt::AddressOf(ptr))));
}

CUresult Shim_cuMemPoolExportPointer(CUmemPoolPtrExportData* data,
                                     CUdeviceptr ptr) {
  auto real = gmt::g_real_cuMemPoolExportPointer.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (!scope.Recording()) return real(data, ptr);
  return real(data, ToRawStart(ptr));
}

cudaError_t Shim_cudaMemPoolCreate(cudaMemPool_t* pool,
                                   const cudaMemPoolProps* props) {
  auto real = gmt::g_real_cudaMemPoolCreate.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(pool, props);
  if (scope.Recording() && result == cudaSuccess && pool != nullptr &&
      props != nullptr) {
    gmt::Engine::Get().OnMemPoolCreated(
        gmt::AddressOf(*pool), props->handleTypes != cudaMemHandleTypeNone);
  }
  return result;
}

CUresult Shim_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  auto real = gmt::g_real_cuMemPoolCreate.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(pool, props);
  if (scope.Recording() && result == CUDA_SUCCESS && pool != nullptr &&
      props != nullptr) {
    gmt::Engine::Get().OnMemPoolCreated(
        gmt::AddressOf(*pool), props->handleTypes != CU_MEM_HANDLE_TYPE_NONE);
  }
  return result;
}

cudaError_t Shim_cudaMemPoolDestroy(cudaMemPool_t pool) {
  auto real = gmt::g_real_cudaMemPoolDestroy.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(pool);
  if (scope.Recording() && result == cudaSuccess) {
    gmt::Engine::Get().OnMemPoolDestroyed(gmt::AddressOf(pool));
  }
  return result;
}

CUresult Shim_cuMemPoolDestroy(CUmemoryPool pool) {
  auto real = gmt::g_real_cuMemPoolDestroy.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(pool);
  if (scope.Recording() && result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnMemPoolDestroyed(gmt::AddressOf(pool));
  }
  return result;
}

cudaError_t Shim_cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  auto real = gmt::g_real_cudaDeviceSetMemPool.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(device, pool);
  if (scope.Recording() && result == cudaSuccess) {
    gmt::Engine::Get().OnDeviceMemPool(device, gmt::AddressOf(pool));
  }
  return result;
}

CUresult Shim_cuDeviceSetMemPool(CUdevice device, CUmemoryPool pool) {
  auto real = gmt::g_real_cuDeviceSetMemPool.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(device, pool);
  if (scope.Recording() && result == CUDA_SUCCESS) {
    gmt::Engine::Get().OnDeviceMemPool(static_cast<int>(device),
                                       gmt::AddressOf(pool));
  }
  return result;
}

cudaError_t Shim_cudaMemPoolImportFromShareableHandle(
    cudaMemPool_t* pool, void* handle, cudaMemAllocationHandleType type,
    unsigned int flags) {
  auto real = gmt::g_real_cudaMemPoolImportFromShareableHandle.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  if (scope.Recording()) gmt::Engine::Get().BeforeMemPoolImport();
  return real(pool, handle, type, flags);
}

CUresult Shim_cuMemPoolImportFromShareableHandle(CUmemoryPool* pool,
                                                 void* handle,
                                                 CUmemAllocationHandleType type,
                                                 unsigned long long flags) {
  auto real = gmt::g_real_cuMemPoolImportFromShareableHandle.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  if (scope.Recording()) gmt::Engine::Get().BeforeMemPoolImport();
  return real(pool, handle, type, flags);
}
