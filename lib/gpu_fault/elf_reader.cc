#include "lib/gpu_fault/elf_reader.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace gmt::gpu_fault {
namespace {

constexpr uint64_t kElfHeaderSize = 64;
constexpr uint64_t kSectionHeaderSize = 64;
constexpr uint64_t kSymbolSize = 24;
constexpr uint32_t kSectionTypeSymbolTable = 2;
constexpr uint32_t kSectionTypeNoBits = 8;
// e_shnum == 0 and e_shstrndx == SHN_XINDEX: the real values are in section
// 0 (a file with more than 0xff00 sections, as a full dump can be).
constexpr uint16_t kSectionIndexExtended = 0xffff;

}  // namespace

std::optional<uint8_t> ByteCursor::U8(uint64_t offset) const {
  if (offset >= bytes_.size()) return std::nullopt;
  return bytes_[offset];
}

std::optional<uint16_t> ByteCursor::U16(uint64_t offset) const {
  auto s = Slice(offset, 2);
  if (!s) return std::nullopt;
  return static_cast<uint16_t>((*s)[0] | ((*s)[1] << 8));
}

std::optional<uint32_t> ByteCursor::U32(uint64_t offset) const {
  auto s = Slice(offset, 4);
  if (!s) return std::nullopt;
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | (*s)[i];
  return v;
}

std::optional<uint64_t> ByteCursor::U64(uint64_t offset) const {
  auto s = Slice(offset, 8);
  if (!s) return std::nullopt;
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | (*s)[i];
  return v;
}

std::optional<absl::Span<const uint8_t>> ByteCursor::Slice(
    uint64_t offset, uint64_t size) const {
  // Written so that neither sum can wrap.
  if (offset > bytes_.size() || size > bytes_.size() - offset) {
    return std::nullopt;
  }
  return bytes_.subspan(offset, size);
}

std::optional<absl::string_view> ByteCursor::CString(uint64_t offset) const {
  if (offset >= bytes_.size()) return std::nullopt;
  const void* start = bytes_.data() + offset;
  const void* nul = std::memchr(start, 0, bytes_.size() - offset);
  if (nul == nullptr) return std::nullopt;
  return absl::string_view(
      static_cast<const char*>(start),
      static_cast<const char*>(nul) - static_cast<const char*>(start));
}

absl::StatusOr<ElfReader> ElfReader::Open(absl::Span<const uint8_t> bytes) {
  const ByteCursor in(bytes);
  if (bytes.size() < kElfHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "not an ELF file: %d bytes, shorter than an ELF header", bytes.size()));
  }
  if (std::memcmp(bytes.data(),
                  "\x7f"
                  "ELF",
                  4) != 0) {
    return absl::InvalidArgumentError("not an ELF file (no ELF magic)");
  }
  if (bytes[4] != 2 || bytes[5] != 1) {
    return absl::InvalidArgumentError(
        "not a little-endian 64-bit ELF file, as CUDA writes them");
  }
  ElfReader elf;
  elf.bytes_ = bytes;
  elf.identity_.os_abi = bytes[7];
  elf.identity_.type = *in.U16(16);
  elf.identity_.machine = *in.U16(18);
  const uint64_t section_table = *in.U64(40);
  const uint16_t entry_size = *in.U16(58);
  uint64_t count = *in.U16(60);
  uint32_t names_index = *in.U16(62);
  if (section_table == 0) return elf;  // no sections at all
  if (entry_size < kSectionHeaderSize) {
    return absl::DataLossError(
        absl::StrFormat("section header size %d is below ELF64's %d",
                        entry_size, kSectionHeaderSize));
  }
  if (count == 0 || names_index == kSectionIndexExtended) {
    const auto real_count = in.U64(section_table + 32);
    const auto real_names = in.U32(section_table + 40);
    if (!real_count || !real_names) {
      return absl::DataLossError(absl::StrFormat(
          "section header 0 at offset %d lies past the end of the file (%d "
          "bytes)",
          section_table, bytes.size()));
    }
    if (count == 0) count = *real_count;
    if (names_index == kSectionIndexExtended) names_index = *real_names;
  }
  // Checked before anything is allocated: a damaged count must not make the
  // reader reserve gigabytes.
  if (count > bytes.size() / entry_size ||
      !in.Slice(section_table, count * entry_size)) {
    return absl::DataLossError(absl::StrFormat(
        "the section headers (%d of %d bytes at offset %d) run past the end "
        "of the file (%d bytes): the file is truncated or damaged",
        count, entry_size, section_table, bytes.size()));
  }
  if (names_index >= count) {
    return absl::DataLossError(absl::StrFormat(
        "section name table index %d is not a section (%d sections)",
        names_index, count));
  }
  elf.sections_.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = section_table + i * entry_size;
    ElfSection& s = elf.sections_[i];
    s.index = static_cast<uint32_t>(i);
    s.type = *in.U32(at + 4);
    s.flags = *in.U64(at + 8);
    s.address = *in.U64(at + 16);
    s.offset = *in.U64(at + 24);
    s.size = *in.U64(at + 32);
    s.link = *in.U32(at + 40);
    s.info = *in.U32(at + 44);
    s.entry_size = *in.U64(at + 56);
  }
  const ElfSection& names = elf.sections_[names_index];
  const auto name_bytes = in.Slice(names.offset, names.size);
  if (!name_bytes) {
    return absl::DataLossError(absl::StrFormat(
        "the section name table (%d bytes at offset %d) runs past the end of "
        "the file (%d bytes)",
        names.size, names.offset, bytes.size()));
  }
  const ByteCursor name_table(*name_bytes);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t name_offset = *in.U32(section_table + i * entry_size);
    const auto name = name_table.CString(name_offset);
    if (!name) {
      return absl::DataLossError(absl::StrFormat(
          "section %d: its name (offset %d) is not inside the name table", i,
          name_offset));
    }
    elf.sections_[i].name = std::string(*name);
  }
  return elf;
}

absl::StatusOr<absl::Span<const uint8_t>> ElfReader::SectionBytes(
    const ElfSection& section) const {
  if (section.type == kSectionTypeNoBits) return absl::Span<const uint8_t>();
  const auto slice = ByteCursor(bytes_).Slice(section.offset, section.size);
  if (!slice) {
    return absl::DataLossError(absl::StrFormat(
        "section %d (%s): %d bytes at offset %d run past the end of the file "
        "(%d bytes)",
        section.index, section.name, section.size, section.offset,
        bytes_.size()));
  }
  return *slice;
}

const ElfSection* ElfReader::FindSection(absl::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::StatusOr<std::vector<ElfSymbol>> ElfReader::Symbols() const {
  std::vector<ElfSymbol> symbols;
  const ElfSection* table = nullptr;
  for (const ElfSection& s : sections_) {
    if (s.type == kSectionTypeSymbolTable) {
      table = &s;
      break;
    }
  }
  if (table == nullptr) return symbols;
  if (table->link >= sections_.size()) {
    return absl::DataLossError(absl::StrFormat(
        "the symbol table's string table (section %d) does not exist",
        table->link));
  }
  absl::StatusOr<absl::Span<const uint8_t>> entries = SectionBytes(*table);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<absl::Span<const uint8_t>> strings =
      SectionBytes(sections_[table->link]);
  if (!strings.ok()) return strings.status();
  const ByteCursor in(*entries);
  const ByteCursor names(*strings);
  const uint64_t count = entries->size() / kSymbolSize;
  symbols.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = i * kSymbolSize;
    ElfSymbol sym;
    sym.index = static_cast<uint32_t>(i);
    const uint32_t name_offset = *in.U32(at);
    sym.type = *in.U8(at + 4) & 0xf;
    sym.section = *in.U16(at + 6);
    sym.value = *in.U64(at + 8);
    sym.size = *in.U64(at + 16);
    const auto name = names.CString(name_offset);
    if (!name) {
      return absl::DataLossError(absl::StrFormat(
          "symbol %d: its name (offset %d) is not inside the string table", i,
          name_offset));
    }
    sym.name = std::string(*name);
    symbols.push_back(std::move(sym));
  }
  return symbols;
}

}  // namespace gmt::gpu_fault
