// ElfReader: a bounds-checked view of a little-endian ELF64 file held in
// memory — section headers, section names and bytes, and the symbol table.
//
// Both halves of a GPU core dump are ELF: the dump itself (CUDA's own section
// types, one section per table) and each module's relocated cubin inside it.
// The dump comes from a process that just faulted, so it may be cut short or
// damaged: every offset and size is checked against the buffer before it is
// used, and anything out of bounds is an absl::Status, never a read past the
// end. The reader never copies the file; it must not outlive the bytes.
//
//   absl::StatusOr<ElfReader> elf = ElfReader::Open(bytes);
//   for (const ElfSection& s : elf->sections()) { ... elf->SectionBytes(s) }
#ifndef GMT_LIB_GPU_FAULT_ELF_READER_H_
#define GMT_LIB_GPU_FAULT_ELF_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gmt::gpu_fault {

// One section header, its name already looked up.
struct ElfSection {
  uint32_t index = 0;
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t address = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t entry_size = 0;
};

// One entry of .symtab.
struct ElfSymbol {
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
  uint8_t type = 0;  // STT_*: 2 is a function
  uint16_t section = 0;
  uint32_t index = 0;  // its index in .symtab (what nvdisasm -fun takes)
};

// Little-endian reads at an offset of a span, checked. Shared by the readers
// of this folder so that no one indexes a span by hand.
class ByteCursor {
 public:
  explicit ByteCursor(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  // Each returns nullopt when [offset, offset + width) is not inside.
  std::optional<uint8_t> U8(uint64_t offset) const;
  std::optional<uint16_t> U16(uint64_t offset) const;
  std::optional<uint32_t> U32(uint64_t offset) const;
  std::optional<uint64_t> U64(uint64_t offset) const;
  // The sub-span [offset, offset + size), or nullopt when not inside.
  std::optional<absl::Span<const uint8_t>> Slice(uint64_t offset,
                                                 uint64_t size) const;
  // The NUL-terminated string at `offset` (nullopt without a NUL inside).
  std::optional<absl::string_view> CString(uint64_t offset) const;
  size_t size() const { return bytes_.size(); }

 private:
  absl::Span<const uint8_t> bytes_;
};

class ElfReader {
 public:
  // What identifies a file: e_type, e_machine and the OS/ABI byte.
  struct Identity {
    uint16_t type = 0;     // 4: a core file; 2: an executable (a cubin)
    uint16_t machine = 0;  // 190: EM_CUDA
    uint8_t os_abi = 0;    // 0x33 for CUDA
  };

  // Reads the header and every section header (and their names). Fails when
  // the bytes are not a little-endian ELF64 file or a header lies outside.
  static absl::StatusOr<ElfReader> Open(absl::Span<const uint8_t> bytes);

  const Identity& identity() const { return identity_; }
  const std::vector<ElfSection>& sections() const { return sections_; }

  // The section's contents; an error when they lie outside the file. A
  // NOBITS section (type 8) has no bytes: an empty span.
  absl::StatusOr<absl::Span<const uint8_t>> SectionBytes(
      const ElfSection& section) const;

  // The first section called `name`, or nullptr.
  const ElfSection* FindSection(absl::string_view name) const;

  // Every symbol of .symtab (empty when there is none). Names are read from
  // the section its sh_link names; an entry outside the file is an error.
  absl::StatusOr<std::vector<ElfSymbol>> Symbols() const;

  absl::Span<const uint8_t> bytes() const { return bytes_; }

 private:
  ElfReader() = default;
  absl::Span<const uint8_t> bytes_;
  Identity identity_;
  std::vector<ElfSection> sections_;
};

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_ELF_READER_H_
