// A loaded module's function symbols, sorted by address once, so that naming
// a return address is a binary search; and the loaded modules themselves.
//
// libdw names an address by a linear walk of the module's whole symbol
// table, each time: in PyTorch's libtorch_cpu.so (546 000 symbols) that is
// 9 ms per address, and an exit report of a training process names hundreds
// of such frames. Here each module's table (.symtab, else .dynsym) is read
// once with libelf (loaded at run time, as libdw is: the tool does not link
// it), its functions kept as 16-byte entries (about 6 MB for libtorch_cpu)
// with their names left in the file's string table (mapped, not copied).
// No file descriptor stays open: a program near its limit of open files
// must not meet the tool's.
//
//   LoadedModules modules;                 // dl_iterate_phdr, once
//   const LoadedModule* m = modules.At(pc);
//   auto symbols = FunctionSymbols::Read(m->path);
//   const char* mangled = symbols->NameAt(pc - m->bias);
//
// Thread safety: a FunctionSymbols is immutable once read; LoadedModules is
// not thread-safe (the symbolizer holds its own lock around it).
#ifndef GMT_LIB_STACKS_ELF_SYMBOLS_H_
#define GMT_LIB_STACKS_ELF_SYMBOLS_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gmt {

// The libelf entry points the tool uses, resolved from libelf.so.1 at run
// time; nullptr where libelf cannot be loaded. Loaded once, never unloaded.
struct ElfApi {
  decltype(&elf_version) version;
  decltype(&elf_begin) begin;
  decltype(&elf_end) end;
  decltype(&elf_nextscn) nextscn;
  decltype(&elf_getscn) getscn;
  decltype(&gelf_getshdr) getshdr;
  decltype(&elf_getdata) getdata;
  decltype(&gelf_getsym) getsym;
  decltype(&elf_strptr) strptr;
  decltype(&elf_cntl) cntl;
};
const ElfApi* LoadElfApi();

// Calls `take(const GElf_Sym&)` for each entry of a symbol table section
// (`header`, its `data`). A 64-bit table in memory form is read in place: a
// framework's module holds hundreds of thousands of symbols, and a libelf
// call per symbol costs milliseconds. Other forms go through gelf_getsym.
template <typename Take>
void ForEachSymbol(const ElfApi& api, Elf_Data* data, const GElf_Shdr& header,
                   Take&& take) {
  if (data == nullptr || header.sh_entsize == 0) return;
  const size_t count = header.sh_size / header.sh_entsize;
  const bool native64 =
      data->d_type == ELF_T_SYM && header.sh_entsize == sizeof(Elf64_Sym) &&
      data->d_size >= count * sizeof(Elf64_Sym) && data->d_buf != nullptr;
  const auto* syms64 = static_cast<const Elf64_Sym*>(data->d_buf);
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (native64) {
      sym = syms64[i];  // GElf_Sym is Elf64_Sym
    } else if (api.getsym(data, static_cast<int>(i), &sym) == nullptr) {
      return;
    }
    take(sym);
  }
}

class FunctionSymbols {
 public:
  // The function symbols (STT_FUNC, STT_GNU_IFUNC, defined, non-zero) of the
  // ELF file at `path`: its .symtab, or its .dynsym where it has none.
  // nullptr where there is no libelf, no such file, or no symbol table.
  static std::unique_ptr<FunctionSymbols> Read(const std::string& path);
  ~FunctionSymbols();
  FunctionSymbols(const FunctionSymbols&) = delete;
  FunctionSymbols& operator=(const FunctionSymbols&) = delete;

  // The mangled name of the function that covers `file_address` (the
  // run-time address less the module's load bias): the one with the highest
  // start at or below it, when the address lies inside its size (or it has
  // none); of several at one start, a global one before a weak or local one.
  // nullptr when no function covers it.
  const char* NameAt(uint64_t file_address) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t value;
    uint32_t size;  // functions are smaller than 4 GiB
    uint32_t name;  // offset in the string table
  };
  FunctionSymbols() = default;

  const ElfApi* api_ = nullptr;
  Elf* elf_ = nullptr;  // the file mapped whole; its descriptor is closed
  const char* strings_ = nullptr;  // the table's string section, mapped
  size_t strings_size_ = 0;
  std::vector<Entry> entries_;  // by value, one per start
};

// How many symbol tables FunctionSymbols::Read has read in this process.
uint64_t FunctionSymbolTablesRead();

// A module the loader has mapped: its file and load bias.
struct LoadedModule {
  std::string path;  // the main program's from /proc/self/exe
  std::string name;  // its last component
  uint64_t bias = 0;
};

// The loaded modules, from dl_iterate_phdr: which one maps an address.
class LoadedModules {
 public:
  // The module whose loaded segments hold `address`; nullptr when none. A
  // module loaded since the last look (dlopen) is found by looking again,
  // a bounded number of times.
  const LoadedModule* At(uint64_t address);

 private:
  void Refresh();
  struct Segment {
    uint64_t begin;
    uint64_t end;
    size_t module;
  };
  std::vector<LoadedModule> modules_;
  std::vector<Segment> segments_;  // sorted by begin
  int refreshes_ = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_STACKS_ELF_SYMBOLS_H_
