#include "lib/memtest/nvml_counters.h"

#include "absl/strings/str_cat.h"

namespace gmt::memtest {
namespace {

std::optional<uint64_t> Ecc(const NvmlApi& nvml, nvml::Device dev,
                            unsigned type, unsigned counter) {
  unsigned long long n = 0;
  if (nvml.device_get_total_ecc_errors(dev, type, counter, &n) !=
      nvml::kSuccess) {
    return std::nullopt;  // no ECC, or ECC off
  }
  return static_cast<uint64_t>(n);
}

}  // namespace

HealthSnapshot ReadNvmlHealth(const std::string& pci_bus_id) {
  return ReadNvmlHealth(*LoadNvml(), pci_bus_id);
}

HealthSnapshot ReadNvmlHealth(const NvmlApi& nvml,
                              const std::string& pci_bus_id) {
  HealthSnapshot h;
  if (!nvml.available) {
    h.reason = nvml.reason;
    return h;
  }
  // Optional in the loader (the health reading does without them), needed
  // here.
  const char* missing = nvml.device_get_handle_by_pci_bus_id == nullptr
                            ? "nvmlDeviceGetHandleByPciBusId_v2"
                            : (nvml.device_get_total_ecc_errors == nullptr
                                   ? "nvmlDeviceGetTotalEccErrors"
                                   : nullptr);
  if (missing != nullptr) {
    h.reason = absl::StrCat("NVML lacks ", missing);
    return h;
  }
  if (pci_bus_id.empty()) {
    h.reason = "the CUDA driver gave no PCI bus id";
    return h;
  }
  nvml::Device dev = nullptr;
  const nvml::Return r =
      nvml.device_get_handle_by_pci_bus_id(pci_bus_id.c_str(), &dev);
  if (r != nvml::kSuccess) {
    h.reason = absl::StrCat("NVML knows no GPU at ", pci_bus_id, ": ",
                            nvml.ErrorText(r));
    return h;
  }
  h.available = true;
  h.ecc_volatile_corrected = Ecc(nvml, dev, nvml::kCorrected, nvml::kVolatile);
  h.ecc_volatile_uncorrected =
      Ecc(nvml, dev, nvml::kUncorrected, nvml::kVolatile);
  h.ecc_aggregate_corrected =
      Ecc(nvml, dev, nvml::kCorrected, nvml::kAggregate);
  h.ecc_aggregate_uncorrected =
      Ecc(nvml, dev, nvml::kUncorrected, nvml::kAggregate);
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  // Absent before R460 drivers.
  if (nvml.device_get_remapped_rows != nullptr &&
      nvml.device_get_remapped_rows(dev, &corr, &unc, &pending, &failure) ==
          nvml::kSuccess) {
    h.remapped_correctable = corr;
    h.remapped_uncorrectable = unc;
    h.remap_pending = pending != 0;
    h.remap_failure = failure != 0;
  }
  return h;
}

}  // namespace gmt::memtest
