// The memory operand of a SASS instruction, as nvdisasm prints it, and the
// address it names for one lane given that lane's registers.
//
//   STG.E desc[UR4][R4.64+0x10], R7      base R4:R5, offset 0x10
//   LDG.E.64 R2, desc[UR6][R2.64+UR4]   base R2:R3, plus UR4
//   ST.E [R6.64], R0                     generic, base R6:R7
//
// `desc[URn]` is the memory descriptor (caching policy), not part of the
// address. Shared and local accesses (LDS, STS, LDL, STL, ATOMS) name an
// offset in a per-block window, not a global address: they are refused with
// a reason, as is any operand this parser does not know, so the caller says
// "address not derived: <why>" rather than guess.
#ifndef GMT_LIB_GPU_FAULT_SASS_OPERAND_H_
#define GMT_LIB_GPU_FAULT_SASS_OPERAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gmt::gpu_fault {

// A register as an operand names it: R4, UR6, RZ, URZ.
struct RegisterName {
  bool uniform = false;
  bool zero = false;  // RZ / URZ
  uint32_t index = 0;
  bool wide = false;  // ".64": the pair index, index + 1

  std::string ToString() const;
};

struct MemoryOperand {
  RegisterName base;
  std::optional<RegisterName> offset_register;
  int64_t immediate = 0;
  std::string text;  // "[R4.64+0x10]"
};

// The global or generic memory operand of `instruction` (nvdisasm's text of
// one instruction, predicate and trailing ';' allowed).
absl::StatusOr<MemoryOperand> ParseMemoryOperand(absl::string_view instruction);

// The address `operand` names for a lane whose registers are `registers`
// (R0, R1, ...) in a warp whose uniform registers are `uniform`. An error
// names the register the dump does not hold.
absl::StatusOr<uint64_t> EvaluateAddress(const MemoryOperand& operand,
                                         absl::Span<const uint32_t> registers,
                                         absl::Span<const uint32_t> uniform);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_SASS_OPERAND_H_
