// The data layout shared by the guard kernels (kernels/zone_kernels.cu) and
// the host code that launches them (lib/platform/driver_device_ops.cc, and the
// test double's emulation in tests/fake_cuda). Plain C, no device code: both
// compilers must lay these out identically, so every field is 8 bytes.
//
// A zone is a byte range that must hold one pattern byte everywhere: a front
// or tail redzone (canary byte), or the user bytes of a quarantined block
// (freed byte). Kernels read a table of zones from device memory.
#ifndef GMT_KERNELS_ZONE_ABI_H_
#define GMT_KERNELS_ZONE_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Work is split into chunks of this many bytes; each zone starts a new chunk.
#define GMT_ZONE_CHUNK_BYTES (64u * 1024u)

typedef struct GmtZone {
  uint64_t address;      // first byte of the zone (device/managed address)
  uint64_t bytes;        // its length; 0 is allowed and skipped
  uint64_t pattern;      // the expected byte, in the low 8 bits
  uint64_t chunk_begin;  // index of the zone's first chunk: the sum of
                         // ceil(bytes / GMT_ZONE_CHUNK_BYTES) over the zones
                         // before it (the host computes this prefix sum)
} GmtZone;

// One per zone, zeroed by the host before a check. For a zone with changed
// bytes: first = ~first_inverted, last = last_plus1 - 1 (offsets from the
// zone's start).
typedef struct GmtZoneResult {
  unsigned long long changed_bytes;   // bytes != pattern
  unsigned long long first_inverted;  // atomicMax of ~offset
  unsigned long long last_plus1;      // atomicMax of offset + 1
  unsigned long long reserved;
} GmtZoneResult;

// Summary of one check launch, zeroed by the host before it.
typedef struct GmtCheckSummary {
  unsigned long long zones_changed;  // zones with at least one changed byte
  unsigned long long bytes_changed;  // over all zones
} GmtCheckSummary;

// Kernel entry points (extern "C" names, looked up with cuLibraryGetKernel):
//
//   gmt_fill_zones(const GmtZone* zones, uint64_t zone_count,
//                  uint64_t total_chunks)
//     writes each zone's pattern byte over the whole zone.
//
//   gmt_check_zones(const GmtZone* zones, uint64_t zone_count,
//                   uint64_t total_chunks, GmtZoneResult* results,
//                   GmtCheckSummary* summary)
//     compares every byte of every zone with its pattern; for zone i with
//     changed bytes updates results[i] and summary (device atomics).
//
// Both use a grid-stride loop over chunks (any grid size is correct), find a
// chunk's zone by binary search on chunk_begin, and read/write 16 bytes at a
// time where the address is aligned.
#define GMT_FILL_KERNEL_NAME "gmt_fill_zones"
#define GMT_CHECK_KERNEL_NAME "gmt_check_zones"

// ---- The per-kernel check: one launch, zones by value, answers in host memory
//
// A check after a program's kernel usually covers a handful of small zones
// (the redzones of the blocks its arguments point into). Staging a table in
// device memory, clearing results and copying a summary back cost four GPU
// operations and ~24 us of host time per check; this kernel needs one launch:
// the zones travel in its parameter buffer, and it answers in the context's
// GmtCheckReport, pinned host memory mapped into the device, which the host
// reads without a CUDA call.
//
//   gmt_check_zones_inline(GmtInlineCheck check)
//     each block (GMT_INLINE_CHECK_THREADS threads) compares its share of
//     every byte of check.zones[0, zone_count) with its pattern (the zones
//     taken as one run of 16-byte granules, which the grid's threads
//     interleave over, several loads in flight per thread); then, for each
//     zone where it found changed bytes, block b writes a GmtFinding into the
//     region of check id check_id + b in the finding ring, and last writes
//     done[(check_id + b) % GMT_REPORT_DONE_SLOTS] with one 64-bit store. A
//     launch of B blocks takes the ids check_id .. check_id + B - 1; the
//     host merges what they
//     found per zone (changed bytes add, first is the least, last the most).
//
// Each block publishes its own answer, on purpose: a block's threads merge
// their tallies in shared memory and one thread publishes after a
// __syncthreads, so no two blocks ever need to agree on who finishes last
// (that would take a device-memory counter per check in flight). One block
// covers up to GMT_INLINE_MAX_BYTES; the host launches one block per that
// many bytes, up to GMT_INLINE_MAX_BLOCKS, and sends larger checks (or more
// zones) through gmt_check_zones and its table.
//
//   gmt_fill_zones_inline(GmtInlineFill fill)
//     writes each zone's pattern byte over the whole zone, the zones by value
//     (chunk_begin as for gmt_fill_zones, which the grid strides over): a
//     fill of a few zones is one launch, with no table to copy first.
#define GMT_INLINE_CHECK_KERNEL_NAME "gmt_check_zones_inline"
//
//   gmt_check_zones_inline_small(GmtInlineCheck check)
//     the same answer, in one block (id check_id), for a check of at most
//     GMT_INLINE_SMALL_GRANULES 16-byte granules: a kernel's reach (a few
//     redzone ends). Its code is a few hundred bytes where the large
//     kernel's is ~35 KiB, which an SM that has not run a check lately must
//     fetch first; two loads in flight per thread are enough for that size.
#define GMT_INLINE_SMALL_CHECK_KERNEL_NAME "gmt_check_zones_inline_small"
#define GMT_INLINE_SMALL_GRANULES 4096
#define GMT_INLINE_MAX_ZONES 32
#define GMT_INLINE_CHECK_THREADS 512
// Bytes one block covers: a step of its threads has 64 KiB of loads in
// flight (8 granules each), about what one SM can keep waiting on memory, so
// 128 KiB is two memory latencies. More per block would make a check of a
// few MiB (a freed tensor in quarantine, whole zones at a synchronization)
// wait out more latencies on fewer SMs.
#define GMT_INLINE_MAX_BYTES (128u * 1024u)
// Blocks one inline check may take (ids of the done[] slots and regions of
// the ring it uses): up to 64 MiB in one launch.
#define GMT_INLINE_MAX_BLOCKS 512
// Block answers (check ids) that may be in flight in one context at once
// (the host never has more; past it a check takes the table path): done[]
// is indexed by check id modulo this. 32 KiB of pinned host memory.
#define GMT_REPORT_DONE_SLOTS 4096
// The finding ring: one region of GMT_INLINE_MAX_ZONES records per check id
// (a block's answer), by id modulo this; 512 KiB of pinned host memory. A
// region is written again GMT_REPORT_RING_CHECKS ids later, and only by a
// block that found something; findings the host had not read by then are
// lost, which it detects (fewer records carry the id than the findings
// count in done[] says).
#define GMT_REPORT_RING_CHECKS 512

// The launch's only parameter (1,048 bytes, within the 4 KiB a classic
// parameter buffer holds). chunk_begin of the zones is not used.
typedef struct GmtInlineCheck {
  GmtZone zones[GMT_INLINE_MAX_ZONES];
  uint64_t zone_count;  // <= GMT_INLINE_MAX_ZONES
  uint64_t check_id;    // > 0, increasing per context
  uint64_t report;      // device address of the context's GmtCheckReport
} GmtInlineCheck;

#define GMT_INLINE_FILL_KERNEL_NAME "gmt_fill_zones_inline"
// The fill's only parameter (1,040 bytes).
typedef struct GmtInlineFill {
  GmtZone zones[GMT_INLINE_MAX_ZONES];  // chunk_begin: the prefix sums
  uint64_t zone_count;                  // <= GMT_INLINE_MAX_ZONES
  uint64_t total_chunks;
} GmtInlineFill;

// The check of blocks leaving the quarantine and the fill of new blocks,
// when both are due on one program stream (at its next launch), as one
// launch:
//
//   gmt_check_fill_zones_inline(GmtInlineCheck check, GmtInlineFill fill,
//                               uint64_t check_blocks)
//     blocks [0, check_blocks) are gmt_check_zones_inline's grid over `check`
//     (their ids check_id .. check_id + check_blocks - 1), the rest
//     gmt_fill_zones_inline's over `fill`; GMT_INLINE_CHECK_THREADS threads a
//     block. The two sets of zones must not overlap. Parameters: 2,096 bytes.
#define GMT_INLINE_CHECK_FILL_KERNEL_NAME "gmt_check_fill_zones_inline"

// One zone with changed bytes. check_id is written last (after a
// __threadfence_system), and is 0 while the record is being rewritten.
typedef struct GmtFinding {
  unsigned long long check_id;
  unsigned long long zone;  // index into GmtInlineCheck::zones
  unsigned long long changed_bytes;
  unsigned long long first_last;  // first offset (low 32) | last (high 32)
} GmtFinding;

// A block's completion, one word written by one store:
// check_id << GMT_DONE_FINDINGS_BITS | findings (zones with changed bytes,
// at most GMT_INLINE_MAX_ZONES). One store needs no order of its own: a
// clean block (the common case) writes nothing else to host memory and so
// needs no system-wide fence; a block with findings fences once, after its
// records and before this word.
#define GMT_DONE_FINDINGS_BITS 8
typedef struct GmtCheckDone {
  unsigned long long word;
} GmtCheckDone;

typedef struct GmtCheckReport {
  GmtCheckDone done[GMT_REPORT_DONE_SLOTS];
  GmtFinding ring[GMT_REPORT_RING_CHECKS * GMT_INLINE_MAX_ZONES];
} GmtCheckReport;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GMT_KERNELS_ZONE_ABI_H_
