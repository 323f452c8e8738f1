#include "interpose/resolve/driver_hooks.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

namespace gmt {

#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN) \
  RealSlot<PFN> g_real_##Symbol(#Symbol, true);
#include "interpose/resolve/driver_hooks.inc"

namespace {

const DriverHook kHooks[] = {
#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN) \
  {#Base,                                                         \
   #Symbol,                                                       \
   MinVersion,                                                    \
   PerThread,                                                     \
   reinterpret_cast<void*>(&Shim_##Symbol),                       \
   [](void* p) { g_real_##Symbol.Set(p); },                       \
   []() { return reinterpret_cast<void*>(g_real_##Symbol.Get()); }},
#include "interpose/resolve/driver_hooks.inc"
};

// Other base names for a hooked symbol (driver_hooks.inc).
struct HookAlias {
  const char* base;
  const char* symbol;
  int min_version;
  bool per_thread;
};
constexpr HookAlias kAliases[] = {
#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN)
#define GMT_DRIVER_HOOK_ALIAS(Base, Symbol, MinVersion, PerThread) \
  {#Base, #Symbol, MinVersion, PerThread},
#include "interpose/resolve/driver_hooks.inc"
};

// The tables sorted by name and by shim, built at the first lookup: a
// runtime resolves every driver entry point through cuGetProcAddress at its
// start (each library with its own runtime does it again), and some programs
// and libraries look entry points up on the way to each call; a scan of the
// whole table with a string compare per hook was ~300 compares a lookup, a
// binary search is ~8. Plain sorted vectors: a hash table would touch
// Abseil's thread-local hash seed, and a tool loaded by injection (dlopen)
// must not give the program's threads dynamic TLS it did not have (GCC 12's
// LeakSanitizer crashes scanning it).
struct HookIndex {
  std::vector<const DriverHook*> by_base;    // by base name, then table order
  std::vector<const DriverHook*> by_symbol;  // by symbol
  std::vector<const HookAlias*> aliases;     // by base name, then table order
  std::vector<const void*> shims;            // by address

  HookIndex() {
    for (const DriverHook& hook : kHooks) {
      by_base.push_back(&hook);
      by_symbol.push_back(&hook);
      shims.push_back(hook.shim);
    }
    for (const HookAlias& alias : kAliases) aliases.push_back(&alias);
    std::stable_sort(by_base.begin(), by_base.end(), ByBase<DriverHook>);
    std::stable_sort(aliases.begin(), aliases.end(), ByBase<HookAlias>);
    std::sort(by_symbol.begin(), by_symbol.end(),
              [](const DriverHook* a, const DriverHook* b) {
                return std::strcmp(a->symbol, b->symbol) < 0;
              });
    std::sort(shims.begin(), shims.end(), std::less<>());
  }

  template <typename T>
  static bool ByBase(const T* a, const T* b) {
    return std::strcmp(a->base, b->base) < 0;
  }

  // The entries of `sorted` whose base name is `base`, in table order.
  template <typename T>
  static std::pair<typename std::vector<const T*>::const_iterator,
                   typename std::vector<const T*>::const_iterator>
  WithBase(const std::vector<const T*>& sorted, const char* base) {
    const auto first = std::lower_bound(
        sorted.begin(), sorted.end(), base,
        [](const T* e, const char* b) { return std::strcmp(e->base, b) < 0; });
    auto last = first;
    while (last != sorted.end() && std::strcmp((*last)->base, base) == 0) {
      ++last;
    }
    return {first, last};
  }
};

const HookIndex& Index() {
  static const HookIndex* const index = new HookIndex();
  return *index;
}

}  // namespace

const DriverHook* HookForProcAddress(const char* base, int cuda_version,
                                     uint64_t flags) {
  if (base == nullptr) return nullptr;
  const HookIndex& index = Index();
  const bool per_thread =
      (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const auto [hooks_begin, hooks_end] =
      HookIndex::WithBase<DriverHook>(index.by_base, base);
  const auto [aliases_begin, aliases_end] =
      HookIndex::WithBase<HookAlias>(index.aliases, base);
  const DriverHook* best = nullptr;
  bool has_per_thread_variant = false;
  for (auto it = hooks_begin; it != hooks_end; ++it) {
    if ((*it)->per_thread) has_per_thread_variant = true;
  }
  for (auto it = hooks_begin; it != hooks_end; ++it) {
    const DriverHook* hook = *it;
    // Functions with a _ptsz variant: pick by the flag. Others have one
    // stream behaviour and match any flags.
    if (has_per_thread_variant && hook->per_thread != per_thread) continue;
    if (hook->min_version > cuda_version) continue;
    if (best == nullptr || hook->min_version > best->min_version) best = hook;
  }
  for (auto it = aliases_begin; it != aliases_end; ++it) {
    const HookAlias* alias = *it;
    if (has_per_thread_variant && alias->per_thread != per_thread) continue;
    if (alias->min_version > cuda_version) continue;
    if (best != nullptr && best->min_version >= alias->min_version) continue;
    if (const DriverHook* hook = HookForSymbol(alias->symbol)) best = hook;
  }
  return best;
}

const DriverHook* HookForSymbol(const char* symbol) {
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return nullptr;
  const std::vector<const DriverHook*>& sorted = Index().by_symbol;
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), symbol,
                                   [](const DriverHook* h, const char* s) {
                                     return std::strcmp(h->symbol, s) < 0;
                                   });
  return it != sorted.end() && std::strcmp((*it)->symbol, symbol) == 0
             ? *it
             : nullptr;
}

bool IsDriverShim(const void* p) {
  const std::vector<const void*>& shims = Index().shims;
  return std::binary_search(shims.begin(), shims.end(), p, std::less<>());
}

}  // namespace gmt
