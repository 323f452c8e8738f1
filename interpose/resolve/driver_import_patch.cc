#include "interpose/resolve/driver_import_patch.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

#include "interpose/resolve/driver_hooks.h"
#include "interpose/resolve/driver_table_patch.h"
#include "lib/platform/real_functions.h"

namespace gmt {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "driver_import_patch.cc: add this architecture's relocation types"
#endif

// The dynamic section's view of one object.
struct Imports {
  const ElfW(Sym) * symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  const ElfW(Rela) * jmprel = nullptr;  // the PLT's slots
  size_t jmprel_bytes = 0;
  const ElfW(Rela) * rela = nullptr;  // the rest, GLOB_DAT among them
  size_t rela_bytes = 0;
};

// The loader rewrites most d_ptr values to run-time addresses in place; the
// ones it leaves (or a read-only .dynamic) are still link-time offsets.
template <typename T>
const T* At(uintptr_t base, ElfW(Addr) p) {
  return reinterpret_cast<const T*>(p < base ? base + p : p);
}

bool ReadImports(uintptr_t base, const ElfW(Dyn) * dyn, Imports* out) {
  bool rela_plt = true;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB:
        out->symtab = At<ElfW(Sym)>(base, dyn->d_un.d_ptr);
        break;
      case DT_STRTAB:
        out->strtab = At<char>(base, dyn->d_un.d_ptr);
        break;
      case DT_STRSZ:
        out->strsz = dyn->d_un.d_val;
        break;
      case DT_JMPREL:
        out->jmprel = At<ElfW(Rela)>(base, dyn->d_un.d_ptr);
        break;
      case DT_PLTRELSZ:
        out->jmprel_bytes = dyn->d_un.d_val;
        break;
      case DT_PLTREL:
        rela_plt = dyn->d_un.d_val == DT_RELA;
        break;
      case DT_RELA:
        out->rela = At<ElfW(Rela)>(base, dyn->d_un.d_ptr);
        break;
      case DT_RELASZ:
        out->rela_bytes = dyn->d_un.d_val;
        break;
      default:
        break;
    }
  }
  // 64-bit Linux objects use RELA; anything else is not ours to read.
  if (!rela_plt) out->jmprel = nullptr;
  return out->symtab != nullptr && out->strtab != nullptr;
}

struct ObjectRanges {
  uintptr_t relro_begin = 0, relro_end = 0;
  // The object's executable segments: where an unbound slot's lazy-binding
  // stub lives.
  uintptr_t text_begin[4] = {}, text_end[4] = {};
  int texts = 0;

  bool InText(uintptr_t p) const {
    for (int i = 0; i < texts; ++i) {
      if (p >= text_begin[i] && p < text_end[i]) return true;
    }
    return false;
  }
};

// Writes `value` into the pointer-sized `slot`, through a writable mapping
// for the time of the write when the slot is in the RELRO range.
bool WriteSlot(uintptr_t slot, uintptr_t value, const ObjectRanges& ranges) {
  const bool relro = slot >= ranges.relro_begin && slot < ranges.relro_end;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page_start = reinterpret_cast<void*>(slot & ~(page - 1));
  if (relro && mprotect(page_start, page, PROT_READ | PROT_WRITE) != 0) {
    return false;
  }
  __atomic_store_n(reinterpret_cast<uintptr_t*>(slot), value, __ATOMIC_RELEASE);
  if (relro) mprotect(page_start, page, PROT_READ);
  return true;
}

void PatchRelocations(uintptr_t base, const Imports& imports,
                      const ElfW(Rela) * relocations, size_t bytes,
                      const ObjectRanges& ranges, int* patched) {
  if (relocations == nullptr) return;
  const size_t count = bytes / sizeof(ElfW(Rela));
  for (size_t i = 0; i < count; ++i) {
    const ElfW(Rela)& r = relocations[i];
    const uint32_t type = ELF64_R_TYPE(r.r_info);
    if (type != kJumpSlot && type != kGlobDat) continue;
    const ElfW(Sym)& sym = imports.symtab[ELF64_R_SYM(r.r_info)];
    // An object's own definition is not an import.
    if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;
    if (imports.strsz != 0 && sym.st_name >= imports.strsz) continue;
    const char* name = imports.strtab + sym.st_name;
    if (name[0] != 'c' || name[1] != 'u') continue;  // cheap filter
    const DriverHook* hook = HookForSymbol(name);
    if (hook == nullptr) continue;
    void* real = FindDriverSymbol(name);
    if (real == nullptr || IsDriverShim(real)) continue;
    const uintptr_t slot = base + r.r_offset;
    const uintptr_t current =
        __atomic_load_n(reinterpret_cast<uintptr_t*>(slot), __ATOMIC_ACQUIRE);
    const uintptr_t shim = reinterpret_cast<uintptr_t>(hook->shim);
    if (current == shim) continue;
    // Bound to libcuda, or not bound yet (the PLT stub, or nothing for a
    // data slot still unresolved); anything else is someone else's choice.
    if (current != reinterpret_cast<uintptr_t>(real) && current != 0 &&
        !ranges.InText(current)) {
      continue;
    }
    hook->store_real(real);
    if (WriteSlot(slot, shim, ranges)) ++*patched;
  }
}

int PatchObject(dl_phdr_info* info, size_t, void* data) {
  auto* patched = static_cast<int*>(data);
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const uintptr_t base = info->dlpi_addr;
  if (ExemptFromDriverPatches(name, base)) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  ObjectRanges ranges;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
    } else if (ph.p_type == PT_GNU_RELRO) {
      ranges.relro_begin = base + ph.p_vaddr;
      ranges.relro_end = ranges.relro_begin + ph.p_memsz;
    } else if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0 &&
               ranges.texts < 4) {
      ranges.text_begin[ranges.texts] = base + ph.p_vaddr;
      ranges.text_end[ranges.texts] = base + ph.p_vaddr + ph.p_memsz;
      ++ranges.texts;
    }
  }
  if (dyn == nullptr) return 0;  // a static object: no imports
  Imports imports;
  if (!ReadImports(base, dyn, &imports)) return 0;
  PatchRelocations(base, imports, imports.jmprel, imports.jmprel_bytes, ranges,
                   patched);
  PatchRelocations(base, imports, imports.rela, imports.rela_bytes, ranges,
                   patched);
  return 0;
}

}  // namespace

int PatchDriverImports() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int patched = 0;
  dl_iterate_phdr(&PatchObject, &patched);
  return patched;
}

}  // namespace gmt
