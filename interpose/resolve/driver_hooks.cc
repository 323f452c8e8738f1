#include "interpose/resolve/driver_hooks.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

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

// The tables by name and by shim, built at the first lookup: a runtime
// resolves every driver entry point through cuGetProcAddress at its start
// (each library with its own runtime does it again), and some programs and
// libraries look entry points up on the way to each call; a scan of the
// whole table with a string compare per hook was ~300 compares a lookup.
struct HookIndex {
  // Every hook and alias whose base name is the key, in table order.
  absl::flat_hash_map<absl::string_view,
                      absl::InlinedVector<const DriverHook*, 2>>
      by_base;
  absl::flat_hash_map<absl::string_view,
                      absl::InlinedVector<const HookAlias*, 1>>
      aliases_by_base;
  absl::flat_hash_map<absl::string_view, const DriverHook*> by_symbol;
  absl::flat_hash_set<const void*> shims;

  HookIndex() {
    for (const DriverHook& hook : kHooks) {
      by_base[hook.base].push_back(&hook);
      by_symbol.emplace(hook.symbol, &hook);
      shims.insert(hook.shim);
    }
    for (const HookAlias& alias : kAliases) {
      aliases_by_base[alias.base].push_back(&alias);
    }
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
  const DriverHook* best = nullptr;
  const auto hooks = index.by_base.find(base);
  const auto aliases = index.aliases_by_base.find(base);
  if (hooks == index.by_base.end() && aliases == index.aliases_by_base.end()) {
    return nullptr;
  }
  bool has_per_thread_variant = false;
  if (hooks != index.by_base.end()) {
    for (const DriverHook* hook : hooks->second) {
      if (hook->per_thread) has_per_thread_variant = true;
    }
    for (const DriverHook* hook : hooks->second) {
      // Functions with a _ptsz variant: pick by the flag. Others have one
      // stream behaviour and match any flags.
      if (has_per_thread_variant && hook->per_thread != per_thread) continue;
      if (hook->min_version > cuda_version) continue;
      if (best == nullptr || hook->min_version > best->min_version) {
        best = hook;
      }
    }
  }
  if (aliases != index.aliases_by_base.end()) {
    for (const HookAlias* alias : aliases->second) {
      if (has_per_thread_variant && alias->per_thread != per_thread) continue;
      if (alias->min_version > cuda_version) continue;
      if (best != nullptr && best->min_version >= alias->min_version) continue;
      if (const DriverHook* hook = HookForSymbol(alias->symbol)) best = hook;
    }
  }
  return best;
}

const DriverHook* HookForSymbol(const char* symbol) {
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return nullptr;
  const HookIndex& index = Index();
  const auto it = index.by_symbol.find(symbol);
  return it != index.by_symbol.end() ? it->second : nullptr;
}

bool IsDriverShim(const void* p) { return Index().shims.contains(p); }

}  // namespace gmt
