// Calls about a range of managed or device memory that is not a copy: advice,
// prefetch, range attributes, a pointer's settable attribute and a dma-buf of
// a range (docs/transparency.md, class a). CUDA takes any range inside one
// allocation and refuses one that leaves it (measured: invalid value), which
// a redzone would hide: each range is checked against the user's bytes first
// (device_ranges.h) and refused as CUDA refuses it; otherwise forwarded. A
// dma-buf is judged by the pages CUDA mapped for the allocation instead.
//
// Count 0 is left to CUDA (it refuses it for advice, prefetch and range
// attributes); so is memory the tool does not track.
#include "interpose/device_ranges.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

namespace {

gmt::OperandRanges One(uint64_t address, uint64_t bytes) {
  return {{address, bytes}, {}};
}

// A driver call over [address, address + bytes).
template <auto& kReal, typename... Args>
CUresult DriverRange(const char* api, CUdeviceptr address, size_t bytes,
                     Args... args) {
  return gmt::CheckedDriverCall<kReal>(
      api, [&] { return One(address, bytes); }, args...);
}

// A runtime call over [address, address + bytes).
template <auto& kReal, typename... Args>
cudaError_t RuntimeRange(const char* api, const void* address, size_t bytes,
                         Args... args) {
  return gmt::CheckedRuntimeCall<kReal>(
      api, [&] { return One(gmt::AddressOf(address), bytes); }, args...);
}

}  // namespace

// ---- Advice and prefetch ----------------------------------------------------

CUresult Shim_cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice,
                             CUmemLocation location) {
  return DriverRange<gmt::g_real_cuMemAdvise_v2>("cuMemAdvise", ptr, count, ptr,
                                                 count, advice, location);
}

CUresult Shim_cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count,
                                    CUmemLocation location, unsigned int flags,
                                    CUstream stream) {
  return DriverRange<gmt::g_real_cuMemPrefetchAsync_v2>(
      "cuMemPrefetchAsync", ptr, count, ptr, count, location, flags, stream);
}

CUresult Shim_cuMemPrefetchAsync_v2_ptsz(CUdeviceptr ptr, size_t count,
                                         CUmemLocation location,
                                         unsigned int flags, CUstream stream) {
  return DriverRange<gmt::g_real_cuMemPrefetchAsync_v2_ptsz>(
      "cuMemPrefetchAsync", ptr, count, ptr, count, location, flags, stream);
}

cudaError_t Shim_cudaMemAdvise(const void* ptr, size_t count,
                               cudaMemoryAdvise advice,
                               cudaMemLocation location) {
  return RuntimeRange<gmt::g_real_cudaMemAdvise>("cudaMemAdvise", ptr, count,
                                                 ptr, count, advice, location);
}

cudaError_t Shim_cudaMemPrefetchAsync(const void* ptr, size_t count,
                                      cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream) {
  return RuntimeRange<gmt::g_real_cudaMemPrefetchAsync>(
      "cudaMemPrefetchAsync", ptr, count, ptr, count, location, flags, stream);
}

cudaError_t Shim_cudaMemPrefetchAsync_ptsz(const void* ptr, size_t count,
                                           cudaMemLocation location,
                                           unsigned int flags,
                                           cudaStream_t stream) {
  return RuntimeRange<gmt::g_real_cudaMemPrefetchAsync_ptsz>(
      "cudaMemPrefetchAsync", ptr, count, ptr, count, location, flags, stream);
}

// ---- Range attributes: answered per page, so CUDA's answers stand -----------

CUresult Shim_cuMemRangeGetAttribute(void* data, size_t data_size,
                                     CUmem_range_attribute attribute,
                                     CUdeviceptr ptr, size_t count) {
  return DriverRange<gmt::g_real_cuMemRangeGetAttribute>(
      "cuMemRangeGetAttribute", ptr, count, data, data_size, attribute, ptr,
      count);
}

CUresult Shim_cuMemRangeGetAttributes(void** data, size_t* data_sizes,
                                      CUmem_range_attribute* attributes,
                                      size_t num_attributes, CUdeviceptr ptr,
                                      size_t count) {
  return DriverRange<gmt::g_real_cuMemRangeGetAttributes>(
      "cuMemRangeGetAttributes", ptr, count, data, data_sizes, attributes,
      num_attributes, ptr, count);
}

cudaError_t Shim_cudaMemRangeGetAttribute(void* data, size_t data_size,
                                          cudaMemRangeAttribute attribute,
                                          const void* ptr, size_t count) {
  return RuntimeRange<gmt::g_real_cudaMemRangeGetAttribute>(
      "cudaMemRangeGetAttribute", ptr, count, data, data_size, attribute, ptr,
      count);
}

cudaError_t Shim_cudaMemRangeGetAttributes(void** data, size_t* data_sizes,
                                           cudaMemRangeAttribute* attributes,
                                           size_t num_attributes,
                                           const void* ptr, size_t count) {
  return RuntimeRange<gmt::g_real_cudaMemRangeGetAttributes>(
      "cudaMemRangeGetAttributes", ptr, count, data, data_sizes, attributes,
      num_attributes, ptr, count);
}

// ---- cuPointerSetAttribute --------------------------------------------------
// SYNC_MEMOPS is set on the allocation holding any address of it. A redzone
// address is, to the program, no allocation: refused as CUDA refuses an
// address it does not know (invalid value), as cuPointerGetAttribute is.

CUresult Shim_cuPointerSetAttribute(const void* value,
                                    CUpointer_attribute attribute,
                                    CUdeviceptr ptr) {
  auto real = gmt::g_real_cuPointerSetAttribute.Get();
  return gmt::ForwardDriverUnlessRejected(
      "cuPointerSetAttribute", real,
      [&](gmt::Engine& engine) { return gmt::InRedzone(engine, ptr); },
      [&] {
        const CUresult result = real(value, attribute, ptr);
        // SYNC_MEMOPS stays with the allocation's memory: never served to
        // another allocation, which CUDA would give it unset.
        if (result == CUDA_SUCCESS) gmt::Engine::Get().NoteBlockShared(ptr);
        return result;
      });
}

// ---- cuMemGetHandleForAddressRange ------------------------------------------
// A dma-buf of [ptr, ptr + size), page-aligned, inside the pages CUDA mapped
// for the allocation (which may reach past its last byte): past them it is
// refused as CUDA refuses it (Engine::CheckExportRange). Page alignment
// itself is CUDA's to judge.

CUresult Shim_cuMemGetHandleForAddressRange(void* handle, CUdeviceptr ptr,
                                            size_t size,
                                            CUmemRangeHandleType type,
                                            unsigned long long flags) {
  auto real = gmt::g_real_cuMemGetHandleForAddressRange.Get();
  return gmt::ForwardDriverUnlessRejected(
      "cuMemGetHandleForAddressRange", real,
      [&](gmt::Engine& engine) {
        return engine.CheckExportRange("cuMemGetHandleForAddressRange", ptr,
                                       size) == gmt::AccessVerdict::kReject;
      },
      [&] {
        const CUresult result = real(handle, ptr, size, type, flags);
        if (result != CUDA_SUCCESS) {
          gmt::Engine::Get().NoteExportRefused(ptr);
        } else {
          // A dma-buf outlives the program's free of the block.
          gmt::Engine::Get().NoteBlockShared(ptr);
        }
        return result;
      });
}
