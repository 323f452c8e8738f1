#include "lib/gpu_fault/sass_operand.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmt::gpu_fault {
namespace {

// Opcodes whose address is an offset in the block's shared window or the
// thread's local window, not a global address.
constexpr absl::string_view kWindowOpcodes[] = {
    "LDS", "STS", "LDL", "STL", "ATOMS", "LDSM", "STSM", "REDS"};

std::optional<RegisterName> ParseRegister(absl::string_view token) {
  RegisterName r;
  if (absl::ConsumePrefix(&token, "UR")) {
    r.uniform = true;
  } else if (!absl::ConsumePrefix(&token, "R")) {
    return std::nullopt;
  }
  if (absl::ConsumeSuffix(&token, ".64")) r.wide = true;
  // Other suffixes (.U32, .X4) change the width in ways not modelled here.
  if (token == "Z") {
    r.zero = true;
    return r;
  }
  if (token.empty() || !absl::ascii_isdigit(token[0])) return std::nullopt;
  if (!absl::SimpleAtoi(token, &r.index)) return std::nullopt;
  return r;
}

std::optional<int64_t> ParseImmediate(absl::string_view token) {
  bool negative = absl::ConsumePrefix(&token, "-");
  uint64_t value = 0;
  if (absl::ConsumePrefix(&token, "0x")) {
    if (!absl::SimpleHexAtoi(token, &value)) return std::nullopt;
  } else if (!absl::SimpleAtoi(token, &value)) {
    return std::nullopt;
  }
  const int64_t v = static_cast<int64_t>(value);
  return negative ? -v : v;
}

absl::StatusOr<uint64_t> ReadRegister(const RegisterName& r,
                                      absl::Span<const uint32_t> registers,
                                      absl::Span<const uint32_t> uniform) {
  if (r.zero) return 0;
  const absl::Span<const uint32_t> file = r.uniform ? uniform : registers;
  const uint32_t last = r.wide ? r.index + 1 : r.index;
  if (last >= file.size()) {
    return absl::NotFoundError(absl::StrCat(
        r.ToString(), " is not in the dump (", file.size(), " ",
        r.uniform ? "uniform " : "", "registers dumped for the lane)"));
  }
  uint64_t value = file[r.index];
  if (r.wide) value |= static_cast<uint64_t>(file[r.index + 1]) << 32;
  return value;
}

}  // namespace

std::string RegisterName::ToString() const {
  const char* prefix = uniform ? "UR" : "R";
  if (zero) return absl::StrCat(prefix, "Z");
  return absl::StrCat(prefix, index, wide ? ".64" : "");
}

absl::StatusOr<MemoryOperand> ParseMemoryOperand(
    absl::string_view instruction) {
  absl::string_view text = absl::StripAsciiWhitespace(instruction);
  absl::ConsumeSuffix(&text, ";");
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(text, "@")) {  // a predicate guard: @P0, @!PT
    const size_t space = text.find(' ');
    if (space == absl::string_view::npos) {
      return absl::InvalidArgumentError("an instruction with only a predicate");
    }
    text = absl::StripLeadingAsciiWhitespace(text.substr(space));
  }
  const absl::string_view opcode = text.substr(0, text.find_first_of(" ."));
  for (absl::string_view window : kWindowOpcodes) {
    if (opcode == window) {
      return absl::UnimplementedError(
          absl::StrCat(opcode,
                       " addresses shared or local memory: its operand is an "
                       "offset in a per-block window, not a global address"));
    }
  }
  // Every [...] group but the one that follows "desc" (the descriptor).
  std::vector<absl::string_view> groups;
  for (size_t open = text.find('['); open != absl::string_view::npos;
       open = text.find('[', open + 1)) {
    const size_t close = text.find(']', open);
    if (close == absl::string_view::npos) break;
    if (open >= 4 && text.substr(open - 4, 4) == "desc") continue;
    groups.push_back(text.substr(open, close - open + 1));
  }
  if (groups.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no memory operand in '", text, "'"));
  }
  // LDGSTS names a shared destination and a global source: the 64-bit one
  // is the global address.
  absl::string_view chosen = groups.front();
  for (absl::string_view g : groups) {
    if (absl::StrContains(g, ".64")) {
      chosen = g;
      break;
    }
  }
  MemoryOperand operand;
  operand.text = std::string(chosen);
  absl::string_view inner = chosen.substr(1, chosen.size() - 2);
  // Terms joined by '+'; a negative offset prints as "+-0x10" or "-0x10".
  std::string normalized;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '-' && i > 0 && inner[i - 1] != '+') normalized += '+';
    if (inner[i] != ' ') normalized += inner[i];
  }
  bool have_base = false;
  for (absl::string_view term : absl::StrSplit(normalized, '+')) {
    if (term.empty()) continue;
    if (std::optional<RegisterName> r = ParseRegister(term)) {
      if (!have_base) {
        operand.base = *r;
        have_base = true;
      } else if (!operand.offset_register) {
        operand.offset_register = *r;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("three registers in ", operand.text));
      }
    } else if (std::optional<int64_t> imm = ParseImmediate(term)) {
      operand.immediate += *imm;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read '", term, "' in ", operand.text));
    }
  }
  if (!have_base) {
    // An absolute address: [0x1000].
    operand.base.zero = true;
    operand.base.wide = true;
  }
  if (!operand.base.wide && !operand.base.zero && !operand.base.uniform) {
    return absl::UnimplementedError(absl::StrCat(
        operand.text, " has a 32-bit base register: not a global address"));
  }
  return operand;
}

absl::StatusOr<uint64_t> EvaluateAddress(const MemoryOperand& operand,
                                         absl::Span<const uint32_t> registers,
                                         absl::Span<const uint32_t> uniform) {
  RegisterName base = operand.base;
  // A uniform base names a 64-bit pair even without ".64".
  if (base.uniform) base.wide = true;
  absl::StatusOr<uint64_t> address = ReadRegister(base, registers, uniform);
  if (!address.ok()) return address.status();
  uint64_t value = *address;
  if (operand.offset_register) {
    absl::StatusOr<uint64_t> offset =
        ReadRegister(*operand.offset_register, registers, uniform);
    if (!offset.ok()) return offset.status();
    value += *offset;
  }
  return value + static_cast<uint64_t>(operand.immediate);
}

}  // namespace gmt::gpu_fault
