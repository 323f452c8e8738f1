#include "lib/stacks/elf_symbols.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "lib/core/optional_library.h"

namespace gmt {
namespace {

std::atomic<uint64_t> g_tables_read{0};

// Of several functions at one address, the name a reader expects: a global
// one, then a weak one, then a file-local one.
uint32_t BindingRank(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

std::string LastComponent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string MainProgramPath() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "";
  return std::string(buffer, static_cast<size_t>(n));
}

}  // namespace

const ElfApi* LoadElfApi() {
  static const ElfApi* api = []() -> const ElfApi* {
    void* handle = OpenOptionalLibrary("libelf.so.1");
    if (handle == nullptr) return nullptr;
    auto* a = new ElfApi;
    if (!(LoadEntryPoint(handle, "elf_version", &a->version) &&
          LoadEntryPoint(handle, "elf_begin", &a->begin) &&
          LoadEntryPoint(handle, "elf_end", &a->end) &&
          LoadEntryPoint(handle, "elf_nextscn", &a->nextscn) &&
          LoadEntryPoint(handle, "elf_getscn", &a->getscn) &&
          LoadEntryPoint(handle, "gelf_getshdr", &a->getshdr) &&
          LoadEntryPoint(handle, "elf_getdata", &a->getdata) &&
          LoadEntryPoint(handle, "gelf_getsym", &a->getsym) &&
          LoadEntryPoint(handle, "elf_strptr", &a->strptr) &&
          LoadEntryPoint(handle, "elf_cntl", &a->cntl)) ||
        a->version(EV_CURRENT) == EV_NONE) {
      delete a;
      return nullptr;
    }
    return a;
  }();
  return api;
}

uint64_t FunctionSymbolTablesRead() {
  return g_tables_read.load(std::memory_order_relaxed);
}

std::unique_ptr<FunctionSymbols> FunctionSymbols::Read(
    const std::string& path) {
  const ElfApi* api = LoadElfApi();
  if (api == nullptr || path.empty()) return nullptr;
  std::unique_ptr<FunctionSymbols> out(new FunctionSymbols);
  out->api_ = api;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  out->elf_ = api->begin(fd, ELF_C_READ_MMAP, nullptr);
  // The whole file is mapped (or read): libelf needs the descriptor no more,
  // and is told so before it is closed.
  if (out->elf_ == nullptr || api->cntl(out->elf_, ELF_C_FDDONE) != 0) {
    close(fd);
    return nullptr;
  }
  close(fd);
  // .symtab (every function, file-local ones too) where the file has one;
  // a stripped library keeps only .dynsym.
  Elf_Scn* table = nullptr;
  GElf_Shdr table_header{};
  for (Elf_Scn* scn = nullptr; (scn = api->nextscn(out->elf_, scn));) {
    GElf_Shdr shdr;
    if (api->getshdr(scn, &shdr) == nullptr || shdr.sh_entsize == 0) continue;
    if (shdr.sh_type == SHT_SYMTAB ||
        (shdr.sh_type == SHT_DYNSYM && table == nullptr)) {
      table = scn;
      table_header = shdr;
    }
  }
  if (table == nullptr) return nullptr;
  Elf_Data* data = api->getdata(table, nullptr);
  Elf_Scn* strings = api->getscn(out->elf_, table_header.sh_link);
  Elf_Data* string_data =
      strings != nullptr ? api->getdata(strings, nullptr) : nullptr;
  // Names are read up to their NUL: a table whose string section does not
  // end in one is not read (a damaged file).
  if (data == nullptr || string_data == nullptr ||
      string_data->d_buf == nullptr || string_data->d_size == 0 ||
      static_cast<const char*>(string_data->d_buf)[string_data->d_size - 1] !=
          '\0') {
    return nullptr;
  }
  out->strings_ = static_cast<const char*>(string_data->d_buf);
  out->strings_size_ = string_data->d_size;
  g_tables_read.fetch_add(1, std::memory_order_relaxed);

  // The binding's rank rides in the size's top two bits while sorting.
  constexpr uint32_t kRankShift = 30;
  constexpr uint32_t kSizeMask = (uint32_t{1} << kRankShift) - 1;
  std::vector<Entry>& entries = out->entries_;
  const size_t strings_size = out->strings_size_;
  ForEachSymbol(*api, data, table_header, [&](const GElf_Sym& sym) {
    const int type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
        sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
        sym.st_name >= strings_size) {
      return;
    }
    const uint32_t size =
        static_cast<uint32_t>(std::min<uint64_t>(sym.st_size, kSizeMask));
    entries.push_back(Entry{sym.st_value,
                            size | BindingRank(sym.st_info) << kRankShift,
                            static_cast<uint32_t>(sym.st_name)});
  });
  // By start, and at one start the best-ranked name first; then one entry
  // per start.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.value != b.value ? a.value < b.value
                              : (a.size >> kRankShift) < (b.size >> kRankShift);
  });
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (kept > 0 && entries[kept - 1].value == entries[i].value) continue;
    entries[kept] = entries[i];
    entries[kept].size &= kSizeMask;
    ++kept;
  }
  entries.resize(kept);
  entries.shrink_to_fit();
  return out;
}

FunctionSymbols::~FunctionSymbols() {
  if (elf_ != nullptr) api_->end(elf_);
}

const char* FunctionSymbols::NameAt(uint64_t file_address) const {
  auto it =
      std::upper_bound(entries_.begin(), entries_.end(), file_address,
                       [](uint64_t a, const Entry& e) { return a < e.value; });
  if (it == entries_.begin()) return nullptr;
  --it;
  if (it->size != 0 && file_address - it->value >= it->size) return nullptr;
  return strings_ + it->name;
}

const LoadedModule* LoadedModules::At(uint64_t address) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), address,
        [](uint64_t a, const Segment& s) { return a < s.begin; });
    if (it != segments_.begin() && address < (it - 1)->end) {
      return &modules_[(it - 1)->module];
    }
    // Not mapped when last looked: a module loaded since (dlopen).
    if (refreshes_ >= 8) break;
    Refresh();
  }
  return nullptr;
}

void LoadedModules::Refresh() {
  ++refreshes_;
  modules_.clear();
  segments_.clear();
  struct Collect {
    std::vector<LoadedModule>* modules;
    std::vector<Segment>* segments;
  } collect{&modules_, &segments_};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Collect*>(data);
        LoadedModule m;
        m.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (m.path.empty()) m.path = MainProgramPath();
        m.name = LastComponent(m.path);
        m.bias = info->dlpi_addr;
        const size_t index = c->modules->size();
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          c->segments->push_back(
              Segment{info->dlpi_addr + ph.p_vaddr,
                      info->dlpi_addr + ph.p_vaddr + ph.p_memsz, index});
        }
        c->modules->push_back(std::move(m));
        return 0;
      },
      &collect);
  std::sort(
      segments_.begin(), segments_.end(),
      [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
}

}  // namespace gmt
