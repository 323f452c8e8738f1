#include "lib/registry/usage.h"

namespace gmt {

int Usage::SlotOf(int device) {
  if (device < 0) return 0;
  return device < kMaxDevices ? device + 1 : kMaxDevices;
}

void Usage::Add(int device, uint64_t bytes) {
  Slot& slot = slots_[SlotOf(device)];
  slot.allocations.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now =
      slot.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = slot.peak.load(std::memory_order_relaxed);
  while (now > peak && !slot.peak.compare_exchange_weak(
                           peak, now, std::memory_order_relaxed)) {
  }
}

void Usage::Sub(int device, uint64_t bytes) {
  Slot& slot = slots_[SlotOf(device)];
  slot.frees.fetch_add(1, std::memory_order_relaxed);
  slot.live.fetch_sub(bytes, std::memory_order_relaxed);
}

void Usage::Release(int device, uint64_t bytes) {
  slots_[SlotOf(device)].live.fetch_sub(bytes, std::memory_order_relaxed);
}

UsageFigures Usage::Get(int device) const {
  const Slot& slot = slots_[SlotOf(device)];
  return UsageFigures{slot.live.load(std::memory_order_relaxed),
                      slot.peak.load(std::memory_order_relaxed),
                      slot.allocations.load(std::memory_order_relaxed),
                      slot.frees.load(std::memory_order_relaxed)};
}

void Usage::AddRedzones(int device, int64_t delta) {
  slots_[SlotOf(device)].redzones.fetch_add(delta, std::memory_order_relaxed);
}

uint64_t Usage::RedzoneBytes(int device) const {
  const int64_t bytes =
      slots_[SlotOf(device)].redzones.load(std::memory_order_relaxed);
  return bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
}

bool Usage::Used(int device) const {
  return slots_[SlotOf(device)].allocations.load(std::memory_order_relaxed) > 0;
}

}  // namespace gmt
