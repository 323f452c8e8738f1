#include "interpose/resolve/driver_hooks.h"

#include <cstring>

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

}  // namespace

const DriverHook* HookForProcAddress(const char* base, int cuda_version,
                                     uint64_t flags) {
  if (base == nullptr) return nullptr;
  const bool per_thread =
      (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const DriverHook* best = nullptr;
  bool has_per_thread_variant = false;
  for (const DriverHook& hook : kHooks) {
    if (std::strcmp(hook.base, base) == 0 && hook.per_thread) {
      has_per_thread_variant = true;
    }
  }
  for (const DriverHook& hook : kHooks) {
    if (std::strcmp(hook.base, base) != 0) continue;
    // Functions with a _ptsz variant: pick by the flag. Others have one
    // stream behaviour and match any flags.
    if (has_per_thread_variant && hook.per_thread != per_thread) continue;
    if (hook.min_version > cuda_version) continue;
    if (best == nullptr || hook.min_version > best->min_version) best = &hook;
  }
  for (const HookAlias& alias : kAliases) {
    if (std::strcmp(alias.base, base) != 0) continue;
    if (has_per_thread_variant && alias.per_thread != per_thread) continue;
    if (alias.min_version > cuda_version) continue;
    if (best != nullptr && best->min_version >= alias.min_version) continue;
    if (const DriverHook* hook = HookForSymbol(alias.symbol)) best = hook;
  }
  return best;
}

const DriverHook* HookForSymbol(const char* symbol) {
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return nullptr;
  for (const DriverHook& hook : kHooks) {
    if (std::strcmp(hook.symbol, symbol) == 0) return &hook;
  }
  return nullptr;
}

bool IsDriverShim(const void* p) {
  for (const DriverHook& hook : kHooks) {
    if (hook.shim == p) return true;
  }
  return false;
}

}  // namespace gmt
