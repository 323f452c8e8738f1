// Sizes the program can query that the tool's own memory would change,
// answered as without the tool (docs/transparency.md, class "sizes"):
//
//   cudaMemGetInfo, cuMemGetInfo   free memory, with the device memory the
//                                  tool holds that the program never asked
//                                  for added back (the redzones of live
//                                  blocks, the quarantine; never more than
//                                  the total). A request that fits that view
//                                  fits the card: when redzones do not fit,
//                                  the tool gives the quarantine back and
//                                  allocates the block unguarded.
//   cudaMemPoolGetAttribute,       USED_MEM_CURRENT and USED_MEM_HIGH of a
//   cuMemPoolGetAttribute          pool without the redzones of its guarded
//                                  blocks and the blocks the tool holds in
//                                  quarantine (CUDA counts both as used).
//                                  The current figure is exact; the high
//                                  watermark has today's hidden bytes taken
//                                  off, exact while the peak is now, never
//                                  below the current figure. RESERVED_* are
//                                  CUDA's: the pool may have grown by one
//                                  more step for the redzones.
//
// Nested calls (cudart's own) and untracked processes are forwarded as is.
#include <algorithm>
#include <cstring>

#include "interpose/alloc_shims.h"
#include "interpose/guard_shim_util.h"
#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

using gmt::InterceptScope;

namespace {

template <typename Size>
void AddHiddenBytes(Size* free_bytes, const Size* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return;
  const uint64_t hidden =
      gmt::Engine::Get().HiddenDeviceBytes(gmt::CurrentCallContext().device);
  const uint64_t free_now = static_cast<uint64_t>(*free_bytes);
  *free_bytes = static_cast<Size>(std::min<uint64_t>(
      free_now + hidden, static_cast<uint64_t>(*total_bytes)));
}

static_assert(static_cast<int>(cudaMemPoolAttrUsedMemCurrent) ==
                  CU_MEMPOOL_ATTR_USED_MEM_CURRENT &&
              static_cast<int>(cudaMemPoolAttrUsedMemHigh) ==
                  CU_MEMPOOL_ATTR_USED_MEM_HIGH);

// What the tool adds to `pool`'s used bytes: the guarded stream-ordered
// blocks whose pool it is (asked of CUDA, for the raw block).
uint64_t PoolHiddenBytes(CUmemoryPool pool) {
  auto pointer_attribute = gmt::g_real_cuPointerGetAttribute.Get();
  if (pointer_attribute == nullptr) return 0;
  uint64_t hidden = 0;
  for (const auto& charge : gmt::Engine::Get().StreamOrderedCharges()) {
    if (charge.pool != 0) {
      if (charge.pool == reinterpret_cast<uint64_t>(pool)) {
        hidden += charge.hidden_bytes;
      }
      continue;
    }
    CUmemoryPool owner = nullptr;
    if (pointer_attribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                          charge.raw) == CUDA_SUCCESS &&
        owner == pool) {
      hidden += charge.hidden_bytes;
    }
  }
  return hidden;
}

// `value` of `attribute` as without the tool; `current` reads the pool's
// USED_MEM_CURRENT, for the floor of the high watermark.
template <typename ReadCurrent>
void CorrectPoolUsed(CUmemoryPool pool, int attribute, void* value,
                     ReadCurrent&& current) {
  if (value == nullptr || (attribute != CU_MEMPOOL_ATTR_USED_MEM_CURRENT &&
                           attribute != CU_MEMPOOL_ATTR_USED_MEM_HIGH)) {
    return;
  }
  const uint64_t hidden = PoolHiddenBytes(pool);
  if (hidden == 0) return;
  uint64_t used = 0;
  std::memcpy(&used, value, sizeof(used));
  uint64_t corrected = used - std::min(used, hidden);
  if (attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
    uint64_t now = 0;
    if (current(&now))
      corrected = std::max(corrected, now - std::min(now, hidden));
  }
  std::memcpy(value, &corrected, sizeof(corrected));
}

}  // namespace

cudaError_t Shim_cudaMemPoolGetAttribute(cudaMemPool_t pool,
                                         cudaMemPoolAttr attribute,
                                         void* value) {
  auto real = gmt::g_real_cudaMemPoolGetAttribute.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(pool, attribute, value);
  if (result == cudaSuccess && scope.Recording()) {
    CorrectPoolUsed(reinterpret_cast<CUmemoryPool>(pool),
                    static_cast<int>(attribute), value, [&](uint64_t* now) {
                      return real(pool, cudaMemPoolAttrUsedMemCurrent, now) ==
                             cudaSuccess;
                    });
  }
  return result;
}

CUresult Shim_cuMemPoolGetAttribute(CUmemoryPool pool,
                                    CUmemPool_attribute attribute,
                                    void* value) {
  auto real = gmt::g_real_cuMemPoolGetAttribute.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(pool, attribute, value);
  if (result == CUDA_SUCCESS && scope.Recording()) {
    CorrectPoolUsed(
        pool, static_cast<int>(attribute), value, [&](uint64_t* now) {
          return real(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, now) ==
                 CUDA_SUCCESS;
        });
  }
  return result;
}

// A trim releases the pool's free reserved memory, and a reset of its
// USED_MEM_HIGH restarts the watermark from its use now: the stream-ordered
// blocks of that pool the tool holds (quarantine_async, and those kept for
// reuse) would be free without it, so they go back to CUDA first
// (Engine::ReleaseHeldPoolBlocks), then `call` is made.
namespace {

template <typename Call>
auto AfterReleasingHeldBlocks(const void* pool, bool release, Call&& call) {
  InterceptScope scope;
  if (release && scope.Recording() && pool != nullptr) {
    gmt::Engine::Get().ReleaseHeldPoolBlocks(reinterpret_cast<uint64_t>(pool));
  }
  return call();
}

}  // namespace

cudaError_t Shim_cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  auto real = gmt::g_real_cudaMemPoolTrimTo.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return AfterReleasingHeldBlocks(pool, true, [&] { return real(pool, keep); });
}

CUresult Shim_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  auto real = gmt::g_real_cuMemPoolTrimTo.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AfterReleasingHeldBlocks(pool, true, [&] { return real(pool, keep); });
}

cudaError_t Shim_cudaMemPoolSetAttribute(cudaMemPool_t pool,
                                         cudaMemPoolAttr attribute,
                                         void* value) {
  auto real = gmt::g_real_cudaMemPoolSetAttribute.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  return AfterReleasingHeldBlocks(pool, attribute == cudaMemPoolAttrUsedMemHigh,
                                  [&] { return real(pool, attribute, value); });
}

CUresult Shim_cuMemPoolSetAttribute(CUmemoryPool pool,
                                    CUmemPool_attribute attribute,
                                    void* value) {
  auto real = gmt::g_real_cuMemPoolSetAttribute.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AfterReleasingHeldBlocks(pool,
                                  attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                                  [&] { return real(pool, attribute, value); });
}

cudaError_t Shim_cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  auto real = gmt::g_real_cudaMemGetInfo.Get();
  if (real == nullptr) return gmt::NoRuntimeError();
  InterceptScope scope;
  const cudaError_t result = real(free_bytes, total_bytes);
  if (result == cudaSuccess && scope.Recording()) {
    AddHiddenBytes(free_bytes, total_bytes);
  }
  return result;
}

CUresult Shim_cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  auto real = gmt::g_real_cuMemGetInfo_v2.Get();
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  InterceptScope scope;
  const CUresult result = real(free_bytes, total_bytes);
  if (result == CUDA_SUCCESS && scope.Recording()) {
    AddHiddenBytes(free_bytes, total_bytes);
  }
  return result;
}
