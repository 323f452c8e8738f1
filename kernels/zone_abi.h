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

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GMT_KERNELS_ZONE_ABI_H_
