#include "lib/core/api.h"

#include "absl/strings/string_view.h"

namespace gmt {
namespace {

struct ApiInfo {
  absl::string_view name;
  uint32_t releasable;
  MemoryKind kind;
  bool is_free;
};

constexpr ApiInfo kApiInfo[] = {
#define GMT_ALLOC_API(Enum, Name, Kind) {Name, 0, Kind, false},
#define GMT_FREE_API(Enum, Name, KindMask) {Name, KindMask, kDevice, true},
#include "lib/core/api_list.inc"
    {"unknown", 0, kDevice, false},
};

const ApiInfo& Info(Api api) {
  auto index = static_cast<size_t>(api);
  if (index >= sizeof(kApiInfo) / sizeof(kApiInfo[0])) {
    index = static_cast<size_t>(Api::kUnknown);
  }
  return kApiInfo[index];
}

}  // namespace

absl::string_view ApiName(Api api) { return Info(api).name; }
MemoryKind ApiMemoryKind(Api api) { return Info(api).kind; }
uint32_t ApiReleasableKinds(Api api) { return Info(api).releasable; }
bool IsFreeApi(Api api) { return Info(api).is_free; }

absl::string_view MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kManaged:
      return "managed";
    case MemoryKind::kPinnedHost:
      return "pinned-host";
    case MemoryKind::kRegisteredHost:
      return "registered-host";
    case MemoryKind::kArray:
      return "array";
    case MemoryKind::kVmmPhysical:
      return "vmm-physical";
    case MemoryKind::kVmmReservation:
      return "vmm-reservation";
  }
  return "unknown";
}

bool CountsTowardsUsage(MemoryKind kind) {
  return kind != MemoryKind::kRegisteredHost &&
         kind != MemoryKind::kVmmReservation;
}

}  // namespace gmt
