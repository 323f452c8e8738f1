// Capturing the host call stack at an intercepted call: raw return addresses
// only, no symbols (those come late, in symbolizer.h).
#ifndef GMT_LIB_STACKS_STACK_CAPTURE_H_
#define GMT_LIB_STACKS_STACK_CAPTURE_H_

#include <cstdint>

namespace gmt {

inline constexpr int kMaxStackFrames = 64;

// Frames whose address lies in [begin, end) are the tool's own and are dropped
// from the innermost end of every captured stack. The front end registers the
// text range of the module it lives in; unit tests register none.
void SetToolTextRange(uintptr_t begin, uintptr_t end);

// Frames in the loaded module that holds `address` are dropped from the
// innermost end of every captured stack as well, wherever they sit among the
// tool's own: libcuda's and CUPTI's frames above a CUPTI callback. Returns
// false when no loaded module holds `address` or kMaxHiddenModules are
// registered already. Thread-safe; registering a module twice is harmless.
inline constexpr int kMaxHiddenModules = 4;
bool HideModuleFrames(const void* address);

// Finds the text range of the loaded module that contains `address`.
bool ModuleTextRange(const void* address, uintptr_t* begin, uintptr_t* end);

// Writes up to `max_frames` return addresses, innermost first, into `frames`,
// skipping the tool's own frames. Returns the count. Uses the unwind tables
// (libunwind's unw_backtrace when libunwind.so.8 is present, else glibc's
// backtrace), so it works for code built without frame pointers.
int CaptureStack(uintptr_t* frames, int max_frames);

// Loads the unwinder ahead of the first capture: glibc loads libgcc_s lazily,
// which allocates and takes the loader lock; better at start-up than inside a
// wrapper.
// Also loads libunwind.so.8 if the machine has it.
void WarmUpStackCapture();

// Whether captures use libunwind (fast) rather than glibc's backtrace.
bool FastUnwinderLoaded();

}  // namespace gmt

#endif  // GMT_LIB_STACKS_STACK_CAPTURE_H_
