#include "lib/guard/guard_layout.h"

#include <unistd.h>

#include <algorithm>

namespace gmt {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
uint64_t CeilDiv(uint64_t v, uint64_t d) { return (v + d - 1) / d; }
constexpr uint64_t kAlign = 256;
// cudaMalloc maps a block over this size in 2 MiB pages of its own; smaller
// ones share pages in 512-byte granules (measured on the H200, driver 580).
constexpr uint64_t kSharedPagesUpTo = uint64_t{1} << 20;
// The GPU's page for peer-to-peer pinning (nvidia_p2p_get_pages takes
// addresses on 64 KiB boundaries).
constexpr uint64_t kGpuPage = uint64_t{64} << 10;

}  // namespace

GuardFamily FamilyOf(Api api) {
  switch (api) {
    case Api::kCudaMalloc:
    case Api::kCuMemAlloc:
      return GuardFamily::kDevice;
    case Api::kCudaMallocPitch:
    case Api::kCudaMalloc3D:
    case Api::kCuMemAllocPitch:
      return GuardFamily::kPitched;
    case Api::kCudaMallocManaged:
    case Api::kCuMemAllocManaged:
      return GuardFamily::kManaged;
    case Api::kCudaMallocAsync:
    case Api::kCudaMallocFromPoolAsync:
    case Api::kCuMemAllocAsync:
    case Api::kCuMemAllocFromPoolAsync:
      return GuardFamily::kAsync;
    default:
      return GuardFamily::kNone;
  }
}

GuardPolicy GuardPolicy::FromOptions(const Options& o) {
  GuardPolicy p;
  p.enabled = o.enabled && o.guard;
  p.front = static_cast<uint64_t>(o.guard_front);
  p.tail_min = static_cast<uint64_t>(o.guard_tail_min);
  p.tail_max = std::max(p.tail_min, static_cast<uint64_t>(o.guard_tail_max));
  p.tail_ratio =
      static_cast<uint64_t>(std::max<int64_t>(1, o.guard_tail_ratio));
  p.skip = o.guard_skip;
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) p.host_page = static_cast<uint64_t>(page);
  return p;
}

bool GuardPolicy::Guards(Api api) const {
  if (!enabled) return false;
  GuardFamily f = FamilyOf(api);
  return f != GuardFamily::kNone && !skip.Has(f);
}

uint64_t CudaMallocFootprint(uint64_t bytes) {
  constexpr uint64_t kPage = uint64_t{2} << 20;
  constexpr uint64_t kGranule = 512;
  if (bytes > kSharedPagesUpTo)
    return bytes > UINT64_MAX - kPage ? bytes : RoundUp(bytes, kPage);
  return RoundUp(bytes, kGranule);
}

uint64_t CudaMallocMappedBytes(uint64_t bytes) {
  return bytes > kSharedPagesUpTo ? CudaMallocFootprint(bytes) : bytes;
}

uint64_t AddedFootprint(Api api, uint64_t user_bytes, uint64_t raw_bytes) {
  if (raw_bytes <= user_bytes) return 0;
  switch (FamilyOf(api)) {
    case GuardFamily::kDevice:
    case GuardFamily::kPitched: {
      const uint64_t raw = CudaMallocFootprint(raw_bytes);
      const uint64_t user = CudaMallocFootprint(user_bytes);
      return raw > user ? raw - user : 0;
    }
    default:
      // Pool blocks are carved from the pool's own reservation, managed
      // ones are paged on demand: no page rounding to model.
      return raw_bytes - user_bytes;
  }
}

uint64_t TailZoneBytes(const GuardPolicy& policy, uint64_t bytes) {
  uint64_t zone = RoundUp(bytes / policy.tail_ratio, kAlign);
  return std::clamp(zone, policy.tail_min, policy.tail_max);
}

GuardLayout PlanLinear(const GuardPolicy& policy, uint64_t bytes) {
  GuardLayout layout;
  // Without the tool a block over 1 MiB starts on a 2 MiB page, and a
  // program may need its start on a page: a dma-buf of it
  // (cuMemGetHandleForAddressRange) must begin on a host page, GPUDirect
  // pinning on a 64 KiB GPU page. Its raw block is over 1 MiB too, so whole
  // such pages in front keep the user's start on one (only the last
  // policy.front bytes of them are canaries: GuardManager::Arm). Smaller
  // blocks start on 512-byte granules, as CUDA places them.
  layout.front =
      bytes > kSharedPagesUpTo
          ? RoundUp(policy.front, std::max(policy.host_page, kGpuPage))
          : policy.front;
  // Slack to the next 256 bytes, then the zone: the raw end stays aligned.
  layout.raw_bytes = layout.front +
                     RoundUp(std::max<uint64_t>(bytes, 1), kAlign) +
                     RoundUp(TailZoneBytes(policy, bytes), kAlign);
  return layout;
}

uint64_t PlanExtraRows(const GuardPolicy& policy, uint64_t row_bytes_estimate,
                       uint64_t rows) {
  const uint64_t row = std::max<uint64_t>(row_bytes_estimate, 1);
  uint64_t bytes = 0;
  // A block whose size overflows is not one CUDA makes: left unguarded, so
  // CUDA refuses the program's own request.
  if (__builtin_mul_overflow(row, rows, &bytes)) return 0;
  const uint64_t zone = TailZoneBytes(policy, bytes);
  return CeilDiv(policy.front, row) + std::max<uint64_t>(CeilDiv(zone, row), 1);
}

uint64_t FrontRows(const GuardPolicy& policy, uint64_t pitch,
                   uint64_t extra_rows) {
  if (pitch == 0 || extra_rows == 0) return 0;
  // Keep at least one row of tail: an overrun past the last row is the
  // common pitched bug.
  return std::min(CeilDiv(policy.front, pitch), extra_rows - 1);
}

}  // namespace gmt
