// The driver hook table: for each shimmed variant, its shim and the slot for
// the real function (driver_hooks.inc lists them).
#ifndef GMT_INTERPOSE_RESOLVE_DRIVER_HOOKS_H_
#define GMT_INTERPOSE_RESOLVE_DRIVER_HOOKS_H_

#include <cstdint>
#include <type_traits>

#include "interpose/shim.h"

namespace gmt {

// The real-function slots, g_real_<Symbol>.
#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN) \
  extern RealSlot<PFN> g_real_##Symbol;
#include "interpose/resolve/driver_hooks.inc"

struct DriverHook {
  const char* base;    // "cuMemAlloc"
  const char* symbol;  // "cuMemAlloc_v2"
  int min_version;
  bool per_thread;
  void* shim;
  void (*store_real)(void*);
  void* (*real)();
};

// The shim cuGetProcAddress(base, cudaVersion, flags) should hand out, or null
// when the program must get the real function unchanged (not ours, or a
// version older than any shimmed variant).
const DriverHook* HookForProcAddress(const char* base, int cuda_version,
                                     uint64_t flags);

// The hook for an exact exported symbol name ("cuMemAlloc_v2"), or null.
const DriverHook* HookForSymbol(const char* symbol);

// Whether `p` is one of our driver shims (so it is never stored as "real").
bool IsDriverShim(const void* p);

}  // namespace gmt

// The shims themselves, exported under the CUDA names.
#define GMT_DRIVER_HOOK(Base, Symbol, MinVersion, PerThread, PFN) \
  GMT_SHIM std::remove_pointer_t<PFN> Shim_##Symbol GMT_SYMBOL(#Symbol);
#include "interpose/resolve/driver_hooks.inc"

#endif  // GMT_INTERPOSE_RESOLVE_DRIVER_HOOKS_H_
