#include "interpose/resolve/runtime_hooks.h"

#include <cstring>

namespace gmt {

// `Type` is a function type (a template argument): no parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GMT_RUNTIME_HOOK(Symbol, Type) \
  RealSlot<std::add_pointer_t<Type>> g_real_##Symbol(#Symbol, false);
// NOLINTEND(bugprone-macro-parentheses)
#include "interpose/resolve/runtime_hooks.inc"

namespace {

const RuntimeHook kHooks[] = {
#define GMT_RUNTIME_HOOK(Symbol, Type)               \
  {#Symbol, reinterpret_cast<void*>(&Shim_##Symbol), \
   [](void* p) { g_real_##Symbol.Set(p); }},
#include "interpose/resolve/runtime_hooks.inc"
};

}  // namespace

const RuntimeHook* RuntimeHookForSymbol(const char* symbol) {
  if (symbol == nullptr || std::strncmp(symbol, "cuda", 4) != 0) return nullptr;
  for (const RuntimeHook& hook : kHooks) {
    if (std::strcmp(hook.symbol, symbol) == 0) return &hook;
  }
  return nullptr;
}

bool IsRuntimeShim(const void* p) {
  for (const RuntimeHook& hook : kHooks) {
    if (hook.shim == p) return true;
  }
  return false;
}

}  // namespace gmt
