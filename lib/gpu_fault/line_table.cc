#include "lib/gpu_fault/line_table.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/gpu_fault/elf_reader.h"

namespace gmt::gpu_fault {
namespace {

// A forward reader over one unit; any read past `end` marks it failed, and
// the caller checks once per step.
class Reader {
 public:
  Reader(absl::Span<const uint8_t> bytes, uint64_t at, uint64_t end)
      : in_(bytes), at_(at), end_(end) {}

  bool failed() const { return failed_; }
  uint64_t at() const { return at_; }
  bool done() const { return at_ >= end_; }

  uint64_t Fixed(int width) {
    if (failed_ || width > 8 || at_ > end_ ||
        end_ - at_ < static_cast<uint64_t>(width)) {
      failed_ = true;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | *in_.U8(at_ + i);
    at_ += width;
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; !failed_; shift += 7) {
      const uint8_t b = static_cast<uint8_t>(Fixed(1));
      if (shift < 64) v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      b = static_cast<uint8_t>(Fixed(1));
      if (shift < 64) v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) != 0 && !failed_);
    if (shift < 64 && (b & 0x40) != 0) v |= -(static_cast<int64_t>(1) << shift);
    return v;
  }
  std::string String() {
    if (failed_ || at_ >= end_) {
      failed_ = true;
      return "";
    }
    const auto s = in_.CString(at_);
    if (!s || at_ + s->size() >= end_) {
      failed_ = true;
      return "";
    }
    at_ += s->size() + 1;
    return std::string(*s);
  }
  void JumpTo(uint64_t at) {
    if (at > end_ || at < at_) {
      failed_ = true;
      return;
    }
    at_ = at;
  }

 private:
  ByteCursor in_;
  uint64_t at_;
  uint64_t end_;
  bool failed_ = false;
};

struct FileEntry {
  std::string name;
  uint64_t directory = 0;
};

absl::Status Damaged(uint64_t unit, absl::string_view what) {
  return absl::DataLossError(
      absl::StrFormat(".debug_line unit at offset %d: %s", unit, what));
}

}  // namespace

std::string SourceLine::Path() const {
  if (directory.empty() || (!file.empty() && file[0] == '/')) return file;
  return absl::StrCat(directory, "/", file);
}

absl::StatusOr<std::optional<SourceLine>> LookUpSourceLine(
    absl::Span<const uint8_t> debug_line, uint64_t address) {
  uint64_t unit = 0;
  while (unit < debug_line.size()) {
    Reader r(debug_line, unit, debug_line.size());
    uint64_t length = r.Fixed(4);
    int offset_size = 4;
    if (length == 0xffffffffu) {
      length = r.Fixed(8);
      offset_size = 8;
    }
    if (r.failed() || length > debug_line.size() - r.at()) {
      return Damaged(unit, "its length runs past the section");
    }
    const uint64_t unit_end = r.at() + length;
    Reader h(debug_line, r.at(), unit_end);
    const uint64_t version = h.Fixed(2);
    if (version == 5) {
      return absl::UnimplementedError(
          ".debug_line is DWARF 5, which this reader does not read (CUDA "
          "writes version 2)");
    }
    if (version < 2 || version > 4) {
      return Damaged(unit, absl::StrFormat("DWARF version %d", version));
    }
    const uint64_t header_length = h.Fixed(offset_size);
    const uint64_t program_start = h.at() + header_length;
    const uint8_t min_instruction = static_cast<uint8_t>(h.Fixed(1));
    if (version >= 4) h.Fixed(1);  // maximum_operations_per_instruction
    h.Fixed(1);                    // default_is_stmt
    const int8_t line_base = static_cast<int8_t>(h.Fixed(1));
    const uint8_t line_range = static_cast<uint8_t>(h.Fixed(1));
    const uint8_t opcode_base = static_cast<uint8_t>(h.Fixed(1));
    std::vector<uint8_t> opcode_lengths;
    for (int i = 1; i < opcode_base && !h.failed(); ++i) {
      opcode_lengths.push_back(static_cast<uint8_t>(h.Fixed(1)));
    }
    std::vector<std::string> directories = {""};  // 0: the unit's own
    while (!h.failed()) {
      std::string d = h.String();
      if (d.empty()) break;
      directories.push_back(std::move(d));
    }
    std::vector<FileEntry> files = {FileEntry{}};  // entries count from 1
    while (!h.failed()) {
      std::string name = h.String();
      if (name.empty()) break;
      FileEntry f{std::move(name), h.Uleb()};
      h.Uleb();  // modification time
      h.Uleb();  // length
      files.push_back(std::move(f));
    }
    if (h.failed() || line_range == 0 || program_start > unit_end) {
      return Damaged(unit, "its header is damaged");
    }

    // The state machine of DWARF's line program (section 6.2), keeping only
    // the row that covers `address`.
    Reader p(debug_line, program_start, unit_end);
    uint64_t pc = 0;
    int64_t line = 1;
    uint64_t file = 1;
    bool have_previous = false;
    uint64_t previous_pc = 0;
    int64_t previous_line = 0;
    uint64_t previous_file = 0;
    std::optional<SourceLine> found;
    auto emit = [&](bool end_sequence) {
      if (have_previous && previous_pc <= address && address < pc &&
          !found.has_value()) {
        SourceLine s;
        if (previous_file < files.size()) {
          s.file = files[previous_file].name;
          const uint64_t dir = files[previous_file].directory;
          if (dir < directories.size()) s.directory = directories[dir];
        }
        s.line = static_cast<uint32_t>(previous_line);
        found = std::move(s);
      }
      have_previous = !end_sequence;
      previous_pc = pc;
      previous_line = line;
      previous_file = file;
    };
    while (!p.done() && !p.failed()) {
      const uint8_t opcode = static_cast<uint8_t>(p.Fixed(1));
      if (opcode >= opcode_base) {
        const uint8_t adjusted = opcode - opcode_base;
        pc += static_cast<uint64_t>(adjusted / line_range) * min_instruction;
        line += line_base + adjusted % line_range;
        emit(false);
        continue;
      }
      switch (opcode) {
        case 0: {  // extended
          const uint64_t len = p.Uleb();
          const uint64_t start = p.at();
          if (len == 0) break;
          const uint8_t sub = static_cast<uint8_t>(p.Fixed(1));
          if (sub == 1) {  // end_sequence
            emit(true);
            pc = 0;
            line = 1;
            file = 1;
          } else if (sub == 2 && len - 1 <= 8) {  // set_address
            pc = p.Fixed(static_cast<int>(len - 1));
          }
          if (!p.failed() && start + len >= start) p.JumpTo(start + len);
          break;
        }
        case 1:  // copy
          emit(false);
          break;
        case 2:  // advance_pc
          pc += p.Uleb() * min_instruction;
          break;
        case 3:  // advance_line
          line += p.Sleb();
          break;
        case 4:  // set_file
          file = p.Uleb();
          break;
        case 8:  // const_add_pc
          pc += static_cast<uint64_t>((255 - opcode_base) / line_range) *
                min_instruction;
          break;
        case 9:  // fixed_advance_pc
          pc += p.Fixed(2);
          break;
        default:  // set_column, negate_stmt, ...: skip their operands
          for (int i = 0; i < opcode_lengths[opcode - 1] && !p.failed(); ++i) {
            p.Uleb();
          }
          break;
      }
    }
    if (p.failed()) return Damaged(unit, "its line program runs past its end");
    if (found) return found;
    unit = unit_end;
  }
  return std::optional<SourceLine>();
}

}  // namespace gmt::gpu_fault
