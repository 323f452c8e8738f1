// Finding the real CUDA functions behind the shims.
//
// The library links no CUDA library: the traced process brings its own
// runtime and driver, and the shims find them at run time.
#ifndef GMT_LIB_PLATFORM_REAL_FUNCTIONS_H_
#define GMT_LIB_PLATFORM_REAL_FUNCTIONS_H_

#include <atomic>
#include <cstdint>

namespace gmt {

// Marks code that a sanitizer runtime reaches through our dlsym while it
// initializes: ASan resolves its interceptors with dlsym(RTLD_NEXT, ...) from
// _dl_init, before its shadow memory exists, so in an instrumented build of
// the tool (tools/sanitize.sh) any instrumented access there crashes. No
// effect on a normal build.
#define GMT_NO_SANITIZE \
  __attribute__((no_sanitize("address", "thread", "undefined")))

// glibc's dlsym, bootstrapped with dlvsym because ours shadows it.
using DlsymFn = void* (*)(void*, const char*);
GMT_NO_SANITIZE DlsymFn RealDlsym();

// A runtime function (cuda*) by exact symbol name: the next definition after
// this library, else the one in any loaded libcudart (a copy loaded
// RTLD_LOCAL is invisible to RTLD_NEXT). Null if no runtime is loaded.
void* FindRuntimeSymbol(const char* name);

// A driver function (cu*) by exact exported name, from the loaded libcuda.
// Null if the driver is not loaded.
void* FindDriverSymbol(const char* name);

// How many shared objects the dynamic loader has loaded so far (glibc's
// dlpi_adds): it changes whenever a library is loaded. 0 where unknown.
uint64_t LoadedObjectsAdded();

// How many by-name lookups RealSlot has made (its misses included).
uint64_t RealSlotLookups();
void CountRealSlotLookup();

// A lazily filled slot holding one real function. `Get` resolves it by name on
// first use unless a hook (dlsym, cuGetProcAddress) already stored the pointer
// the program was given. A name not found is looked up again only once the
// loader has loaded another object (the runtime or driver may come later): a
// lookup that fails searches the library path, and a function the program's
// driver lacks, or a runtime a static-cudart program does not load, cost that
// search on every call (17 us a call in the stand-in benchmark).
template <typename Fn>
class RealSlot {
 public:
  explicit constexpr RealSlot(const char* name, bool driver)
      : name_(name), driver_(driver) {}

  Fn Get() {
    void* p = ptr_.load(std::memory_order_acquire);
    if (p == nullptr) {
      const uint64_t adds = LoadedObjectsAdded();
      if (adds != 0 && adds == missed_at_.load(std::memory_order_acquire)) {
        return nullptr;
      }
      CountRealSlotLookup();
      p = driver_ ? FindDriverSymbol(name_) : FindRuntimeSymbol(name_);
      if (p == nullptr) {
        missed_at_.store(adds, std::memory_order_release);
        return nullptr;
      }
      Set(p);
      p = ptr_.load(std::memory_order_acquire);
    }
    return reinterpret_cast<Fn>(p);
  }
  // Keeps the first non-null pointer stored; a hook and a lazy lookup may race,
  // and both find the same function.
  void Set(void* p) {
    if (p == nullptr) return;
    void* expected = nullptr;
    ptr_.compare_exchange_strong(expected, p, std::memory_order_acq_rel);
  }
  const char* name() const { return name_; }

 private:
  const char* const name_;
  const bool driver_;
  std::atomic<void*> ptr_{nullptr};
  // LoadedObjectsAdded() when a lookup last found nothing.
  std::atomic<uint64_t> missed_at_{0};
};

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_REAL_FUNCTIONS_H_
