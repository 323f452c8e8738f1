// The runtime hook table: each shimmed cuda* symbol, its shim and the slot for
// the real function (runtime_hooks.inc lists them).
#ifndef GMT_INTERPOSE_RESOLVE_RUNTIME_HOOKS_H_
#define GMT_INTERPOSE_RESOLVE_RUNTIME_HOOKS_H_

#include <type_traits>

#include "interpose/shim.h"

namespace gmt {

#define GMT_RUNTIME_HOOK(Symbol, Type) \
  extern RealSlot<std::add_pointer_t<Type>> g_real_##Symbol;
#include "interpose/resolve/runtime_hooks.inc"

struct RuntimeHook {
  const char* symbol;
  void* shim;
  void (*store_real)(void*);
};

// The hook for an exact runtime symbol name, or null.
const RuntimeHook* RuntimeHookForSymbol(const char* symbol);
bool IsRuntimeShim(const void* p);

}  // namespace gmt

#define GMT_RUNTIME_HOOK(Symbol, Type) \
  GMT_SHIM std::type_identity_t<Type> Shim_##Symbol GMT_SYMBOL(#Symbol);
#include "interpose/resolve/runtime_hooks.inc"

#endif  // GMT_INTERPOSE_RESOLVE_RUNTIME_HOOKS_H_
