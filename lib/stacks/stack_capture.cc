#include "lib/stacks/stack_capture.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <algorithm>
#include <atomic>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/optional_library.h"

namespace gmt {
namespace {

// libunwind's unw_backtrace caches each frame's layout and walks a warm stack
// at ~6 ns a frame, against ~100 ns for glibc's backtrace (libgcc's unwinder
// reads the DWARF tables anew each time). Loaded at run time, RTLD_LOCAL, so
// the library does not depend on it and its _Unwind_* never shadow libgcc's.
using UnwBacktraceFn = int (*)(void**, int);
std::atomic<UnwBacktraceFn> g_unw_backtrace{nullptr};

std::atomic<uintptr_t> g_tool_begin{0};
std::atomic<uintptr_t> g_tool_end{0};

// Modules hidden besides the tool (HideModuleFrames): each slot is published
// by its `end`, stored last; g_hidden_count only grows.
struct HiddenRange {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
};
HiddenRange g_hidden[kMaxHiddenModules];
std::atomic<int> g_hidden_count{0};

bool Hidden(uintptr_t pc, int hidden) {
  for (int i = 0; i < hidden; ++i) {
    const uintptr_t end = g_hidden[i].end.load(std::memory_order_acquire);
    if (pc < end && pc >= g_hidden[i].begin.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

struct RangeQuery {
  uintptr_t address;
  uintptr_t begin;
  uintptr_t end;
  bool found;
};

int FindModule(dl_phdr_info* info, size_t, void* data) {
  auto* query = static_cast<RangeQuery*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    uintptr_t seg_lo = info->dlpi_addr + ph.p_vaddr;
    uintptr_t seg_hi = seg_lo + ph.p_memsz;
    lo = std::min(lo, seg_lo);
    hi = std::max(hi, seg_hi);
    if (query->address >= seg_lo && query->address < seg_hi) contains = true;
  }
  if (!contains) return 0;
  query->begin = lo;
  query->end = hi;
  query->found = true;
  return 1;
}

}  // namespace

void SetToolTextRange(uintptr_t begin, uintptr_t end) {
  g_tool_begin.store(begin, std::memory_order_relaxed);
  g_tool_end.store(end, std::memory_order_relaxed);
}

bool HideModuleFrames(const void* address) {
  uintptr_t begin = 0, end = 0;
  if (!ModuleTextRange(address, &begin, &end)) return false;
  static absl::Mutex mu(absl::kConstInit);
  absl::MutexLock lock(&mu);
  const int n = g_hidden_count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    if (g_hidden[i].begin.load(std::memory_order_relaxed) == begin) return true;
  }
  if (n == kMaxHiddenModules) return false;
  g_hidden[n].begin.store(begin, std::memory_order_relaxed);
  g_hidden[n].end.store(end, std::memory_order_release);
  g_hidden_count.store(n + 1, std::memory_order_release);
  return true;
}

bool ModuleTextRange(const void* address, uintptr_t* begin, uintptr_t* end) {
  RangeQuery query{reinterpret_cast<uintptr_t>(address), 0, 0, false};
  dl_iterate_phdr(FindModule, &query);
  if (!query.found) return false;
  *begin = query.begin;
  *end = query.end;
  return true;
}

int CaptureStack(uintptr_t* frames, int max_frames) {
  if (max_frames <= 0) return 0;
  max_frames = std::min(max_frames, kMaxStackFrames);
  // Room for the tool's own frames (wrapper, capture) on top of what is kept,
  // and for the hidden modules' (a driver call inside a CUPTI callback).
  constexpr int kToolFrameAllowance = 6;
  constexpr int kHiddenFrameAllowance = 26;
  const int hidden = g_hidden_count.load(std::memory_order_acquire);
  const int allowance =
      hidden > 0 ? kHiddenFrameAllowance : kToolFrameAllowance;
  void* raw[kMaxStackFrames + kHiddenFrameAllowance];
  UnwBacktraceFn unw = g_unw_backtrace.load(std::memory_order_acquire);
  int n = unw != nullptr ? unw(raw, max_frames + allowance) : 0;
  if (n <= 0) n = backtrace(raw, max_frames + allowance);
  uintptr_t begin = g_tool_begin.load(std::memory_order_relaxed);
  uintptr_t end = g_tool_end.load(std::memory_order_relaxed);
  int first = 1;  // raw[0] is CaptureStack itself
  while (first < n) {
    auto pc = reinterpret_cast<uintptr_t>(raw[first]);
    if ((pc < begin || pc >= end) && !Hidden(pc, hidden)) break;
    ++first;
  }
  int count = std::min(n - first, max_frames);
  for (int i = 0; i < count; ++i) {
    frames[i] = reinterpret_cast<uintptr_t>(raw[first + i]);
  }
  return count;
}

void WarmUpStackCapture() {
  void* raw[4];
  backtrace(raw, 4);
  // In a ThreadSanitizer-built program, libunwind's per-thread
  // cache destructor runs after TSan has torn the exiting thread's state down
  // and crashes in TSan's pthread_mutex_lock interceptor: every thread exit
  // of a multi-threaded TSan program under the tool was a SIGSEGV. glibc's
  // backtrace() is used there instead (slower, same frames).
  if (dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr) return;
  if (void* handle = OpenOptionalLibrary("libunwind.so.8")) {
    if (auto fn =
            reinterpret_cast<UnwBacktraceFn>(dlsym(handle, "unw_backtrace"))) {
      fn(raw, 4);
      g_unw_backtrace.store(fn, std::memory_order_release);
    }
  }
}

bool FastUnwinderLoaded() {
  return g_unw_backtrace.load(std::memory_order_acquire) != nullptr;
}

}  // namespace gmt
