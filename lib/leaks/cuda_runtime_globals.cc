#include "lib/leaks/cuda_runtime_globals.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "lib/stacks/elf_symbols.h"

namespace gmt {
namespace {

std::vector<AddressRange> Merge(std::vector<AddressRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const AddressRange& a, const AddressRange& b) {
              return a.begin < b.begin;
            });
  std::vector<AddressRange> merged;
  for (const AddressRange& r : ranges) {
    if (!merged.empty() && r.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, r.end);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace

bool IsCudaRuntimeGlobalName(absl::string_view name) {
  if (absl::StartsWith(name, "libcudart_static_")) return true;
  if (absl::StrContains(name, "__cudaFatCubinHandle") ||
      absl::StrContains(name, "__nv_fatbinhandle_for_managed_rt") ||
      absl::StrContains(name, "__cudaPrelinkedFatbins")) {
    return true;
  }
  // A kernel stub's handle: `static cudaKernel_t __handle` inside
  // __device_stub__<kernel>, mangled _ZZ<n>__device_stub__...E8__handle.
  return absl::StartsWith(name, "_ZZ") &&
         absl::StrContains(name, "__device_stub__") &&
         absl::StrContains(name, "E8__handle");
}

namespace {

// Symbol tables read so far, by file identity, with their ranges at load
// bias 0: each module's table is read once per process, however many scans
// (or writable segments of the module) ask. Leaked on purpose: a scan may run
// during exit, after static destructors.
struct FileKey {
  std::string path;
  dev_t device;
  ino_t inode;
  off_t size;
  int64_t mtime_ns;
  bool operator==(const FileKey& o) const {
    return path == o.path && device == o.device && inode == o.inode &&
           size == o.size && mtime_ns == o.mtime_ns;
  }
  template <typename H>
  friend H AbslHashValue(H h, const FileKey& k) {
    return H::combine(std::move(h), k.path, k.device, k.inode, k.size,
                      k.mtime_ns);
  }
};
ABSL_CONST_INIT absl::Mutex g_cache_mu(absl::kConstInit);
absl::flat_hash_map<FileKey, RuntimeGlobals>* g_cache
    ABSL_GUARDED_BY(g_cache_mu) = nullptr;
std::atomic<uint64_t> g_tables_read{0};

RuntimeGlobals ReadRuntimeGlobals(const std::string& path);

}  // namespace

uint64_t CudaRuntimeGlobalsTablesRead() {
  return g_tables_read.load(std::memory_order_relaxed);
}

RuntimeGlobals FindCudaRuntimeGlobals(const std::string& path,
                                      uint64_t load_bias) {
  struct stat st {};
  std::optional<FileKey> key;
  if (stat(path.c_str(), &st) == 0) {
    key = FileKey{path, st.st_dev, st.st_ino, st.st_size,
                  int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
  }
  RuntimeGlobals at_zero;
  bool cached = false;
  if (key) {
    absl::MutexLock lock(&g_cache_mu);
    if (g_cache != nullptr) {
      if (auto it = g_cache->find(*key); it != g_cache->end()) {
        at_zero = it->second;
        cached = true;
      }
    }
  }
  if (!cached) {
    at_zero = ReadRuntimeGlobals(path);
    if (key) {
      absl::MutexLock lock(&g_cache_mu);
      if (g_cache == nullptr) {
        g_cache = new absl::flat_hash_map<FileKey, RuntimeGlobals>;
      }
      g_cache->try_emplace(*key, at_zero);
    }
  }
  RuntimeGlobals out = std::move(at_zero);
  for (AddressRange& r : out.ranges) {
    r.begin += load_bias;
    r.end += load_bias;
  }
  return out;
}

namespace {

// The runtime's globals of the module file `path`, at load bias 0.
RuntimeGlobals ReadRuntimeGlobals(const std::string& path) {
  const uint64_t load_bias = 0;
  RuntimeGlobals out;
  const ElfApi* api = LoadElfApi();
  if (api == nullptr) {
    out.note = "libelf.so.1 not found";
    return out;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.note = absl::StrCat("cannot open ", path);
    return out;
  }
  Elf* elf = api->begin(fd, ELF_C_READ_MMAP, nullptr);
  std::vector<AddressRange> found;
  if (elf == nullptr) {
    out.note = absl::StrCat(path, " is no ELF file libelf reads");
  } else {
    Elf_Scn* scn = nullptr;
    while ((scn = api->nextscn(elf, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (api->getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_SYMTAB ||
          shdr.sh_entsize == 0) {
        continue;
      }
      out.symbols_read = true;
      Elf_Data* data = api->getdata(scn, nullptr);
      if (data == nullptr) continue;
      ForEachSymbol(*api, data, shdr, [&](const GElf_Sym& sym) {
        // Objects with an extent only: TLS symbols' values are offsets in
        // the TLS block, not addresses.
        if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size == 0 ||
            sym.st_shndx == SHN_UNDEF) {
          return;
        }
        const char* name = api->strptr(elf, shdr.sh_link, sym.st_name);
        if (name == nullptr || !IsCudaRuntimeGlobalName(name)) return;
        found.push_back(AddressRange{load_bias + sym.st_value,
                                     load_bias + sym.st_value + sym.st_size});
      });
    }
    if (!out.symbols_read) out.note = absl::StrCat(path, " has no .symtab");
    api->end(elf);
  }
  close(fd);
  g_tables_read.fetch_add(1, std::memory_order_relaxed);
  out.ranges = Merge(std::move(found));
  return out;
}

}  // namespace

std::vector<AddressRange> SubtractRanges(
    const AddressRange& range, const std::vector<AddressRange>& holes) {
  std::vector<AddressRange> pieces;
  uint64_t at = range.begin;
  for (const AddressRange& hole : holes) {
    if (hole.end <= at) continue;
    if (hole.begin >= range.end) break;
    if (hole.begin > at) pieces.push_back(AddressRange{at, hole.begin});
    at = std::max(at, hole.end);
    if (at >= range.end) break;
  }
  if (at < range.end) pieces.push_back(AddressRange{at, range.end});
  return pieces;
}

}  // namespace gmt
