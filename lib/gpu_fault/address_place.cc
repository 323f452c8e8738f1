#include "lib/gpu_fault/address_place.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/api.h"
#include "lib/gpu_fault/elf_reader.h"

namespace gmt::gpu_fault {

std::string SizeText(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, bytes == 1 ? " byte" : " bytes");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  // 1023.96 would print as "1024.0": move up a unit before it does.
  while (value >= 1023.95 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

AddressPlace LocateAddress(uint64_t address,
                           absl::Span<const AllocationRecord> blocks,
                           uint64_t near_limit) {
  std::vector<AddressPlace> outside;
  for (const AllocationRecord& b : blocks) {
    const uint64_t start = b.address;
    const uint64_t end = b.address + b.bytes;
    AddressPlace p;
    p.block = b;
    if (address >= b.extent_begin() && address < b.extent_end()) {
      if (address < start) {
        p.kind = AddressPlace::Kind::kFrontRedzone;
        p.distance = start - address;
      } else if (address >= end) {
        p.kind = AddressPlace::Kind::kRearRedzone;
        p.distance = address - end;
      } else {
        p.kind = AddressPlace::Kind::kInside;
        p.distance = address - start;
      }
      return p;  // extents do not overlap: this is the one
    }
    p.kind = address >= end ? AddressPlace::Kind::kPastEnd
                            : AddressPlace::Kind::kBeforeStart;
    p.distance = address >= end ? address - end : start - address;
    outside.push_back(std::move(p));
  }
  if (address < kNullPointerWindow) {
    return AddressPlace{
        AddressPlace::Kind::kNullPointer, std::nullopt, address, {}};
  }
  if (outside.empty()) return AddressPlace{};
  uint64_t nearest = outside.front().distance;
  for (const AddressPlace& p : outside) nearest = std::min(nearest, p.distance);
  if (nearest > near_limit) return AddressPlace{};
  std::vector<AddressPlace> candidates;
  for (AddressPlace& p : outside) {
    if (p.distance - nearest <= nearest / 64)
      candidates.push_back(std::move(p));
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const AddressPlace& a, const AddressPlace& b) {
              return a.block->address < b.block->address;
            });
  AddressPlace best = candidates.front();
  if (candidates.size() > 1) best.as_near = std::move(candidates);
  return best;
}

namespace {

// "the 4.0 KiB block at 0x... (cudaMalloc), passed as argument 0 (`out`),
// allocated at main (app.cu:10)".
std::string BlockText(const AllocationRecord& b, const BlockNaming& naming) {
  std::string block =
      absl::StrFormat("the %s block at 0x%x (%s)", SizeText(b.bytes), b.address,
                      ApiName(b.api));
  // Which argument carried it: a named argument pointing into the block, else
  // the parameter bytes that hold its address.
  bool named = false;
  for (const KernelArgument& a : naming.arguments) {
    if (a.value >= b.address &&
        a.value < b.address + std::max<uint64_t>(b.bytes, 1)) {
      absl::StrAppend(&block, ", passed as argument ", a.index,
                      a.name.empty() ? "" : absl::StrCat(" (`", a.name, "`)"));
      named = true;
      break;
    }
  }
  if (!named) {
    const ByteCursor params(naming.params);
    for (uint64_t at = 0; at + 8 <= naming.params.size(); at += 8) {
      if (params.U64(at) == b.address) {
        absl::StrAppend(&block,
                        ", whose address is the kernel parameter at byte ", at);
        break;
      }
    }
  }
  if (naming.site && b.stack != kNoStack) {
    const std::string site = naming.site(b.stack);
    if (!site.empty()) absl::StrAppend(&block, ", allocated at ", site);
  }
  return block;
}

std::string OutsideText(const AddressPlace& p, const BlockNaming& naming) {
  return absl::StrCat(SizeText(p.distance),
                      p.kind == AddressPlace::Kind::kPastEnd
                          ? " past the end of "
                          : " before the start of ",
                      BlockText(*p.block, naming));
}

}  // namespace

std::string DescribeAddressPlace(const AddressPlace& place,
                                 const BlockNaming& naming) {
  using Kind = AddressPlace::Kind;
  switch (place.kind) {
    case Kind::kNotNear:
      return "not in or near any tracked block";
    case Kind::kNullPointer:
      return place.distance == 0
                 ? "a null pointer"
                 : absl::StrCat(SizeText(place.distance),
                                " past a null pointer (a pointer that was 0 "
                                "plus an index)");
    case Kind::kInside:
      return absl::StrCat(SizeText(place.distance), " into ",
                          BlockText(*place.block, naming));
    case Kind::kFrontRedzone:
      return absl::StrCat("in the front redzone, ", SizeText(place.distance),
                          " before the start of ",
                          BlockText(*place.block, naming));
    case Kind::kRearRedzone:
      return absl::StrCat("in the rear redzone, ", SizeText(place.distance),
                          " past the end of ", BlockText(*place.block, naming));
    case Kind::kPastEnd:
    case Kind::kBeforeStart:
      break;
  }
  if (place.as_near.empty()) return OutsideText(place, naming);
  std::string text;
  for (const AddressPlace& p : place.as_near) {
    absl::StrAppend(&text, text.empty() ? "" : "; or ", OutsideText(p, naming));
  }
  absl::StrAppend(&text, " (the address alone does not tell which)");
  return text;
}

}  // namespace gmt::gpu_fault
