// Source lines of GPU code: a reader of the DWARF line program in a cubin's
// .debug_line section.
//
// `nvcc -lineinfo` (and Triton) put a .debug_line that maps SASS addresses to
// source lines (the .nv_debug_line_sass beside it maps them to PTX lines). In
// a core dump's relocated image the addresses are already the ones the code
// ran at, so an errorPC looks up directly. CUDA writes DWARF version 2;
// versions 2 to 4 are read (5 is an error that says so). Every read is
// bounds-checked: a damaged section is an error, not a crash.
#ifndef GMT_LIB_GPU_FAULT_LINE_TABLE_H_
#define GMT_LIB_GPU_FAULT_LINE_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gmt::gpu_fault {

struct SourceLine {
  std::string directory;  // as the compiler recorded it; may be empty
  std::string file;       // "wild_write.cu"
  uint32_t line = 0;

  // directory/file, or file alone.
  std::string Path() const;
};

// The line of the row that covers `address` (the last row at or before it
// in a sequence that runs past it); nullopt when no sequence covers it.
absl::StatusOr<std::optional<SourceLine>> LookUpSourceLine(
    absl::Span<const uint8_t> debug_line, uint64_t address);

}  // namespace gmt::gpu_fault

#endif  // GMT_LIB_GPU_FAULT_LINE_TABLE_H_
