// Where a faulting address lies relative to the blocks the tool tracks: inside
// one, in its redzone, past its end or before its start (and how far), near a
// null pointer, or near nothing tracked.
//
// Pure functions of their inputs (unit tested on made-up blocks); the caller
// hands in the registry's live blocks (lib/registry's AllocationRecord).
#ifndef GMT_LIB_GPU_FAULT_ADDRESS_PLACE_H_
#define GMT_LIB_GPU_FAULT_ADDRESS_PLACE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "lib/registry/registry.h"

namespace gmt::gpu_fault {

struct AddressPlace {
  enum class Kind {
    kInside,        // distance: bytes from the block's start
    kFrontRedzone,  // distance: bytes before the block's start
    kRearRedzone,   // distance: bytes past the block's end
    kPastEnd,       // distance: bytes past the end (outside any redzone)
    kBeforeStart,   // distance: bytes before the start
    kNullPointer,   // distance: the address itself (a small offset from 0)
    kNotNear,       // no tracked block within the limit
  };
  Kind kind = Kind::kNotNear;
  std::optional<AllocationRecord> block;
  uint64_t distance = 0;
  // Far outside every block, several can be about as near (within 1/64 of
  // the distance): an address 4 GiB past two neighbouring 4 KiB blocks says
  // nothing about which pointer it came from, so all of them are named.
  // Ordered by address with `block` first; only for kPastEnd/kBeforeStart.
  std::vector<AddressPlace> as_near;
};

// Addresses below this are read as a null pointer plus an offset: no CUDA
// allocation is ever placed there.
inline constexpr uint64_t kNullPointerWindow = 1ull << 20;
// Farther than this from every block: "not in or near any tracked block".
inline constexpr uint64_t kDefaultNearLimit = 64ull << 30;

// The block that explains `address` best: one whose extent holds it, else
// the nearest by distance to the user's bytes, within `near_limit` (and any
// about as near, in `as_near`).
AddressPlace LocateAddress(uint64_t address,
                           absl::Span<const AllocationRecord> blocks,
                           uint64_t near_limit = kDefaultNearLimit);

// A kernel argument by name, once the launch's parameter layout is known
// (cuFuncGetParamInfo at the launch; the hook for naming blocks "argument 0
// (`out`)"). `value` is the argument's bytes read as a pointer.
struct KernelArgument {
  int index = 0;
  std::string name;  // may be empty: "argument 2"
  uint64_t value = 0;
};

// How to name a block in words beyond its address and size.
struct BlockNaming {
  // The faulting launch's parameter buffer as dumped: a block whose address
  // is in it is named by the byte offset ("its address is the kernel
  // parameter at byte 0") when no argument names it.
  absl::Span<const uint8_t> params;
  std::vector<KernelArgument> arguments;
  // Names an allocation's call site ("main (wild_write.cu:10)"); may be
  // empty.
  std::function<std::string(StackId)> site;
};

// "4.0 GiB past the end of the 4.0 KiB block at 0x7fd947e00000 (cudaMalloc),
// the kernel parameter at byte 0, allocated at main (wild_write.cu:10)".
std::string DescribeAddressPlace(const AddressPlace& place,
                                 const BlockNaming& naming);

// "16 bytes", "4.0 KiB", "4.0 GiB".
std::string SizeText(uint64_t bytes);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_ADDRESS_PLACE_H_
