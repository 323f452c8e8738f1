#include "cli/preload_library.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifndef GMT_INSTALL_LIBDIR
#define GMT_INSTALL_LIBDIR "lib"
#endif

namespace gmt::cli {
namespace {

constexpr absl::string_view kLibraryName = "libgpumemtrace.so";

bool IsReadableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), R_OK) == 0;
}

// A bounds-checked view of the file's bytes.
template <typename T>
bool ReadAt(const std::string& bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

std::vector<std::string> LibraryCandidates(absl::string_view launcher_dir,
                                           absl::string_view env_library) {
  if (!env_library.empty()) return {std::string(env_library)};
  std::vector<std::string> out = {
      absl::StrCat(launcher_dir, "/../lib/", kLibraryName),
      absl::StrCat(launcher_dir, "/../", GMT_INSTALL_LIBDIR, "/", kLibraryName),
      absl::StrCat(launcher_dir, "/../interpose/", kLibraryName),
      absl::StrCat(launcher_dir, "/", kLibraryName),
  };
  if (out[1] == out[0]) out.erase(out.begin() + 1);
  return out;
}

std::string FindLibrary(absl::string_view launcher_dir,
                        absl::string_view env_library, std::string* error) {
  const std::vector<std::string> candidates =
      LibraryCandidates(launcher_dir, env_library);
  for (const std::string& path : candidates) {
    if (!IsReadableFile(path)) continue;
    char* real = realpath(path.c_str(), nullptr);
    if (real == nullptr) continue;
    std::string absolute = real;
    free(real);
    return absolute;
  }
  if (!env_library.empty()) {
    *error = absl::StrCat("GMT_LIBRARY is '", env_library,
                          "', which is not a readable file");
  } else {
    *error = absl::StrCat("cannot find ", kLibraryName, " (tried ",
                          absl::StrJoin(candidates, ", "),
                          "); set GMT_LIBRARY to its path");
  }
  return "";
}

bool ElfExports(const std::string& path, absl::string_view symbol) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  // The whole file: libgpumemtrace.so is a few MiB. Refuse huge inputs.
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size <= 0 || size > (std::streamoff{1} << 30)) return false;
  in.seekg(0);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!in.read(bytes.data(), size)) return false;

  Elf64_Ehdr eh;
  if (!ReadAt(bytes, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return false;
  }
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!ReadAt(bytes, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sh)) {
      return false;
    }
    if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize != sizeof(Elf64_Sym)) {
      continue;
    }
    Elf64_Shdr strtab;
    if (sh.sh_link >= eh.e_shnum ||
        !ReadAt(bytes, eh.e_shoff + uint64_t{sh.sh_link} * sizeof(Elf64_Shdr),
                &strtab) ||
        strtab.sh_offset > bytes.size() ||
        bytes.size() - strtab.sh_offset < strtab.sh_size) {
      return false;
    }
    const absl::string_view names(bytes.data() + strtab.sh_offset,
                                  strtab.sh_size);
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size;
         off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      if (!ReadAt(bytes, sh.sh_offset + off, &sym)) return false;
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= names.size()) continue;
      const int visibility = ELF64_ST_VISIBILITY(sym.st_other);
      const int binding = ELF64_ST_BIND(sym.st_info);
      if (visibility != STV_DEFAULT && visibility != STV_PROTECTED) continue;
      if (binding != STB_GLOBAL && binding != STB_WEAK) continue;
      absl::string_view name = names.substr(sym.st_name);
      name = name.substr(0, name.find('\0'));
      if (name == symbol) return true;
    }
  }
  return false;
}

}  // namespace gmt::cli
