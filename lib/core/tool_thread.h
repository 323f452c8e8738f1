// Background threads of the tool's own (the NVML start, the Xid watcher).
//
// Each runs on a stack mapped here rather than one from glibc's cache: the
// exit reachability scan (lib/leaks/) must leave the tool's stacks alone, and
// a stack from glibc's cache would, once the thread ended, be handed to a
// thread of the program's, whose roots the scan must not skip. A stack mapped
// here stays mapped for the life of the process (one mapping per thread
// between two inaccessible guard pages, pages touched only as used), so its
// range never comes to mean anything else. The thread is detached and has every
// signal blocked (the program's signals are never delivered to it).
//
//   StartToolThread([] { LoadNvml(); });
//   ScanProcess(..., /*tool_ranges=*/ToolThreadStacks());
//
// Thread safety: both functions are thread-safe.
#ifndef GMT_LIB_CORE_TOOL_THREAD_H_
#define GMT_LIB_CORE_TOOL_THREAD_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace gmt {

// Starts `work` on a new detached thread. False when no thread could be
// started (then `work` did not run).
bool StartToolThread(std::function<void()> work);

// The stacks of every thread StartToolThread started, running or ended, as
// [begin, end) address pairs.
std::vector<std::pair<uint64_t, uint64_t>> ToolThreadStacks();

}  // namespace gmt

#endif  // GMT_LIB_CORE_TOOL_THREAD_H_
