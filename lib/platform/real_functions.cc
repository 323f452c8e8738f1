#include "lib/platform/real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstring>

namespace gmt {
namespace {

GMT_NO_SANITIZE DlsymFn BootstrapDlsym() {
  // glibc >= 2.34 versions dlsym in libc; older ones in libdl. A plain array,
  // not an initializer_list: no out-of-line (instrumented) helper may run
  // here (GMT_NO_SANITIZE).
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5",
                                          "GLIBC_2.17"};
  for (const char* version : kVersions) {
    if (void* p = dlvsym(RTLD_NEXT, "dlsym", version)) {
      return reinterpret_cast<DlsymFn>(p);
    }
  }
  return nullptr;
}

struct Search {
  const char* prefix;
  const char* symbol;
  void* found;
};

// dl_iterate_phdr callback: the first loaded object whose basename starts with
// `prefix` and defines `symbol`.
int FindInModule(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') return 0;
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  if (std::strncmp(base, search->prefix, std::strlen(search->prefix)) != 0) {
    return 0;
  }
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  search->found = RealDlsym()(handle, search->symbol);
  dlclose(handle);
  return search->found != nullptr ? 1 : 0;
}

void* FindInLoaded(const char* prefix, const char* symbol) {
  Search search{prefix, symbol, nullptr};
  dl_iterate_phdr(FindInModule, &search);
  return search.found;
}

}  // namespace

// Not a function-local static: its guard (__cxa_guard_acquire/release) is
// intercepted by TSan, which crashes when its own init reaches here through
// dlsym. Racing first calls compute the same pointer.
static DlsymFn g_real_dlsym = nullptr;

GMT_NO_SANITIZE DlsymFn RealDlsym() {
  DlsymFn real = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
  if (real == nullptr) {
    real = BootstrapDlsym();
    __atomic_store_n(&g_real_dlsym, real, __ATOMIC_RELEASE);
  }
  return real;
}

void* FindRuntimeSymbol(const char* name) {
  DlsymFn dlsym_fn = RealDlsym();
  if (dlsym_fn == nullptr) return nullptr;
  if (void* p = dlsym_fn(RTLD_NEXT, name)) return p;
  return FindInLoaded("libcudart.so", name);
}

uint64_t LoadedObjectsAdded() {
  uint64_t adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        // The first object answers: the counter is the loader's, not its.
        if (size >=
            offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
          *static_cast<uint64_t*>(data) = info->dlpi_adds;
        }
        return 1;
      },
      &adds);
  return adds;
}

namespace {
std::atomic<uint64_t> g_real_slot_lookups{0};
}  // namespace

uint64_t RealSlotLookups() {
  return g_real_slot_lookups.load(std::memory_order_relaxed);
}

void CountRealSlotLookup() {
  g_real_slot_lookups.fetch_add(1, std::memory_order_relaxed);
}

void* FindDriverSymbol(const char* name) {
  DlsymFn dlsym_fn = RealDlsym();
  if (dlsym_fn == nullptr) return nullptr;
  // Prefer the loaded libcuda itself: RTLD_NEXT could find another shim.
  // Asked each time (it runs once per slot): the driver may be loaded later
  // than the first shim call.
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    void* p = dlsym_fn(driver, name);
    dlclose(driver);
    if (p != nullptr) return p;
  }
  if (void* p = dlsym_fn(RTLD_NEXT, name)) return p;
  return FindInLoaded("libcuda.so", name);
}

}  // namespace gmt
