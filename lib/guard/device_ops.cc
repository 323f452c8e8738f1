#include "lib/guard/device_ops.h"

#include <atomic>

namespace gmt {
namespace {
std::atomic<DeviceOps*> g_device_ops{nullptr};
}  // namespace

void SetDeviceOps(DeviceOps* ops) {
  g_device_ops.store(ops, std::memory_order_release);
}

DeviceOps* GetDeviceOps() {
  return g_device_ops.load(std::memory_order_acquire);
}

}  // namespace gmt
