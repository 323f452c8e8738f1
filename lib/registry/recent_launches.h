// RecentLaunches: the newest kernel launches the tool saw, in a fixed ring of
// atomics, for the crash report's "recent kernels".
//
// Unlike the guard manager's launch log (per context, kernel ids only, for
// attribution), this one keeps the stream and the time and is readable from a
// crash without taking a lock: Record() is a few relaxed stores, Newest()
// copies the ring and drops slots being overwritten meanwhile.
//
//   RecentLaunches log;
//   RecentLaunches::Entry e;  // kernel id, stream, context, time, dims, ...
//   log.Record(e);
//   for (const RecentLaunches::Entry& e : log.Newest(16)) ...
//
// Thread safety: every member is thread-safe and lock-free.
#ifndef GMT_LIB_REGISTRY_RECENT_LAUNCHES_H_
#define GMT_LIB_REGISTRY_RECENT_LAUNCHES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmt {

class RecentLaunches {
 public:
  static constexpr size_t kCapacity = 64;

  // Parameter words kept per launch: the first that could be addresses.
  static constexpr size_t kArgWords = 8;
  // Return addresses kept per launch: the program's innermost frames, raw,
  // symbolized only when a report shows the launch. nvcc's host side takes
  // up to three (cudaLaunchKernel<T>, __device_stub__*, the kernel's host
  // function) before the line that wrote kernel<<<...>>>: five native
  // frames, and in a Python process the innermost Python frames, enough to
  // reach the script's line below a library's (torch.nn's module call, or
  // Triton's JIT launcher, is four or five frames deep).
  static constexpr size_t kNativeSiteFrames = 5;
  static constexpr size_t kPythonSiteFrames = 6;
  static constexpr size_t kSiteFrames = kNativeSiteFrames + kPythonSiteFrames;

  struct Entry {
    uint32_t kernel = 0;  // Engine::InternKernel id
    uint64_t stream = 0;
    uint64_t context = 0;
    int64_t time_ns = 0;
    // The launch as the program made it; all 0 when only CUPTI saw it.
    uint32_t grid[3] = {0, 0, 0};
    uint32_t block[3] = {0, 0, 0};
    // Its parameter words that could be addresses (lib/launch/launch_reach.h:
    // 8-byte aligned, not below 64 KiB), the first kArgWords of them, each
    // with the index of the parameter it is part of (kNoParam: unknown).
    // args_read: false when the parameters could not be read at all.
    bool args_read = false;
    uint32_t word_count = 0;
    uint64_t words[kArgWords] = {};
    uint32_t word_params[kArgWords] = {};
    // Where the program made it (0 frames: not captured).
    uint32_t site_count = 0;
    uintptr_t site[kSiteFrames] = {};
  };

  void Record(const Entry& entry);

  // Up to `max` of the newest launches, oldest first.
  std::vector<Entry> Newest(size_t max) const;
  // The same into `out` (room for `max`), without allocating: usable from a
  // signal handler. Returns how many were written.
  size_t NewestInto(Entry* out, size_t max) const;

  // Launches recorded since the start.
  uint64_t Count() const { return next_.load(std::memory_order_acquire); }

 private:
  struct Slot {
    // The launch number + 1 of what the slot holds; 0 while empty. Set last
    // (release) by the writer, and cleared first, so a reader that sees the
    // same value before and after copying the fields has a whole entry.
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint32_t> kernel{0};
    std::atomic<uint64_t> stream{0};
    std::atomic<uint64_t> context{0};
    std::atomic<int64_t> time_ns{0};
    std::atomic<uint32_t> dims[6] = {};   // grid x, y, z, block x, y, z
    std::atomic<uint32_t> word_count{0};  // kArgWords + 1: not read
    std::atomic<uint64_t> words[kArgWords] = {};
    std::atomic<uint32_t> word_params[kArgWords] = {};
    std::atomic<uint32_t> site_count{0};
    std::atomic<uintptr_t> site[kSiteFrames] = {};
  };
  std::atomic<uint64_t> next_{0};
  Slot slots_[kCapacity];
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_RECENT_LAUNCHES_H_
