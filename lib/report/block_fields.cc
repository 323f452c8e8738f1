#include "lib/report/block_fields.h"

#include "absl/strings/str_format.h"
#include "lib/core/api.h"

namespace gmt {

std::string Hex(uint64_t value) { return absl::StrFormat("0x%x", value); }

nlohmann::json BlockJson(const AllocationRecord& block) {
  return {{"api", std::string(ApiName(block.api))},
          {"kind", std::string(MemoryKindName(block.kind))},
          {"address", Hex(block.address)},
          {"bytes", block.bytes},
          {"device", block.device},
          {"thread", block.thread}};
}

}  // namespace gmt
