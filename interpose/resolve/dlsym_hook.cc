// dlsym: how statically linked cudart (nvcc's default) and libraries that
// dlopen the driver reach CUDA without the symbol table seeing it.
//
// Only exact names we shim are replaced; everything else is glibc's answer.
// RTLD_NEXT is resolved relative to the real caller, not to this library.
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdint>

#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/runtime_hooks.h"

namespace {

// The link map of the object containing `address`.
GMT_NO_SANITIZE link_map* MapOf(const void* address) {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0) {
    return nullptr;
  }
  return map;
}

// ---- Symbol lookup inside one object ----------------------------------------
// NextAfter used to ask glibc's dlsym(map, name) for each object
// after the caller. A link map is a valid dlsym handle only once dlopen() has
// built its search list; for a library loaded at start-up and never dlopen()ed
// glibc crashes in the lookup. ASan and TSan resolve their interceptors with
// dlsym(RTLD_NEXT, ...) from _dl_init, so every sanitizer-built program (CUDA
// or not) crashed at start under the tool. The object's own dynamic symbol
// table is read instead. Everything here runs before sanitizer runtimes are
// initialized: no instrumentation (GMT_NO_SANITIZE), no libc string calls
// (they may be a sanitizer's interceptors, unusable that early).

GMT_NO_SANITIZE bool SameName(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

// A dynamic-section address: ld.so relocates most of them in place (x86-64);
// the vDSO's stay relative to the load base.
GMT_NO_SANITIZE ElfW(Addr)
    DynamicAddress(const link_map* map, ElfW(Addr) value) {
  return value < map->l_addr ? value + map->l_addr : value;
}

GMT_NO_SANITIZE uint32_t GnuHash(const char* name) {
  uint32_t h = 5381;
  for (const auto* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) {
    h = h * 33 + *p;
  }
  return h;
}

GMT_NO_SANITIZE uint32_t SysvHash(const char* name) {
  uint32_t h = 0;
  for (const auto* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) {
    h = (h << 4) + *p;
    uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

struct ObjectSymbols {
  const ElfW(Sym) * symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  const ElfW(Half) * versym = nullptr;
};

// Remembers symbol `index` if it defines `name` (a default version, as dlsym
// would return).
GMT_NO_SANITIZE void Consider(const ObjectSymbols& o, uint32_t index,
                              const char* name, const ElfW(Sym) * *best) {
  const ElfW(Sym)* sym = &o.symtab[index];
  if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0) return;
  const unsigned type = ELF64_ST_TYPE(sym->st_info);
  if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC &&
      type != STT_NOTYPE) {
    return;
  }
  const unsigned bind = ELF64_ST_BIND(sym->st_info);
  if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return;
  if (!SameName(name, o.strtab + sym->st_name)) return;
  // dlsym never returns a hidden (non-default) version.
  if (o.versym != nullptr && (o.versym[index] & 0x8000) != 0) return;
  if (*best == nullptr) *best = sym;
}

// The address of `name` defined in `map`'s own object, or null.
GMT_NO_SANITIZE void* LookupInObject(const link_map* map, const char* name) {
  if (map->l_ld == nullptr) return nullptr;
  ObjectSymbols o;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    const ElfW(Addr) at = DynamicAddress(map, d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB:
        o.symtab = reinterpret_cast<const ElfW(Sym)*>(at);
        break;
      case DT_STRTAB:
        o.strtab = reinterpret_cast<const char*>(at);
        break;
      case DT_GNU_HASH:
        o.gnu_hash = reinterpret_cast<const uint32_t*>(at);
        break;
      case DT_HASH:
        o.sysv_hash = reinterpret_cast<const uint32_t*>(at);
        break;
      case DT_VERSYM:
        o.versym = reinterpret_cast<const ElfW(Half)*>(at);
        break;
      default:
        break;
    }
  }
  if (o.symtab == nullptr || o.strtab == nullptr) return nullptr;
  const ElfW(Sym)* best = nullptr;
  if (o.gnu_hash != nullptr) {
    const uint32_t nbuckets = o.gnu_hash[0];
    const uint32_t symoffset = o.gnu_hash[1];
    const uint32_t bloom_words = o.gnu_hash[2];
    if (nbuckets == 0) return nullptr;
    const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(o.gnu_hash + 4);
    const auto* buckets =
        reinterpret_cast<const uint32_t*>(bloom + bloom_words);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t h = GnuHash(name);
    uint32_t index = buckets[h % nbuckets];
    if (index < symoffset) return nullptr;
    for (;; ++index) {
      const uint32_t h2 = chain[index - symoffset];
      if ((h | 1) == (h2 | 1)) Consider(o, index, name, &best);
      if ((h2 & 1) != 0) break;
    }
  } else if (o.sysv_hash != nullptr) {
    const uint32_t nbuckets = o.sysv_hash[0];
    if (nbuckets == 0) return nullptr;
    const uint32_t* buckets = o.sysv_hash + 2;
    const uint32_t* chain = buckets + nbuckets;
    for (uint32_t index = buckets[SysvHash(name) % nbuckets]; index != 0;
         index = chain[index]) {
      Consider(o, index, name, &best);
    }
  }
  if (best == nullptr) return nullptr;
  void* address = reinterpret_cast<void*>(map->l_addr + best->st_value);
  if (ELF64_ST_TYPE(best->st_info) == STT_GNU_IFUNC) {
    // What dlsym returns for an IFUNC: the implementation its resolver picks.
    address = reinterpret_cast<void* (*)()>(address)();
  }
  return address;
}

// dlsym(RTLD_NEXT, name) as the caller would have got it: the first
// definition in an object loaded after the caller's.
GMT_NO_SANITIZE void* NextAfter(const void* caller, const char* name) {
  link_map* caller_map = MapOf(caller);
  if (caller_map == nullptr) return gmt::RealDlsym()(RTLD_NEXT, name);
  for (link_map* map = caller_map->l_next; map != nullptr; map = map->l_next) {
    if (void* p = LookupInObject(map, name)) return p;
  }
  return nullptr;
}

}  // namespace

GMT_SHIM void* Shim_dlsym(void* handle, const char* name) GMT_SYMBOL("dlsym");

// GMT_NO_SANITIZE: sanitizer runtimes call this before they are initialized.
GMT_NO_SANITIZE void* Shim_dlsym(void* handle, const char* name) {
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
