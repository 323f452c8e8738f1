// Finding libgpumemtrace.so for `gpumemtrace run`, and reading what it
// exports without loading it (loading it would start the tracer in the
// launcher itself).
#ifndef GMT_CLI_PRELOAD_LIBRARY_H_
#define GMT_CLI_PRELOAD_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gmt::cli {

// Where to look, in order: `env_library` (GMT_LIBRARY) when set, and then,
// relative to the directory of the launcher executable: ../lib (the bundle
// tools/device_bundle.sh makes and a plain install), ../<libdir> (install
// with a multiarch libdir), ../interpose (the build tree), and the
// launcher's own directory.
std::vector<std::string> LibraryCandidates(absl::string_view launcher_dir,
                                           absl::string_view env_library);

// The first candidate that is a readable regular file, as an absolute path
// (LD_PRELOAD must not depend on the program's working directory). On
// failure returns "" and sets `error` to a sentence listing what was tried.
std::string FindLibrary(absl::string_view launcher_dir,
                        absl::string_view env_library, std::string* error);

// Whether the ELF shared object at `path` exports (defines, with default or
// protected visibility, in .dynsym) a function or object named `symbol`.
// False for anything unreadable or not a 64-bit little-endian ELF file.
bool ElfExports(const std::string& path, absl::string_view symbol);

}  // namespace gmt::cli

#endif  // GMT_CLI_PRELOAD_LIBRARY_H_
