#include "lib/memtest/nvml_counters.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace gmt::memtest {
namespace {

// The few NVML declarations needed (nvml.h is not a build dependency); the
// values are NVML's stable ABI.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kCorrected = 0, kUncorrected = 1;  // nvmlMemoryErrorType_t
constexpr int kVolatile = 0, kAggregate = 1;     // nvmlEccCounterType_t

struct Nvml {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*by_pci_bus_id)(const char*, NvmlDevice*);
  NvmlReturn (*total_ecc_errors)(NvmlDevice, int, int, unsigned long long*);
  // Absent before R460 drivers.
  NvmlReturn (*remapped_rows)(NvmlDevice, unsigned*, unsigned*, unsigned*,
                              unsigned*);
};

// Opened once, never closed: NVML may be read again after the test.
const Nvml* LoadNvml(std::string* why) {
  static Nvml nvml{};
  static std::string error;
  static const bool loaded = [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      error = absl::StrCat("cannot open libnvidia-ml.so.1: ", e ? e : "?");
      return false;
    }
    auto sym = [&](const char* name) { return dlsym(lib, name); };
    nvml.init = reinterpret_cast<decltype(nvml.init)>(sym("nvmlInit_v2"));
    nvml.shutdown =
        reinterpret_cast<decltype(nvml.shutdown)>(sym("nvmlShutdown"));
    nvml.error_string =
        reinterpret_cast<decltype(nvml.error_string)>(sym("nvmlErrorString"));
    nvml.by_pci_bus_id = reinterpret_cast<decltype(nvml.by_pci_bus_id)>(
        sym("nvmlDeviceGetHandleByPciBusId_v2"));
    nvml.total_ecc_errors = reinterpret_cast<decltype(nvml.total_ecc_errors)>(
        sym("nvmlDeviceGetTotalEccErrors"));
    nvml.remapped_rows = reinterpret_cast<decltype(nvml.remapped_rows)>(
        sym("nvmlDeviceGetRemappedRows"));
    if (nvml.init == nullptr || nvml.by_pci_bus_id == nullptr ||
        nvml.total_ecc_errors == nullptr) {
      error =
          "libnvidia-ml.so.1 lacks nvmlInit_v2, "
          "nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetTotalEccErrors";
      return false;
    }
    const NvmlReturn r = nvml.init();
    if (r != kNvmlSuccess) {
      error = absl::StrCat("nvmlInit_v2 failed: ",
                           nvml.error_string ? nvml.error_string(r) : "?");
      return false;
    }
    return true;
  }();
  if (!loaded) *why = error;
  return loaded ? &nvml : nullptr;
}

std::optional<uint64_t> Ecc(const Nvml& nvml, NvmlDevice dev, int type,
                            int counter) {
  unsigned long long n = 0;
  if (nvml.total_ecc_errors(dev, type, counter, &n) != kNvmlSuccess) {
    return std::nullopt;  // no ECC, or ECC off
  }
  return static_cast<uint64_t>(n);
}

}  // namespace

HealthSnapshot ReadNvmlHealth(const std::string& pci_bus_id) {
  HealthSnapshot h;
  const Nvml* nvml = LoadNvml(&h.reason);
  if (nvml == nullptr) return h;
  if (pci_bus_id.empty()) {
    h.reason = "the CUDA driver gave no PCI bus id";
    return h;
  }
  NvmlDevice dev = nullptr;
  const NvmlReturn r = nvml->by_pci_bus_id(pci_bus_id.c_str(), &dev);
  if (r != kNvmlSuccess) {
    h.reason = absl::StrCat("NVML knows no GPU at ", pci_bus_id, ": ",
                            nvml->error_string ? nvml->error_string(r) : "?");
    return h;
  }
  h.available = true;
  h.ecc_volatile_corrected = Ecc(*nvml, dev, kCorrected, kVolatile);
  h.ecc_volatile_uncorrected = Ecc(*nvml, dev, kUncorrected, kVolatile);
  h.ecc_aggregate_corrected = Ecc(*nvml, dev, kCorrected, kAggregate);
  h.ecc_aggregate_uncorrected = Ecc(*nvml, dev, kUncorrected, kAggregate);
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (nvml->remapped_rows != nullptr &&
      nvml->remapped_rows(dev, &corr, &unc, &pending, &failure) ==
          kNvmlSuccess) {
    h.remapped_correctable = corr;
    h.remapped_uncorrectable = unc;
    h.remap_pending = pending != 0;
    h.remap_failure = failure != 0;
  }
  return h;
}

}  // namespace gmt::memtest
