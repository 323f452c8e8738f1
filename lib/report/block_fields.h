// How the report writers spell an address and a block, so that the JSON
// report and its crash section (and the HTML page) cannot drift apart.
#ifndef GMT_LIB_REPORT_BLOCK_FIELDS_H_
#define GMT_LIB_REPORT_BLOCK_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "lib/registry/registry.h"

namespace gmt {

// "0x7f0000001000".
std::string Hex(uint64_t value);

// A block's fields in every JSON section that lists one: api, kind, address,
// bytes, device, thread. Sections add their own (its stack, its time).
nlohmann::json BlockJson(const AllocationRecord& block);

}  // namespace gmt

#endif  // GMT_LIB_REPORT_BLOCK_FIELDS_H_
