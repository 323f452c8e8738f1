#include "interpose/resolve/driver_table_patch.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "interpose/resolve/driver_hooks.h"

namespace gmt {

bool ExemptFromDriverPatches(const char* name, uintptr_t base) {
  // This library's own load address, found once.
  static const uintptr_t self_base = [] {
    Dl_info self{};
    return dladdr(reinterpret_cast<const void*>(&ExemptFromDriverPatches),
                  &self) != 0
               ? reinterpret_cast<uintptr_t>(self.dli_fbase)
               : uintptr_t{0};
  }();
  if (base == self_base) return true;
  const char* file = std::strrchr(name, '/');
  file = file != nullptr ? file + 1 : name;
  static const char* const kPrefixes[] = {"libcuda.so",     "libcupti.so",
                                          "libgpumemtrace", "libnvidia-",
                                          "ld-linux",       "libc.so"};
  for (const char* prefix : kPrefixes) {
    if (std::strncmp(file, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

namespace {

struct Scan {
  const absl::flat_hash_map<uintptr_t, const DriverHook*>* real_to_hook;
  int patched = 0;
};

// Replaces matching words in [begin, end).
//
// no_sanitize("address"): the scan reads every word of other objects'
// writable segments, and in an ASan-built object those include the redzones
// ASan puts between globals (AddressSanitizer reported global-buffer-overflow
// here under tools/sanitize.sh). Such a word is only compared, never used:
// a pointer to a driver function is never a redzone's content. The word
// accesses are __atomic builtins, not std::atomic members, whose inlined
// bodies would otherwise carry the instrumentation this function turns off.
__attribute__((no_sanitize("address"))) void PatchRange(uintptr_t begin,
                                                        uintptr_t end,
                                                        Scan* scan) {
  begin = (begin + 7) & ~uintptr_t{7};
  for (uintptr_t at = begin; at + 8 <= end; at += 8) {
    auto* word = reinterpret_cast<uintptr_t*>(at);
    const uintptr_t value = __atomic_load_n(word, __ATOMIC_RELAXED);
    auto it = scan->real_to_hook->find(value);
    if (it == scan->real_to_hook->end()) continue;
    const DriverHook* hook = it->second;
    hook->store_real(reinterpret_cast<void*>(value));
    __atomic_store_n(word, reinterpret_cast<uintptr_t>(hook->shim),
                     __ATOMIC_RELEASE);
    ++scan->patched;
  }
}

int PatchObject(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<Scan*>(data);
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (ExemptFromDriverPatches(name, info->dlpi_addr)) return 0;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + ph.p_vaddr;
      relro_end = relro_begin + ph.p_memsz;
    }
  }
  constexpr uintptr_t kMaxSegment = uintptr_t{256} << 20;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0 ||
        ph.p_memsz > kMaxSegment) {
      continue;
    }
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    uintptr_t end = begin + ph.p_memsz;
    // Writable minus RELRO (at most one range, at the segment's start).
    if (relro_end > begin && relro_begin < end) {
      if (relro_begin > begin) PatchRange(begin, relro_begin, scan);
      begin = relro_end;
    }
    if (begin < end) PatchRange(begin, end, scan);
  }
  return 0;
}

}  // namespace

int PatchDriverTables() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  absl::flat_hash_map<uintptr_t, const DriverHook*> real_to_hook;
#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN)    \
  if (const DriverHook* hook = HookForSymbol(#Symbol)) {             \
    if (void* real = FindDriverSymbol(#Symbol);                      \
        real != nullptr && !IsDriverShim(real)) {                    \
      real_to_hook.emplace(reinterpret_cast<uintptr_t>(real), hook); \
    }                                                                \
  }
#include "interpose/resolve/driver_hooks.inc"
  if (real_to_hook.empty()) return 0;  // no libcuda loaded
  Scan scan;
  scan.real_to_hook = &real_to_hook;
  dl_iterate_phdr(&PatchObject, &scan);
  return scan.patched;
}

}  // namespace gmt
