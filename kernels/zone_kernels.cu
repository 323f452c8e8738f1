// The guard-zone kernels: fill zones with their pattern byte, and compare them
// with it (layout and entry points: zone_abi.h). Device code only; the host
// side is lib/platform/driver_device_ops.cc, which loads this file's fatbin
// with cuLibraryLoadData.
//
// Work split: the zone table is cut into chunks of GMT_ZONE_CHUNK_BYTES (each
// zone starts a new chunk). A block takes one chunk at a time (grid-stride, so
// any grid size is correct), finds the chunk's zone by binary search on
// chunk_begin, and sweeps the chunk with 16-byte accesses; the bytes before
// the first and after the last 16-byte boundary go byte by byte.
//
//   chunk:  [head 0..15 B | 16-byte vectors ........ | tail 0..15 B]
//            byte-wise       4 loads in flight/thread  byte-wise
//
// The check is a pure read stream, so the clean path is one OR of XORs per
// vector; only a vector with a changed byte takes the slow path (exact byte
// offsets and counts), and each thread publishes its tally for the chunk with
// a few atomics once, at the chunk's end.
//
// gmt_check_zones_inline (zone_abi.h) is the same compare over zones passed by
// value, answering in mapped host memory: its grid takes the zones as one run
// of 16-byte granules, 8 loads in flight per thread. gmt_check_zones_inline_
// small answers the same for a check of a few KiB, from compact code.
#include <stdint.h>

#include "kernels/zone_abi.h"

namespace {

constexpr unsigned kBlockThreads = 256;
// The host launches 4 blocks per SM (driver_device_ops.cc): keep the register
// count low enough for all of them to be resident.
constexpr unsigned kMinBlocksPerSm = 4;
// Independent 16-byte loads per thread per step: enough bytes in flight to
// cover DRAM latency at 4 blocks of 256 threads per SM.
constexpr unsigned kUnroll = 4;
constexpr uint64_t kChunk = GMT_ZONE_CHUNK_BYTES;

// The zone holding `chunk`: the last zone with chunk_begin <= chunk.
// Zero-length zones share chunk_begin with the zone after them, so "last" skips
// them. A block's chunks only grow, so the search starts at the zone of its
// previous chunk (`from`).
__device__ __forceinline__ uint64_t ZoneOfChunk(const GmtZone* zones,
                                                uint64_t from,
                                                uint64_t zone_count,
                                                uint64_t chunk) {
  uint64_t lo = from, hi = zone_count;  // the answer is in [lo, hi)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    const auto begin = __ldg(
        reinterpret_cast<const unsigned long long*>(&zones[mid].chunk_begin));
    if (begin <= chunk) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The byte range [lo, hi) of device addresses that `chunk` covers, or an
// empty range when the table does not give the chunk any bytes.
struct ChunkRange {
  uint64_t zone;
  uint64_t base;  // the zone's first byte: offsets are relative to it
  uint64_t lo;
  uint64_t hi;
  uint32_t pattern;  // the pattern byte repeated 4 times
};

__device__ __forceinline__ ChunkRange RangeOfChunk(const GmtZone* zones,
                                                   uint64_t from,
                                                   uint64_t zone_count,
                                                   uint64_t chunk) {
  ChunkRange r;
  r.zone = ZoneOfChunk(zones, from, zone_count, chunk);
  const GmtZone* z = &zones[r.zone];
  auto load = [](const uint64_t* p) {
    return static_cast<uint64_t>(
        __ldg(reinterpret_cast<const unsigned long long*>(p)));
  };
  r.base = load(&z->address);
  const uint64_t bytes = load(&z->bytes);
  const uint64_t first = load(&z->chunk_begin);
  r.pattern = static_cast<uint32_t>(load(&z->pattern) & 0xffu) * 0x01010101u;
  const uint64_t start = chunk >= first ? (chunk - first) * kChunk : bytes;
  const uint64_t end = start + kChunk < bytes ? start + kChunk : bytes;
  r.lo = r.base + start;
  r.hi = r.base + (end > start ? end : start);
  return r;
}

// [vlo, vhi): the 16-byte aligned middle of [lo, hi); empty when none.
__device__ __forceinline__ void AlignedMiddle(uint64_t lo, uint64_t hi,
                                              uint64_t* vlo, uint64_t* vhi) {
  uint64_t a = (lo + 15) & ~uint64_t{15};
  if (a > hi) a = hi;
  uint64_t b = hi & ~uint64_t{15};
  if (b < a) b = a;
  *vlo = a;
  *vhi = b;
}

// One thread's changed bytes within one chunk.
struct Tally {
  unsigned long long changed = 0;
  unsigned long long first = ~0ull;  // lowest offset seen
  unsigned long long last = 0;       // highest offset seen
};

__device__ __forceinline__ void CountWord(uint32_t word, uint32_t pattern,
                                          uint64_t offset, Tally* t) {
  // 0xff in every byte lane that differs.
  const uint32_t diff = __vcmpne4(word, pattern);
  if (diff == 0) return;
  t->changed += static_cast<unsigned>(__popc(diff)) / 8;
  const uint64_t first = offset + (static_cast<unsigned>(__ffs(diff)) - 1) / 8;
  const uint64_t last = offset + (31u - static_cast<unsigned>(__clz(diff))) / 8;
  if (first < t->first) t->first = first;
  if (last > t->last) t->last = last;
}

// Out of line and by value, so the rare slow path costs the clean loop no
// registers and no stack.
__device__ __noinline__ Tally CountVector(uint4 v, uint32_t pattern,
                                          uint64_t offset) {
  Tally t;
  CountWord(v.x, pattern, offset, &t);
  CountWord(v.y, pattern, offset + 4, &t);
  CountWord(v.z, pattern, offset + 8, &t);
  CountWord(v.w, pattern, offset + 12, &t);
  return t;
}

__device__ __forceinline__ void Merge(const Tally& from, Tally* into) {
  into->changed += from.changed;
  if (from.first < into->first) into->first = from.first;
  if (from.last > into->last) into->last = from.last;
}

__device__ __forceinline__ void CountByte(uint8_t byte, uint32_t pattern,
                                          uint64_t offset, Tally* t) {
  if (byte == static_cast<uint8_t>(pattern)) return;
  ++t->changed;
  if (offset < t->first) t->first = offset;
  if (offset > t->last) t->last = offset;
}

// Adds a thread's tally for zone `zone` to the results. The thread whose add
// finds the zone's count still zero is the one that counts the zone.
__device__ __noinline__ void Publish(Tally t, uint64_t zone,
                                     GmtZoneResult* results,
                                     GmtCheckSummary* summary) {
  GmtZoneResult* r = &results[zone];
  const unsigned long long before = atomicAdd(&r->changed_bytes, t.changed);
  atomicMax(&r->first_inverted, ~t.first);
  atomicMax(&r->last_plus1, t.last + 1);
  atomicAdd(&summary->bytes_changed, t.changed);
  if (before == 0) atomicAdd(&summary->zones_changed, 1ull);
}

// ---- The per-kernel check (gmt_check_zones_inline) ----------------------
//
// Three phases, split into functions so the host emulation
// (tests/kernels/device_code_on_host.h runs threads one after another) can run
// them with the barriers in between:
//   InlineClear    thread 0 zeroes the block's per-zone tallies
//   InlineScan     every thread compares its share of every zone
//   InlinePublish  thread 0 writes the findings and then the completion

// Per zone, in shared memory: merged with shared-memory atomics.
struct InlineTally {
  unsigned long long changed;
  unsigned long long first_inverted;  // atomicMax of ~offset
  unsigned long long last_plus1;      // atomicMax of offset + 1
};

__device__ __forceinline__ void InlineClear(InlineTally* tallies) {
  for (unsigned i = 0; i < GMT_INLINE_MAX_ZONES; ++i) {
    tallies[i] = InlineTally{0, 0, 0};
  }
}

// The scan treats the zones as one run of granules: the 16-byte aligned
// 16-byte pieces of memory that hold a zone's bytes, zone after zone. Thread
// `tid` of `threads` (the grid's) takes granules tid, tid + threads, ... and
// loads kInlineUnroll of them before it compares any: every load of a step is
// in flight at once, whatever zones they fall in. (Zone after zone, each with
// its own loop, a thread would wait out one memory latency per zone and per
// 16 bytes: a check of a few dozen small zones took tens of microseconds.)
// A granule at a zone's unaligned edge is read whole: the bytes outside the
// zone are in the same 16 bytes of the same page, and count as unchanged.
constexpr unsigned kInlineUnroll = 8;

// The granules holding zone `z`'s bytes.
__device__ __forceinline__ uint64_t GranulesOf(const GmtZone& z) {
  if (z.bytes == 0) return 0;
  const uint64_t first = z.address & ~uint64_t{15};
  const uint64_t end = (z.address + z.bytes + 15) & ~uint64_t{15};
  return (end - first) / 16;
}

// The zones an inline check or fill holds (a count past the array's size
// reads as its size).
template <typename ZonesByValue>
__device__ __forceinline__ uint64_t ZoneCount(const ZonesByValue& zones) {
  return zones.zone_count < GMT_INLINE_MAX_ZONES ? zones.zone_count
                                                 : GMT_INLINE_MAX_ZONES;
}

// Granules [begin, end) of the run belong to zone `zone` (== count: past the
// last zone).
struct GranuleCursor {
  uint64_t zone;
  uint64_t begin;
  uint64_t end;
};

// Moves `c` forward to the zone holding granule `g` (a thread's granules only
// grow, so the cursor never goes back).
__device__ __forceinline__ void SeekGranule(const GmtInlineCheck& check,
                                            uint64_t count, uint64_t g,
                                            GranuleCursor* c) {
  while (c->zone < count && g >= c->end) {
    ++c->zone;
    c->begin = c->end;
    if (c->zone < count) c->end = c->begin + GranulesOf(check.zones[c->zone]);
  }
}

// The address of granule `g` of the run, which `c` (moved to it) holds.
__device__ __forceinline__ uint64_t GranuleAddress(const GmtInlineCheck& check,
                                                   const GranuleCursor& c,
                                                   uint64_t g) {
  return (check.zones[c.zone].address & ~uint64_t{15}) + (g - c.begin) * 16;
}

// `w` (the granule at `address`) with its bytes outside [lo, hi) replaced by
// the pattern, so that they never count as changed. Out of line: only edge
// granules take it.
__device__ __noinline__ uint4 MaskOutside(uint4 w, uint32_t pattern,
                                          uint64_t address, uint64_t lo,
                                          uint64_t hi) {
  auto keep = [&](uint64_t word) {
    uint32_t mask = 0;
    for (unsigned i = 0; i < 4; ++i) {
      const uint64_t a = address + word * 4 + i;
      if (a >= lo && a < hi) mask |= 0xffu << (8 * i);
    }
    return mask;
  };
  uint32_t m = keep(0);
  w.x = (w.x & m) | (pattern & ~m);
  m = keep(1);
  w.y = (w.y & m) | (pattern & ~m);
  m = keep(2);
  w.z = (w.z & m) | (pattern & ~m);
  m = keep(3);
  w.w = (w.w & m) | (pattern & ~m);
  return w;
}

// A thread's tally into a zone's shared one.
__device__ __forceinline__ void AddTally(const Tally& t, InlineTally* tally) {
  atomicAdd(&tally->changed, t.changed);
  atomicMax(&tally->first_inverted, ~t.first);
  atomicMax(&tally->last_plus1, t.last + 1);
}

__device__ __forceinline__ void InlineFlush(const Tally& t, uint64_t zone,
                                            InlineTally* tallies) {
  if (t.changed != 0) AddTally(t, &tallies[zone]);
}

// Zone `z`'s pattern byte repeated in a word.
__device__ __forceinline__ uint32_t PatternWord(const GmtZone& z) {
  return static_cast<uint32_t>(z.pattern & 0xffu) * 0x01010101u;
}

// The granule at `address` as loaded (`w`), with the bytes outside zone `z`
// (its unaligned edges' neighbours) set to the pattern: never counted.
__device__ __forceinline__ uint4 WithinZone(uint4 w, uint32_t pattern,
                                            uint64_t address,
                                            const GmtZone& z) {
  if (address < z.address || address + 16 > z.address + z.bytes) {
    return MaskOutside(w, pattern, address, z.address, z.address + z.bytes);
  }
  return w;
}

__device__ __forceinline__ bool Differs(uint4 v, uint32_t pattern) {
  return ((v.x ^ pattern) | (v.y ^ pattern) | (v.z ^ pattern) |
          (v.w ^ pattern)) != 0;
}

// Thread `tid` of `threads` (the grid's): its granules of the run, each
// compared with its zone's pattern; changed bytes go into the block's
// per-zone tallies.
__device__ __forceinline__ void InlineScan(const GmtInlineCheck& check,
                                           unsigned tid, unsigned threads,
                                           InlineTally* tallies) {
  const uint64_t count = ZoneCount(check);
  if (count == 0) return;
  GranuleCursor cursor{0, 0, GranulesOf(check.zones[0])};
  Tally t;  // changed bytes of zone `tally_zone` so far
  uint32_t tally_zone = 0;
  for (uint64_t step = tid;; step += uint64_t{threads} * kInlineUnroll) {
    uint32_t zone[kInlineUnroll];  // < GMT_INLINE_MAX_ZONES, or count
    uint64_t address[kInlineUnroll];
    bool any = false;
#pragma unroll
    for (unsigned k = 0; k < kInlineUnroll; ++k) {
      const uint64_t g = step + uint64_t{k} * threads;
      SeekGranule(check, count, g, &cursor);
      zone[k] = static_cast<uint32_t>(cursor.zone);
      address[k] = 0;
      if (cursor.zone < count) {
        address[k] = GranuleAddress(check, cursor, g);
        any = true;
      }
    }
    if (!any) break;
    uint4 w[kInlineUnroll];
#pragma unroll
    for (unsigned k = 0; k < kInlineUnroll; ++k) {
      if (zone[k] < count)
        w[k] = __ldcs(reinterpret_cast<const uint4*>(address[k]));
    }
#pragma unroll
    for (unsigned k = 0; k < kInlineUnroll; ++k) {
      if (zone[k] >= count) continue;
      const GmtZone& z = check.zones[zone[k]];
      const uint32_t pattern = PatternWord(z);
      const uint4 v = WithinZone(w[k], pattern, address[k], z);
      if (!Differs(v, pattern)) continue;
      if (zone[k] != tally_zone) {
        InlineFlush(t, tally_zone, tallies);
        t = Tally();
        tally_zone = zone[k];
      }
      // Offsets from the zone's first byte (modulo 2^64 for an edge
      // granule's masked bytes, which never count).
      Merge(CountVector(v, pattern, address[k] - z.address), &t);
    }
  }
  InlineFlush(t, tally_zone, tallies);
}

// ---- The small per-kernel check (gmt_check_zones_inline_small) ------------
//
// A check after a program's kernel reads a few KiB (the redzone ends of the
// blocks its arguments reach), from an SM that has likely not run a check
// lately, so its instructions come from L2. The large scan above (eight
// loads in flight per thread, each with its own zone lookup, unrolled) is
// ~35 KiB of code: fetching it costs more than reading the zones. This scan
// keeps two loads in flight, in a loop that is not unrolled further, and
// sends a changed granule out of line straight into its zone's shared tally
// (a clean check never goes there). Its loads keep the usual L2 policy: the
// same few lines are read after every kernel, and hold only KiBs.

// All threads: the tallies of the check's zones to zero.
__device__ __forceinline__ void SmallClear(const GmtInlineCheck& check,
                                           unsigned tid, unsigned threads,
                                           InlineTally* tallies) {
  const uint64_t count = ZoneCount(check);
  for (uint64_t z = tid; z < count; z += threads) {
    tallies[z] = InlineTally{0, 0, 0};
  }
}

// Out of line: one changed granule of a zone into the zone's tally.
__device__ __noinline__ void TallyGranule(uint4 v, uint32_t pattern,
                                          uint64_t offset, InlineTally* tally) {
  const Tally t = CountVector(v, pattern, offset);
  if (t.changed != 0) AddTally(t, tally);
}

// Thread `tid` of `threads` (one block): granules tid, tid + threads, ...
// of the run, two at a time.
__device__ __forceinline__ void SmallScan(const GmtInlineCheck& check,
                                          unsigned tid, unsigned threads,
                                          InlineTally* tallies) {
  const uint64_t count = ZoneCount(check);
  if (count == 0) return;
  GranuleCursor cursor{0, 0, GranulesOf(check.zones[0])};
#pragma unroll 1
  for (uint64_t g = tid;; g += 2 * uint64_t{threads}) {
    uint64_t zone[2];
    uint64_t address[2];
#pragma unroll
    for (unsigned k = 0; k < 2; ++k) {
      const uint64_t granule = g + uint64_t{k} * threads;
      SeekGranule(check, count, granule, &cursor);
      zone[k] = cursor.zone;
      address[k] =
          cursor.zone < count ? GranuleAddress(check, cursor, granule) : 0;
    }
    if (zone[0] >= count) break;  // the second granule lies further on
    uint4 w[2];
#pragma unroll
    for (unsigned k = 0; k < 2; ++k) {
      if (zone[k] < count) {
        w[k] = __ldcg(reinterpret_cast<const uint4*>(address[k]));
      }
    }
#pragma unroll
    for (unsigned k = 0; k < 2; ++k) {
      if (zone[k] >= count) continue;
      const GmtZone& z = check.zones[zone[k]];
      const uint32_t pattern = PatternWord(z);
      const uint4 v = WithinZone(w[k], pattern, address[k], z);
      if (Differs(v, pattern)) {
        TallyGranule(v, pattern, address[k] - z.address, &tallies[zone[k]]);
      }
    }
  }
}

// Thread 0, after every thread's scan: the findings into the check's region
// of the ring, then the completion. The fences make the host see a record
// whole before its check id, and every record before the completion (a
// block without findings needs none).
// `block`: the block's index in the grid; it answers as check id
// check.check_id + block.
__device__ __forceinline__ void InlinePublish(const GmtInlineCheck& check,
                                              unsigned block,
                                              const InlineTally* tallies) {
  const uint64_t id = check.check_id + block;
  auto* report = reinterpret_cast<GmtCheckReport*>(check.report);
  const uint64_t count = ZoneCount(check);
  GmtFinding* region =
      &report->ring[(id % GMT_REPORT_RING_CHECKS) * GMT_INLINE_MAX_ZONES];
  unsigned long long findings = 0;
  for (uint64_t z = 0; z < count; ++z) {
    if (tallies[z].changed == 0) continue;
    volatile GmtFinding* f = &region[findings++];
    f->check_id = 0;
    __threadfence_system();
    f->zone = z;
    f->changed_bytes = tallies[z].changed;
    f->first_last = (~tallies[z].first_inverted & 0xffffffffull) |
                    ((tallies[z].last_plus1 - 1) << 32);
    __threadfence_system();
    f->check_id = id;
  }
  // A clean block writes one word, with no fence: it has no record the word
  // must follow, and a system-wide fence costs more than the store.
  if (findings != 0) __threadfence_system();
  volatile GmtCheckDone* done = &report->done[id % GMT_REPORT_DONE_SLOTS];
  done->word = (id << GMT_DONE_FINDINGS_BITS) | findings;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(GMT_INLINE_CHECK_THREADS)
    gmt_check_zones_inline_small(GmtInlineCheck check) {
  __shared__ InlineTally tallies[GMT_INLINE_MAX_ZONES];
  SmallClear(check, threadIdx.x, blockDim.x, tallies);
  __syncthreads();
  SmallScan(check, threadIdx.x, blockDim.x, tallies);
  __syncthreads();
  if (threadIdx.x == 0) InlinePublish(check, 0, tallies);
}

extern "C" __global__ void __launch_bounds__(GMT_INLINE_CHECK_THREADS)
    gmt_check_zones_inline(GmtInlineCheck check) {
  __shared__ InlineTally tallies[GMT_INLINE_MAX_ZONES];
  if (threadIdx.x == 0) InlineClear(tallies);
  __syncthreads();
  InlineScan(check, blockIdx.x * blockDim.x + threadIdx.x,
             gridDim.x * blockDim.x, tallies);
  __syncthreads();
  if (threadIdx.x == 0) InlinePublish(check, blockIdx.x, tallies);
}

namespace {

// One block's share of filling [lo, hi) with the pattern byte repeated in
// `pattern`: thread `tid` of `stride`.
__device__ __forceinline__ void FillRange(uint64_t lo, uint64_t hi,
                                          uint32_t pattern, unsigned tid,
                                          unsigned stride) {
  uint64_t vlo, vhi;
  AlignedMiddle(lo, hi, &vlo, &vhi);
  const auto byte = static_cast<uint8_t>(pattern);
  for (uint64_t a = lo + tid; a < vlo; a += stride) {
    *reinterpret_cast<uint8_t*>(a) = byte;
  }
  for (uint64_t a = vhi + tid; a < hi; a += stride) {
    *reinterpret_cast<uint8_t*>(a) = byte;
  }
  const uint4 fill = make_uint4(pattern, pattern, pattern, pattern);
  uint4* v = reinterpret_cast<uint4*>(vlo);
  const uint64_t n = (vhi - vlo) / 16;
  // Streaming stores: the zones are not read again soon.
  for (uint64_t i = tid; i < n; i += stride) __stcs(v + i, fill);
}

// The chunk `chunk` of an inline fill: its zone (the last with chunk_begin
// <= chunk, searched on from `from`, since a block's chunks only grow) and
// byte range.
__device__ __forceinline__ void InlineFillChunk(const GmtInlineFill& fill,
                                                uint64_t chunk, uint64_t* from,
                                                unsigned tid, unsigned stride) {
  const uint64_t count = ZoneCount(fill);
  uint64_t z = *from;
  while (z + 1 < count && fill.zones[z + 1].chunk_begin <= chunk) ++z;
  *from = z;
  const GmtZone& zone = fill.zones[z];
  if (chunk < zone.chunk_begin) return;
  const uint64_t start = (chunk - zone.chunk_begin) * kChunk;
  if (start >= zone.bytes) return;
  const uint64_t end =
      start + kChunk < zone.bytes ? start + kChunk : zone.bytes;
  const uint32_t pattern = PatternWord(zone);
  FillRange(zone.address + start, zone.address + end, pattern, tid, stride);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    gmt_fill_zones(const GmtZone* zones, uint64_t zone_count,
                   uint64_t total_chunks) {
  if (zone_count == 0) return;
  uint64_t zone = 0;  // of the block's previous chunk
  for (uint64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const ChunkRange r = RangeOfChunk(zones, zone, zone_count, chunk);
    zone = r.zone;
    FillRange(r.lo, r.hi, r.pattern, threadIdx.x, blockDim.x);
  }
}

extern "C" __global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    gmt_fill_zones_inline(GmtInlineFill fill) {
  uint64_t zone = 0;  // of the block's previous chunk
  for (uint64_t chunk = blockIdx.x; chunk < fill.total_chunks;
       chunk += gridDim.x) {
    InlineFillChunk(fill, chunk, &zone, threadIdx.x, blockDim.x);
  }
}

// Blocks [0, check_blocks) are gmt_check_zones_inline's grid over `check`,
// the rest gmt_fill_zones_inline's over `fill` (the two sets of zones never
// overlap): the check of blocks leaving the quarantine rides on the launch
// that fills new blocks on the same stream. A block takes one branch whole,
// so the check's barriers see all of its threads.
extern "C" __global__ void __launch_bounds__(GMT_INLINE_CHECK_THREADS)
    gmt_check_fill_zones_inline(GmtInlineCheck check, GmtInlineFill fill,
                                uint64_t check_blocks) {
  if (blockIdx.x < check_blocks) {
    __shared__ InlineTally tallies[GMT_INLINE_MAX_ZONES];
    if (threadIdx.x == 0) InlineClear(tallies);
    __syncthreads();
    InlineScan(check, blockIdx.x * blockDim.x + threadIdx.x,
               static_cast<unsigned>(check_blocks) * blockDim.x, tallies);
    __syncthreads();
    if (threadIdx.x == 0) InlinePublish(check, blockIdx.x, tallies);
    return;
  }
  const uint64_t fill_blocks = gridDim.x - check_blocks;
  uint64_t zone = 0;  // of the block's previous chunk
  for (uint64_t chunk = blockIdx.x - check_blocks; chunk < fill.total_chunks;
       chunk += fill_blocks) {
    InlineFillChunk(fill, chunk, &zone, threadIdx.x, blockDim.x);
  }
}

extern "C" __global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSm)
    gmt_check_zones(const GmtZone* zones, uint64_t zone_count,
                    uint64_t total_chunks, GmtZoneResult* results,
                    GmtCheckSummary* summary) {
  if (zone_count == 0) return;
  const unsigned tid = threadIdx.x;
  const unsigned stride = blockDim.x;
  uint64_t zone = 0;  // of the block's previous chunk
  for (uint64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const ChunkRange r = RangeOfChunk(zones, zone, zone_count, chunk);
    zone = r.zone;
    uint64_t vlo, vhi;
    AlignedMiddle(r.lo, r.hi, &vlo, &vhi);
    Tally t;
    for (uint64_t a = r.lo + tid; a < vlo; a += stride) {
      CountByte(*reinterpret_cast<const uint8_t*>(a), r.pattern, a - r.base,
                &t);
    }
    for (uint64_t a = vhi + tid; a < r.hi; a += stride) {
      CountByte(*reinterpret_cast<const uint8_t*>(a), r.pattern, a - r.base,
                &t);
    }
    const uint4* v = reinterpret_cast<const uint4*>(vlo);
    const uint64_t n = (vhi - vlo) / 16;
    const uint64_t step = uint64_t{stride} * kUnroll;
    for (uint64_t i = tid; i < n; i += step) {
      uint4 w[kUnroll];
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) {
        const uint64_t j = i + uint64_t{k} * stride;
        // Streaming loads (evict-first): the scan must not flush the
        // program's working set out of L2.
        w[k] = j < n ? __ldcs(v + j)
                     : make_uint4(r.pattern, r.pattern, r.pattern, r.pattern);
      }
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) {
        const uint32_t differs = (w[k].x ^ r.pattern) | (w[k].y ^ r.pattern) |
                                 (w[k].z ^ r.pattern) | (w[k].w ^ r.pattern);
        if (differs != 0) {
          const uint64_t j = i + uint64_t{k} * stride;
          Merge(CountVector(w[k], r.pattern, vlo + j * 16 - r.base), &t);
        }
      }
    }
    if (t.changed != 0) Publish(t, r.zone, results, summary);
  }
}
