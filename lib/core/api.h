// Which CUDA entry point made or released a block, and what kind of memory it
// is.
//
// Records store an `Api` (one byte) rather than a name; `ApiName()` turns it
// into the text the reports show. The list itself lives in api_list.inc.
#ifndef GMT_LIB_CORE_API_H_
#define GMT_LIB_CORE_API_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace gmt {

// What a block of memory is. The kind decides which free APIs may release it
// and whether its bytes count towards a device's usage.
enum class MemoryKind : uint8_t {
  kDevice,          // cudaMalloc & co, stream-ordered pools included
  kManaged,         // cudaMallocManaged / cuMemAllocManaged
  kPinnedHost,      // cudaMallocHost / cudaHostAlloc / cuMemHostAlloc
  kRegisteredHost,  // cudaHostRegister: the user's memory, pinned; never
                    // guarded
  kArray,        // cudaMallocArray: an opaque handle, size from the descriptor
  kVmmPhysical,  // cuMemCreate: physical memory behind a handle
  kVmmReservation,  // cuMemAddressReserve: virtual address space only
};
inline constexpr int kMemoryKindCount = 7;

constexpr uint32_t KindBit(MemoryKind kind) {
  return 1u << static_cast<uint32_t>(kind);
}
// Lets api_list.inc name kinds without the enum prefix.
inline constexpr MemoryKind kDevice = MemoryKind::kDevice;
inline constexpr MemoryKind kManaged = MemoryKind::kManaged;
inline constexpr MemoryKind kPinnedHost = MemoryKind::kPinnedHost;
inline constexpr MemoryKind kRegisteredHost = MemoryKind::kRegisteredHost;
inline constexpr MemoryKind kArray = MemoryKind::kArray;
inline constexpr MemoryKind kVmmPhysical = MemoryKind::kVmmPhysical;
inline constexpr MemoryKind kVmmReservation = MemoryKind::kVmmReservation;

enum class Api : uint8_t {
#define GMT_ALLOC_API(Enum, Name, Kind) Enum,
#define GMT_FREE_API(Enum, Name, KindMask) Enum,
#include "lib/core/api_list.inc"
  kUnknown,
};

// "cudaMalloc", "cuMemFree", ...; "unknown" for kUnknown.
absl::string_view ApiName(Api api);
// The kind of memory an allocating API creates (kDevice for free APIs).
MemoryKind ApiMemoryKind(Api api);
// For a free API, the kinds it may release (a mask of KindBit); 0 otherwise.
uint32_t ApiReleasableKinds(Api api);
bool IsFreeApi(Api api);
// "device", "managed", "pinned-host", ...
absl::string_view MemoryKindName(MemoryKind kind);
// Whether a kind's bytes count towards device (or pinned host) usage.
// Registered host memory and virtual reservations do not: they take no new
// memory.
bool CountsTowardsUsage(MemoryKind kind);

}  // namespace gmt

#endif  // GMT_LIB_CORE_API_H_
