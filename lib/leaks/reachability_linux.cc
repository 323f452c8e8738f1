#include "lib/leaks/reachability_linux.h"

#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "lib/core/clock.h"
#include "lib/leaks/cuda_runtime_globals.h"

namespace gmt {
namespace {

using Mapping = MappingInfo;

// /proc/self/maps, sorted by address (the kernel lists it so).
std::vector<Mapping> ReadMaps() {
  std::vector<Mapping> maps;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return maps;
  char* line = nullptr;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    // begin-end perms offset dev inode [path]
    std::vector<absl::string_view> parts =
        absl::StrSplit(absl::StripTrailingAsciiWhitespace(line),
                       absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() < 5) continue;
    std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(parts[0], '-');
    Mapping m;
    if (!absl::SimpleHexAtoi(range.first, &m.begin) ||
        !absl::SimpleHexAtoi(range.second, &m.end) || parts[1].size() < 3) {
      continue;
    }
    m.readable = parts[1][0] == 'r';
    m.writable = parts[1][1] == 'w';
    m.executable = parts[1][2] == 'x';
    m.shared = parts[1].size() >= 4 && parts[1][3] == 's';
    if (parts.size() >= 6) m.path = std::string(parts[5]);
    maps.push_back(std::move(m));
  }
  std::free(line);
  std::fclose(f);
  return maps;
}

const Mapping* FindMapping(const std::vector<Mapping>& maps, uint64_t address) {
  auto it = std::upper_bound(
      maps.begin(), maps.end(), address,
      [](uint64_t a, const Mapping& m) { return a < m.begin; });
  if (it == maps.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

// Whether pages of this process were ever written (or read) by it, from
// /proc/self/pagemap: a page neither present nor swapped out has never been
// touched, and reads as zeros (private memory) or as the file's contents.
class PagemapResidency : public PageResidency {
 public:
  PagemapResidency() : fd_(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) {}
  ~PagemapResidency() override {
    if (fd_ >= 0) close(fd_);
  }
  bool Touched(uint64_t first_page, size_t pages,
               std::vector<bool>* touched) override {
    if (fd_ < 0) return false;
    constexpr uint64_t kPresent = uint64_t{1} << 63;
    constexpr uint64_t kSwapped = uint64_t{1} << 62;
    touched->assign(pages, false);
    uint64_t entries[512];
    for (size_t done = 0; done < pages;) {
      const size_t n = std::min<size_t>(512, pages - done);
      const ssize_t got =
          pread(fd_, entries, n * sizeof(uint64_t),
                static_cast<off_t>((first_page + done) * sizeof(uint64_t)));
      if (got != static_cast<ssize_t>(n * sizeof(uint64_t))) return false;
      for (size_t i = 0; i < n; ++i) {
        (*touched)[done + i] = (entries[i] & (kPresent | kSwapped)) != 0;
      }
      done += n;
    }
    return true;
  }

 private:
  int fd_;
};

// Reads this process's memory through process_vm_readv (a bad address is a
// short read). Where the kernel or a seccomp filter refuses the call, falls
// back to memcpy of ranges that the mapping list says are readable.
//
// Two caches keep the system calls few (a Python heap holds millions of
// small objects, and pointers into a few hundred megabytes of object arenas
// that are not malloc's; one call per pointer cost seconds):
//  * small objects (up to 16 KiB) are read through a cache of whole pages,
//    one call per page;
//  * word and header reads (up to 64 bytes, within a 64-byte line: a chunk
//    header, a word after it) through a cache of lines, which Prefetch fills
//    for all the candidates of a window in a few vectored calls.
// Both are direct-mapped, in memory mapped apart from malloc after the
// mapping list was read, so the scan can never take them for an object.
class SelfReader : public MemoryReader {
 public:
  explicit SelfReader(const std::vector<Mapping>& maps)
      : maps_(maps), pid_(getpid()) {}
  ~SelfReader() override {
    if (pages_ != nullptr) munmap(pages_, kPageSlots * kPage);
    if (lines_ != nullptr) munmap(lines_, kLineSlots * kLine);
  }

  size_t Read(uint64_t address, void* out, size_t bytes) override {
    if (bytes == 0) return 0;
    if (bytes <= kLine && address % kLine + bytes <= kLine) {
      const uint8_t* line = CachedLine(address / kLine);
      if (line == nullptr) return 0;
      std::memcpy(out, line + address % kLine, bytes);
      return bytes;
    }
    if (bytes > kSmallObject) return ReadUncached(address, out, bytes);
    size_t done = 0;
    while (done < bytes) {
      const uint64_t at = address + done;
      const uint8_t* page = CachedPage(at / kPage);
      if (page == nullptr) break;
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(bytes - done, kPage - at % kPage));
      std::memcpy(static_cast<uint8_t*>(out) + done, page + at % kPage, n);
      done += n;
    }
    return done;
  }

  void PointerHoldingParts(const AddressRange& range,
                           std::vector<AddressRange>* parts) override {
    gmt::PointerHoldingParts(range, maps_, &residency_, parts);
  }

  std::optional<uint64_t> Word(uint64_t address) {
    uint64_t value = 0;
    if (Read(address, &value, sizeof(value)) != sizeof(value)) {
      return std::nullopt;
    }
    return value;
  }

  // Fills the line cache with the lines holding `addresses` (any order,
  // duplicates allowed) in vectored calls.
  void PrefetchLines(const std::vector<uint64_t>& addresses) {
    if (!EnsureCaches() || !use_syscall_) return;
    std::vector<uint64_t> lines;
    lines.reserve(addresses.size());
    for (uint64_t a : addresses) {
      const uint64_t line = a / kLine;
      if (line_tags_[line % kLineSlots] != line) lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    // One span per page, from its first wanted line to its last (the lines
    // between come along): the kernel pins a page per range it is given, and
    // that, not the bytes, is what a read of a line costs. Consecutive lines
    // sit in consecutive slots, so a span is one range of the cache too
    // (split where the slots wrap around).
    spans_.clear();
    for (size_t i = 0; i < lines.size();) {
      const uint64_t first = lines[i];
      uint64_t last = first;
      while (++i < lines.size() &&
             lines[i] / kLinesPerPage == first / kLinesPerPage &&
             lines[i] % kLineSlots > first % kLineSlots) {
        last = lines[i];
      }
      spans_.push_back({first, last - first + 1});
    }
    // Two spans of one batch may share a slot: the later one stays.
    constexpr size_t kBatch = 1024;  // IOV_MAX
    iovec local[kBatch];
    iovec remote[kBatch];
    for (size_t i = 0; i < spans_.size();) {
      const size_t n = std::min(kBatch, spans_.size() - i);
      for (size_t k = 0; k < n; ++k) {
        const auto [line, count] = spans_[i + k];
        local[k] = {lines_ + (line % kLineSlots) * kLine, count * kLine};
        remote[k] = {reinterpret_cast<void*>(line * kLine), count * kLine};
      }
      const ssize_t got = process_vm_readv(pid_, local, n, remote, n, 0);
      // The spans read whole are in; the first one that was not is left to
      // reads of its own lines (it may be unreadable), and the batch goes
      // on after it.
      size_t left = got > 0 ? static_cast<size_t>(got) : size_t{0};
      size_t k = 0;
      for (; k < n && left >= local[k].iov_len; ++k) {
        left -= local[k].iov_len;
        const auto [line, count] = spans_[i + k];
        for (uint64_t l = line; l < line + count; ++l) {
          line_tags_[l % kLineSlots] = l;
          line_readable_[l % kLineSlots] = true;
        }
      }
      i += k < n ? k + 1 : n;
    }
  }

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr uint64_t kLine = 64;
  static constexpr size_t kSmallObject = size_t{16} * 1024;
  static constexpr size_t kPageSlots = 1024;   // 4 MiB
  static constexpr size_t kLineSlots = 65536;  // 4 MiB
  static constexpr uint64_t kLinesPerPage = kPage / kLine;

  size_t ReadUncached(uint64_t address, void* out, size_t bytes) {
    if (use_syscall_) {
      iovec local{out, bytes};
      iovec remote{reinterpret_cast<void*>(address), bytes};
      ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EFAULT || errno == EIO) return 0;
      use_syscall_ = false;  // ENOSYS, EPERM: use the mapping list
    }
    size_t done = 0;
    while (done < bytes) {
      const Mapping* m = FindMapping(maps_, address + done);
      if (m == nullptr || !m->readable) break;
      size_t n = static_cast<size_t>(
          std::min<uint64_t>(bytes - done, m->end - (address + done)));
      std::memcpy(static_cast<char*>(out) + done,
                  reinterpret_cast<const void*>(address + done), n);
      done += n;
    }
    return done;
  }

  bool EnsureCaches() {
    if (pages_ != nullptr) return true;
    if (caches_failed_) return false;
    void* pages = mmap(nullptr, kPageSlots * kPage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* lines = mmap(nullptr, kLineSlots * kLine, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || lines == MAP_FAILED) {
      if (pages != MAP_FAILED) munmap(pages, kPageSlots * kPage);
      if (lines != MAP_FAILED) munmap(lines, kLineSlots * kLine);
      caches_failed_ = true;
      return false;
    }
    pages_ = static_cast<uint8_t*>(pages);
    lines_ = static_cast<uint8_t*>(lines);
    page_tags_.assign(kPageSlots, ~uint64_t{0});
    page_readable_.assign(kPageSlots, false);
    line_tags_.assign(kLineSlots, ~uint64_t{0});
    line_readable_.assign(kLineSlots, false);
    return true;
  }

  // The page's (line's) contents, or nullptr where it is not readable.
  const uint8_t* CachedPage(uint64_t page) {
    if (!EnsureCaches()) return nullptr;
    const size_t slot = static_cast<size_t>(page % kPageSlots);
    uint8_t* data = pages_ + slot * kPage;
    if (page_tags_[slot] != page) {
      page_tags_[slot] = page;
      page_readable_[slot] = ReadUncached(page * kPage, data, kPage) == kPage;
    }
    return page_readable_[slot] ? data : nullptr;
  }

  const uint8_t* CachedLine(uint64_t line) {
    if (!EnsureCaches()) return nullptr;
    const size_t slot = static_cast<size_t>(line % kLineSlots);
    uint8_t* data = lines_ + slot * kLine;
    if (line_tags_[slot] != line) {
      line_tags_[slot] = line;
      line_readable_[slot] = ReadUncached(line * kLine, data, kLine) == kLine;
    }
    return line_readable_[slot] ? data : nullptr;
  }

  const std::vector<Mapping>& maps_;
  const pid_t pid_;
  bool use_syscall_ = true;
  bool caches_failed_ = false;
  PagemapResidency residency_;
  uint8_t* pages_ = nullptr;
  uint8_t* lines_ = nullptr;
  std::vector<uint64_t> page_tags_;
  std::vector<bool> page_readable_;
  std::vector<uint64_t> line_tags_;
  std::vector<bool> line_readable_;
  std::vector<std::pair<uint64_t, uint64_t>> spans_;  // first line, count
};

// glibc chunk header bits (malloc/malloc.c).
constexpr uint64_t kPrevInUse = 1;
constexpr uint64_t kIsMmapped = 2;
constexpr uint64_t kNonMainArena = 4;
constexpr uint64_t kSizeMask = ~uint64_t{7};
constexpr uint64_t kMinChunk = 32;

// glibc (>= 2.34) stamps a per-process random key into the second word of a
// chunk freed into the tcache; older versions the tcache's address. Learned
// by freeing two chunks: a chunk carrying the key is free, not an object.
std::optional<uint64_t> LearnTcacheKey(SelfReader& reader) {
  uint64_t keys[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    void* volatile p = std::malloc(i == 0 ? 40 : 72);
    if (p == nullptr) return std::nullopt;
    uint64_t address = reinterpret_cast<uint64_t>(p);
    std::free(p);
    std::optional<uint64_t> key = reader.Word(address + 8);
    if (!key) return std::nullopt;
    keys[i] = *key;
  }
  if (keys[0] != keys[1] || keys[0] < 4096) return std::nullopt;
  return keys[0];
}

class GlibcHeap : public HeapOracle {
 public:
  GlibcHeap(const std::vector<Mapping>& maps, SelfReader& reader,
            const std::vector<uint64_t>& ignored)
      : maps_(maps), reader_(reader), ignored_(ignored) {
    // The kernel may list the brk heap as several adjacent [heap] mappings
    // (seen after a fork, and when part of it is madvised): it is one arena,
    // walked from its first chunk.
    for (const Mapping& m : maps_) {
      if (m.path != "[heap]") continue;
      if (heap_.size() == 0) {
        heap_ = AddressRange{m.begin, m.end};
      } else {
        heap_.begin = std::min(heap_.begin, m.begin);
        heap_.end = std::max(heap_.end, m.end);
      }
    }
    tcache_key_ = LearnTcacheKey(reader_);
  }

  // The chunk headers that ObjectAt will read for these words (pointers
  // into anonymous read-write memory other than [heap]), in a few calls.
  void Prefetch(const uint64_t* words, size_t count) override {
    headers_.clear();
    const Mapping* last = nullptr;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t a = words[i];
      if (a < 4096 || (a & 15) != 0 || heap_.Contains(a)) continue;
      if (last == nullptr || !last->Contains(a)) {
        last = FindMapping(maps_, a);
        if (last == nullptr) continue;
      }
      if (!last->readable || !last->writable || !last->path.empty()) continue;
      if (a - 16 >= last->begin) headers_.push_back(a - 16);
    }
    if (!headers_.empty()) reader_.PrefetchLines(headers_);
  }

  std::optional<AddressRange> ObjectAt(uint64_t address) override {
    std::optional<AddressRange> object;
    const bool main_arena = heap_.Contains(address);
    if (main_arena) {
      object = MainArenaChunk(address);  // tcache'd chunks left out already
    } else {
      object = ChunkStartingAt(address);
    }
    if (!object) return std::nullopt;
    for (uint64_t ignored : ignored_) {
      if (object->Contains(ignored)) return std::nullopt;
    }
    // The walk's window holds copies of heap words: not the program's.
    if (!window_.empty() &&
        object->Contains(reinterpret_cast<uint64_t>(window_.data()))) {
      return std::nullopt;
    }
    if (!main_arena && tcache_key_ && object->size() >= 16 &&
        reader_.Word(object->begin + 8) == tcache_key_) {
      return std::nullopt;  // freed into the tcache
    }
    return object;
  }

 private:
  // The in-use main-arena chunk holding `address` (interior too).
  std::optional<AddressRange> MainArenaChunk(uint64_t address) {
    if (!walked_) Walk();
    auto it = std::upper_bound(
        chunks_.begin(), chunks_.end(), address,
        [](uint64_t a, const AddressRange& r) { return a < r.begin; });
    if (it == chunks_.begin()) return std::nullopt;
    --it;
    if (!it->Contains(address)) return std::nullopt;
    return *it;
  }

  // A word of [heap], read through a 64 KiB window: the walk reads two
  // words per chunk, and a system call each would cost seconds on a big heap.
  std::optional<uint64_t> HeapWord(uint64_t address) {
    if (address < window_begin_ || address + 8 > window_end_) {
      window_.resize(8192);
      uint64_t begin = address & ~uint64_t{7};
      size_t want = static_cast<size_t>(
          std::min<uint64_t>(window_.size() * 8, heap_.end - begin));
      size_t got = reader_.Read(begin, window_.data(), want) & ~size_t{7};
      window_begin_ = begin;
      window_end_ = begin + got;
      if (address + 8 > window_end_) return std::nullopt;
    }
    return window_[(address - window_begin_) / 8];
  }

  // Every in-use chunk of [heap], in address order. Stops at the top chunk
  // or at the first header that does not make sense.
  void Walk() {
    walked_ = true;
    uint64_t p = heap_.begin;
    while (p + 16 <= heap_.end) {
      std::optional<uint64_t> size_field = HeapWord(p + 8);
      if (!size_field) break;
      uint64_t size = *size_field & kSizeMask;
      if (size < kMinChunk || (size & 15) != 0 || p + size > heap_.end) break;
      uint64_t next = p + size;
      if (next + 16 > heap_.end) break;  // p is the top chunk
      std::optional<uint64_t> next_size = HeapWord(next + 8);
      if (!next_size) break;
      // In use by its neighbour's PREV_INUSE bit, and not a chunk freed into
      // the tcache (which keeps that bit set) by the key in its second word.
      if ((*next_size & kPrevInUse) != 0 &&
          !(tcache_key_ && HeapWord(p + 24) == tcache_key_)) {
        // User data runs into the next chunk's prev_size field.
        chunks_.push_back(AddressRange{p + 16, next + 8});
      }
      p = next;
    }
  }

  // The chunk whose user data starts at `address` in an anonymous mapping
  // (mmapped chunks, thread arenas), if its header is consistent.
  std::optional<AddressRange> ChunkStartingAt(uint64_t address) {
    if ((address & 15) != 0) return std::nullopt;
    const Mapping* m = FindMapping(maps_, address);
    if (m == nullptr || !m->readable || !m->writable || !m->path.empty()) {
      return std::nullopt;
    }
    uint64_t chunk = address - 16;
    if (chunk < m->begin) return std::nullopt;
    uint64_t header[2];
    if (reader_.Read(chunk, header, sizeof(header)) != sizeof(header)) {
      return std::nullopt;
    }
    uint64_t size = header[1] & kSizeMask;
    if (size < kMinChunk || (size & 15) != 0 || size > m->end - chunk) {
      return std::nullopt;
    }
    if ((header[1] & kIsMmapped) != 0) {
      uint64_t base = chunk - header[0];  // prev_size: alignment padding
      if (header[0] > chunk - m->begin || (base & 4095) != 0) {
        return std::nullopt;
      }
      return AddressRange{address, chunk + size};
    }
    if ((header[1] & kNonMainArena) == 0) return std::nullopt;
    uint64_t next = chunk + size;
    if (next + 16 > m->end) return std::nullopt;  // the top chunk
    std::optional<uint64_t> next_size = reader_.Word(next + 8);
    if (!next_size || (*next_size & kPrevInUse) == 0) return std::nullopt;
    return AddressRange{address, next + 8};
  }

  const std::vector<Mapping>& maps_;
  SelfReader& reader_;
  const std::vector<uint64_t>& ignored_;
  AddressRange heap_;
  bool walked_ = false;
  std::vector<AddressRange> chunks_;
  std::vector<uint64_t> window_;
  std::vector<uint64_t> headers_;  // Prefetch's, kept for its capacity
  uint64_t window_begin_ = 0;
  uint64_t window_end_ = 0;
  std::optional<uint64_t> tcache_key_;
};

absl::string_view BaseName(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// Executable segments of the loaded modules, sorted, for telling whose code
// a value points into.
struct CodeRange {
  AddressRange range;
  bool excluded;  // a CUDA library's or the tool's
};

struct ModuleScan {
  std::vector<AddressRange> writable;  // roots
  std::vector<AddressRange> runtime;   // libcudart / libcuda images
  std::vector<std::string> labels;     // one per writable range
  // Per writable range: the module's file and load bias, for finding the
  // runtime's globals in it afterwards (not inside dl_iterate_phdr, which
  // holds the loader's lock: libelf is loaded by dlopen).
  std::vector<std::pair<std::string, uint64_t>> files;
  std::vector<CodeRange> code;  // libc and the loader left out
  // The module (its dl_iterate_phdr position) of each writable range, and
  // the executable segments of the modules whose globals are roots.
  std::vector<int> module_of_writable;
  std::vector<std::pair<AddressRange, int>> root_module_code;
  int next_module = 0;
  uint64_t modules = 0;
  uint64_t excluded = 0;
};

// libc and the loader: their code pointers (start_thread, clone) sit at the
// top of every thread's stack, whoever started it; libc's data is no root.
bool IsLibcModule(absl::string_view path) {
  absl::string_view base = BaseName(path);
  return absl::StartsWith(base, "libc.so") || absl::StartsWith(base, "ld-") ||
         absl::StartsWith(base, "libpthread") ||
         absl::StartsWith(base, "libc-");
}

// The runtime and the driver: their tables hold every device pointer.
bool IsRuntimeOrDriverModule(absl::string_view path) {
  absl::string_view base = BaseName(path);
  return absl::StartsWith(base, "libcudart") ||
         absl::StartsWith(base, "libcuda.so");
}

int CollectModule(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<ModuleScan*>(data);
  const int module = scan->next_module++;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const bool excluded = *name != '\0' && IsCudaOrToolModule(name);
  const bool libc = *name != '\0' && IsLibcModule(name);
  if (excluded) {
    ++scan->excluded;
  } else {
    ++scan->modules;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    AddressRange range{info->dlpi_addr + ph.p_vaddr,
                       info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
    if (IsRuntimeOrDriverModule(name)) scan->runtime.push_back(range);
    if ((ph.p_flags & PF_X) != 0) {
      if (!libc) scan->code.push_back(CodeRange{range, excluded});
      if (!libc && !excluded)
        scan->root_module_code.emplace_back(range, module);
    } else if (!excluded && !libc && (ph.p_flags & PF_W) != 0) {
      // libc's own data is no root either: it points at its stdio buffers
      // and malloc bookkeeping, whose unused bytes are stale heap contents
      // (seen: an 8 KiB stdout buffer holding an old copy of the tool's
      // table of blocks), never at a program's device pointer.
      scan->writable.push_back(range);
      scan->module_of_writable.push_back(module);
      scan->files.emplace_back(*name != '\0' ? name : "/proc/self/exe",
                               info->dlpi_addr);
      scan->labels.push_back(absl::StrFormat("globals of %s [0x%x, 0x%x)",
                                             *name != '\0'
                                                 ? std::string(BaseName(name))
                                                 : std::string("the program"),
                                             range.begin, range.end));
    }
  }
  return 0;
}

// The stack pointer of a blocked thread, from /proc/self/task/<tid>/syscall
// ("nr arg1..arg6 sp pc", or "-1 sp pc"; "running" when it runs, and on
// kernels that do not fill it in).
std::optional<uint64_t> BlockedThreadSp(long tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", tid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return std::nullopt;
  char text[512] = {0};
  size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  std::vector<absl::string_view> parts = absl::StrSplit(
      absl::string_view(text, n), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  if (parts.size() < 3 || parts[0] == "running") return std::nullopt;
  absl::string_view sp = parts[parts.size() - 2];
  if (absl::ConsumePrefix(&sp, "0x")) {
    uint64_t value = 0;
    if (absl::SimpleHexAtoi(sp, &value)) return value;
  }
  return std::nullopt;
}

// Whether the thread whose stack mapping is `stack` was started by a CUDA
// library or the tool. glibc puts the thread descriptor (with its start
// routine) and static TLS at the top of the mapping, and the outermost frames
// (start_thread -> start routine) right below: the first pointer into code,
// reading down from the top and skipping libc's, is the start routine's
// module. Stale frames deeper down cannot mislead this.
bool StartedByExcludedModule(SelfReader& reader, const Mapping& stack,
                             const std::vector<CodeRange>& code) {
  constexpr uint64_t kTop = uint64_t{64} * 1024;
  uint64_t begin =
      stack.end - std::min<uint64_t>(kTop, stack.end - stack.begin);
  std::vector<uint64_t> words((stack.end - begin) / 8);
  size_t got = reader.Read(begin, words.data(), words.size() * 8) / 8;
  for (size_t i = got; i-- > 0;) {
    uint64_t value = words[i];
    auto it = std::upper_bound(
        code.begin(), code.end(), value,
        [](uint64_t v, const CodeRange& c) { return v < c.range.begin; });
    if (it == code.begin()) continue;
    --it;
    if (it->range.Contains(value)) return it->excluded;
  }
  return false;
}

// Stacks of threads other than the caller: anonymous read-write mappings
// right above a PROT_NONE guard page (how glibc lays out pthread stacks).
// A guard page is a page or a few (glibc: one page, or the guard size the
// program asked for); the CUDA driver reserves gigabytes of PROT_NONE address
// space, and anonymous memory next to such a reservation is no stack. (Seen on
// the H200: the tool's timeline ring sat right above one, was scanned as a
// "thread stack", and every block looked reachable.)
constexpr uint64_t kMaxGuardBytes = uint64_t{1} << 20;

std::vector<const Mapping*> ThreadStackMappings(
    const std::vector<Mapping>& maps, uint64_t own_stack,
    const std::vector<AddressRange>& tool_ranges) {
  std::vector<const Mapping*> out;
  for (size_t i = 1; i < maps.size(); ++i) {
    const Mapping& m = maps[i];
    const Mapping& below = maps[i - 1];
    if (!m.readable || !m.writable || !m.path.empty()) continue;
    if (m.Contains(own_stack)) continue;
    if (below.end != m.begin || below.readable || below.writable ||
        below.executable || !below.path.empty() ||
        below.end - below.begin > kMaxGuardBytes) {
      continue;
    }
    bool tool = false;
    for (const AddressRange& r : tool_ranges) {
      if (r.begin < m.end && m.begin < r.end) tool = true;
    }
    if (tool) continue;
    out.push_back(&m);
  }
  return out;
}

}  // namespace

bool IsCudaOrToolModule(absl::string_view path) {
  static constexpr absl::string_view kPrefixes[] = {
      "libcuda.so",   "libcudart",     "libcupti",    "libnvidia-",
      "libnvrtc",     "libcublas",     "libcudnn",    "libnccl",
      "libcufft",     "libcurand",     "libcusparse", "libcusolver",
      "libnvJitLink", "libgpumemtrace"};
  absl::string_view base = BaseName(path);
  for (absl::string_view prefix : kPrefixes) {
    if (absl::StartsWith(base, prefix)) return true;
  }
  return false;
}

bool MappingCanHoldPointers(const MappingInfo& m) {
  if (!m.readable) return false;
  const absl::string_view path = m.path;
  if (path == "[vvar]" || path == "[vvar_vclock]" || path == "[vdso]" ||
      path == "[vsyscall]") {
    return false;
  }
  if (absl::StartsWith(path, "/dev/nvidia") ||
      absl::StartsWith(path, "/dev/dri/")) {
    return false;
  }
  const bool file_backed = absl::StartsWith(path, "/");
  return m.writable || !file_backed;
}

void PointerHoldingParts(const AddressRange& range,
                         const std::vector<MappingInfo>& maps,
                         PageResidency* residency,
                         std::vector<AddressRange>* parts) {
  constexpr uint64_t kPage = 4096;
  // Below this many pages, reading costs less than asking.
  constexpr uint64_t kAskResidencyPages = 16;
  auto it = std::upper_bound(
      maps.begin(), maps.end(), range.begin,
      [](uint64_t a, const MappingInfo& m) { return a < m.begin; });
  if (it != maps.begin() && std::prev(it)->end > range.begin) --it;
  std::vector<bool> touched;
  for (; it != maps.end() && it->begin < range.end; ++it) {
    const MappingInfo& m = *it;
    const AddressRange piece{std::max(range.begin, m.begin),
                             std::min(range.end, m.end)};
    if (piece.size() == 0 || !MappingCanHoldPointers(m)) continue;
    const uint64_t first = piece.begin / kPage;
    const uint64_t last = (piece.end - 1) / kPage;
    const uint64_t pages = last - first + 1;
    if (m.shared || residency == nullptr || pages < kAskResidencyPages ||
        !residency->Touched(first, static_cast<size_t>(pages), &touched)) {
      parts->push_back(piece);
      continue;
    }
    // Runs of touched pages, clipped to the piece.
    for (uint64_t i = 0; i < pages;) {
      if (!touched[i]) {
        ++i;
        continue;
      }
      uint64_t j = i;
      while (j < pages && touched[j]) ++j;
      parts->push_back(AddressRange{std::max(piece.begin, (first + i) * kPage),
                                    std::min(piece.end, (first + j) * kPage)});
      i = j;
    }
  }
}

ProcessReach ScanProcess(const std::vector<AddressRange>& blocks,
                         uint64_t stack_from,
                         const std::vector<uint64_t>& ignored_objects,
                         const ReachLimits& limits,
                         const std::vector<AddressRange>& tool_ranges,
                         const std::vector<uint64_t>& allocating_code) {
  const int64_t start = PreciseNowNs();
  ProcessReach out;
  std::vector<Mapping> maps = ReadMaps();
  SelfReader reader(maps);

  ModuleScan modules;
  dl_iterate_phdr(&CollectModule, &modules);
  out.modules = modules.modules;
  out.modules_excluded = modules.excluded;
  // The program's modules' globals. The CUDA runtime's own state kept among
  // them (lib/leaks/cuda_runtime_globals.h) is no root, but finding it means
  // reading the module's symbol table, and a framework's modules hold
  // millions of symbols (a PyTorch process: 195 ms for 14 modules, most of
  // its exit scan). Only a chain that starts in a module's globals can start
  // in the runtime's: the fill runs with whole ranges, then the tables of
  // the modules whose globals began a found chain are read, and if a chain
  // began in the runtime's globals the fill runs again without them. The
  // verdicts are those of a fill without them from the start: a chain that
  // begins elsewhere proves its block reachable either way.
  absl::flat_hash_map<std::string, RuntimeGlobals> runtime_globals;
  // The globals of the modules whose code allocated the blocks first: the
  // fill goes depth first and stops once every block is found, and a
  // framework's allocator keeps its blocks a few links from its own
  // globals, where the interpreter's globals lead through its whole heap
  // first (a PyTorch process: 700 ms of flood fill for one segment).
  absl::flat_hash_set<int> allocating_modules;
  for (uint64_t pc : allocating_code) {
    for (const auto& [range, module] : modules.root_module_code) {
      if (range.Contains(pc)) allocating_modules.insert(module);
    }
  }
  std::vector<size_t> order(modules.writable.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) {
    return allocating_modules.contains(modules.module_of_writable[i]);
  });

  std::sort(modules.code.begin(), modules.code.end(),
            [](const CodeRange& a, const CodeRange& b) {
              return a.range.begin < b.range.begin;
            });

  // Thread stacks, after the globals.
  std::vector<AddressRange> stack_roots;
  std::vector<std::string> stack_labels;

  // This thread: from the caller's frame to the end of its stack mapping.
  if (const Mapping* m = FindMapping(maps, stack_from)) {
    stack_roots.push_back(AddressRange{stack_from, m->end});
    stack_labels.push_back("stack of the reporting thread");
    ++out.threads;
  }
  // Every other thread. Where the kernel tells a blocked thread's stack
  // pointer, from there up (below it lie stale frames of calls that
  // returned); else the whole mapping, which may hold stale pointers (blocks
  // may look reachable, never lost wrongly).
  absl::flat_hash_map<const Mapping*, uint64_t> scan_from;
  for (const Mapping* m : ThreadStackMappings(maps, stack_from, tool_ranges)) {
    scan_from[m] = m->begin;
  }
  const long self = syscall(SYS_gettid);
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      long tid = std::strtol(entry->d_name, nullptr, 10);
      if (tid <= 0 || tid == self) continue;
      std::optional<uint64_t> sp = BlockedThreadSp(tid);
      const Mapping* m = sp ? FindMapping(maps, *sp) : nullptr;
      if (m == nullptr || !m->writable) {
        if (!sp) ++out.threads_unknown;
        continue;
      }
      if (m->Contains(stack_from)) continue;
      bool tool = false;
      for (const AddressRange& r : tool_ranges) {
        if (r.begin < m->end && m->begin < r.end) tool = true;
      }
      if (tool) continue;
      scan_from[m] = *sp;
    }
    closedir(dir);
  }
  for (const auto& [m, from] : scan_from) {
    if (StartedByExcludedModule(reader, *m, modules.code)) {
      ++out.threads_excluded;
      continue;
    }
    stack_roots.push_back(AddressRange{from, m->end});
    stack_labels.push_back(absl::StrFormat(
        "stack of another thread [0x%x, 0x%x)", m->begin, m->end));
    ++out.threads;
  }

  GlibcHeap heap(maps, reader, ignored_objects);
  for (;;) {
    // Roots: each module's globals (less the runtime's where its table was
    // read), then the stacks; `root_writable` names each root's range.
    std::vector<AddressRange> roots;
    std::vector<int64_t> root_writable;
    absl::flat_hash_set<std::string> excluded;  // runtime globals left out
    size_t near_roots = 0;  // the allocating modules' globals, searched first
    out.root_labels.clear();
    out.runtime_globals_bytes = 0;
    for (size_t i : order) {
      const AddressRange& range = modules.writable[i];
      auto it = runtime_globals.find(modules.files[i].first);
      if (it == runtime_globals.end()) {
        roots.push_back(range);
        root_writable.push_back(static_cast<int64_t>(i));
        out.root_labels.push_back(modules.labels[i]);
        continue;
      }
      excluded.insert(it->first);
      uint64_t kept = 0;
      for (const AddressRange& piece :
           SubtractRanges(range, it->second.ranges)) {
        roots.push_back(piece);
        root_writable.push_back(static_cast<int64_t>(i));
        out.root_labels.push_back(modules.labels[i]);
        kept += piece.size();
      }
      out.runtime_globals_bytes += range.size() - kept;
    }
    for (size_t i = 0; i < roots.size(); ++i) {
      if (!allocating_modules.contains(
              modules.module_of_writable[root_writable[i]])) {
        break;
      }
      near_roots = i + 1;
    }
    for (size_t i = 0; i < stack_roots.size(); ++i) {
      roots.push_back(stack_roots[i]);
      root_writable.push_back(-1);
      out.root_labels.push_back(stack_labels[i]);
    }

    const int64_t flood_start = PreciseNowNs();
    out.result = FloodFill(roots, blocks, reader, heap, limits, modules.runtime,
                           near_roots);
    out.flood_ns += PreciseNowNs() - flood_start;

    // Where each found chain begins. One that begins in the globals of a
    // module whose table was not read yet: read it now; if the chain begins
    // in the runtime's globals there, fill again without them (each round
    // leaves out at least one more module's runtime globals, so this ends).
    const int64_t symbols_start = PreciseNowNs();
    bool refill = false;
    for (size_t k = 0; k < blocks.size(); ++k) {
      const int32_t root = out.result.via_root[k];
      if (!out.result.reachable[k] || root < 0 ||
          static_cast<size_t>(root) >= root_writable.size() ||
          root_writable[root] < 0) {
        continue;
      }
      const auto& [file, bias] = modules.files[root_writable[root]];
      if (excluded.contains(file)) continue;
      auto it = runtime_globals.find(file);
      if (it == runtime_globals.end()) {
        it = runtime_globals.emplace(file, FindCudaRuntimeGlobals(file, bias))
                 .first;
        if (it->second.symbols_read) ++out.modules_with_symbols;
      }
      const uint64_t first_word = out.result.via_chain[k].empty()
                                      ? out.result.via_word[k]
                                      : out.result.via_chain[k].front().word;
      for (const AddressRange& r : it->second.ranges) {
        refill |= r.Contains(first_word);
      }
    }
    out.symbols_ns += PreciseNowNs() - symbols_start;
    if (!refill) break;
  }
  out.ns = PreciseNowNs() - start;
  return out;
}

}  // namespace gmt
