// Usage: bytes in use and peak per device, lock-free.
//
// Slot 0 is host memory (pinned), slots 1..kMaxDevices are CUDA devices 0..N-1.
// Add/Sub are a couple of relaxed atomics; the peak is a CAS-max, so it is
// exact for the order in which the additions land.
#ifndef GMT_LIB_REGISTRY_USAGE_H_
#define GMT_LIB_REGISTRY_USAGE_H_

#include <atomic>
#include <cstdint>

namespace gmt {

struct UsageFigures {
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
};

class Usage {
 public:
  static constexpr int kMaxDevices = 63;

  // `device` -1 is host; devices past kMaxDevices share the last slot.
  void Add(int device, uint64_t bytes);
  void Sub(int device, uint64_t bytes);
  // Bytes gone without a free by the program (context teardown).
  void Release(int device, uint64_t bytes);
  UsageFigures Get(int device) const;
  // Whether anything was ever allocated in that slot.
  bool Used(int device) const;
  // Device bytes the tool added around live blocks (redzones): memory the
  // program did not ask for, given back in its view of free memory.
  void AddRedzones(int device, int64_t delta);
  uint64_t RedzoneBytes(int device) const;

 private:
  struct alignas(64) Slot {
    std::atomic<int64_t> redzones{0};
    std::atomic<uint64_t> live{0};
    std::atomic<uint64_t> peak{0};
    std::atomic<uint64_t> allocations{0};
    std::atomic<uint64_t> frees{0};
  };
  static int SlotOf(int device);
  Slot slots_[kMaxDevices + 1];
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_USAGE_H_
