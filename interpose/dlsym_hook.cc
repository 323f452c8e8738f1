// dlsym: how statically linked cudart (nvcc's default) and libraries that
// dlopen the driver reach CUDA without the symbol table seeing it.
//
// Only exact names we shim are replaced; everything else is glibc's answer.
// RTLD_NEXT is resolved relative to the real caller, not to this library.
#include <dlfcn.h>
#include <link.h>

#include "interpose/driver_hooks.h"
#include "interpose/runtime_hooks.h"

namespace {

// The link map of the object containing `address`.
link_map* MapOf(const void* address) {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0) {
    return nullptr;
  }
  return map;
}

// dlsym(RTLD_NEXT, name) as the caller would have got it: the first
// definition in an object loaded after the caller's.
void* NextAfter(const void* caller, const char* name) {
  gmt::DlsymFn real = gmt::RealDlsym();
  link_map* caller_map = MapOf(caller);
  if (caller_map == nullptr) return real(RTLD_NEXT, name);
  for (link_map* map = caller_map->l_next; map != nullptr; map = map->l_next) {
    void* p = real(map, name);
    if (p != nullptr && MapOf(p) == map) return p;
  }
  return nullptr;
}

}  // namespace

GMT_SHIM void* Shim_dlsym(void* handle, const char* name) GMT_SYMBOL("dlsym");

void* Shim_dlsym(void* handle, const char* name) {
  gmt::DlsymFn real = gmt::RealDlsym();
  if (real == nullptr) return nullptr;
  void* result = handle == RTLD_NEXT
                     ? NextAfter(__builtin_return_address(0), name)
                     : real(handle, name);
  if (result == nullptr || name == nullptr || name[0] != 'c' ||
      name[1] != 'u') {
    return result;
  }
  if (const gmt::DriverHook* hook = gmt::HookForSymbol(name)) {
    if (!gmt::IsDriverShim(result)) hook->store_real(result);
    return hook->shim;
  }
  if (const gmt::RuntimeHook* hook = gmt::RuntimeHookForSymbol(name)) {
    if (!gmt::IsRuntimeShim(result)) hook->store_real(result);
    return hook->shim;
  }
  return result;
}
