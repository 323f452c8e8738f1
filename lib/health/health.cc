#include "lib/health/health.h"

#include <atomic>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "lib/health/xid_watch.h"
#include "lib/platform/nvml_loader.h"
#include "lib/platform/tool_driver.h"

namespace gmt {
namespace {

std::atomic<int> g_runtime_version{0};
std::atomic<int> g_driver_version{0};

// The status of a failed NVML call, in the words the report uses.
std::string Why(const NvmlApi& api, nvml::Return r) {
  if (r == nvml::kNotSupported) return "not supported";
  return absl::StrCat("error: ", api.ErrorText(r));
}

template <typename T, typename Fn>
Reading<T> Read(const NvmlApi& api, Fn* fn, auto&& call) {
  if (fn == nullptr) return Reading<T>::Missing("not supported (old NVML)");
  T value{};
  const nvml::Return r = call(&value);
  if (r != nvml::kSuccess) return Reading<T>::Missing(Why(api, r));
  return Reading<T>::Of(value);
}

void ReadDevice(const NvmlApi& api, nvml::Device d, DeviceHealth* h) {
  char text[128] = "";
  if (api.device_get_name(d, text, sizeof(text)) == nvml::kSuccess) {
    h->name = text;
  }
  if (api.device_get_uuid != nullptr &&
      api.device_get_uuid(d, text, sizeof(text)) == nvml::kSuccess) {
    h->uuid = text;
  }
  // Memory: v2 has the reserved figure; v1 otherwise.
  nvml::MemoryV2 m2{};
  m2.version = nvml::kMemoryV2Version;
  nvml::Return r = api.device_get_memory_info_v2 != nullptr
                       ? api.device_get_memory_info_v2(d, &m2)
                       : nvml::kFunctionNotFound;
  if (r == nvml::kSuccess) {
    h->memory_total = Reading<uint64_t>::Of(m2.total);
    h->memory_used = Reading<uint64_t>::Of(m2.used);
    h->memory_reserved = Reading<uint64_t>::Of(m2.reserved);
  } else {
    nvml::Memory m{};
    r = api.device_get_memory_info(d, &m);
    if (r == nvml::kSuccess) {
      h->memory_total = Reading<uint64_t>::Of(m.total);
      h->memory_used = Reading<uint64_t>::Of(m.used);
      h->memory_reserved =
          Reading<uint64_t>::Missing("not supported (old NVML)");
    } else {
      h->memory_total = h->memory_used = h->memory_reserved =
          Reading<uint64_t>::Missing(Why(api, r));
    }
  }
  if (api.device_get_ecc_mode != nullptr) {
    int current = 0, pending = 0;
    r = api.device_get_ecc_mode(d, &current, &pending);
    if (r == nvml::kSuccess) {
      h->ecc_enabled = Reading<bool>::Of(current != 0);
      h->ecc_pending_enabled = Reading<bool>::Of(pending != 0);
    } else {
      h->ecc_enabled = h->ecc_pending_enabled =
          Reading<bool>::Missing(Why(api, r));
    }
  } else {
    h->ecc_enabled = h->ecc_pending_enabled =
        Reading<bool>::Missing("not supported (old NVML)");
  }
  auto ecc = [&](unsigned type, unsigned counter) {
    return Read<uint64_t>(
        api, api.device_get_total_ecc_errors, [&](uint64_t* v) {
          unsigned long long n = 0;
          nvml::Return rr =
              api.device_get_total_ecc_errors(d, type, counter, &n);
          *v = n;
          return rr;
        });
  };
  h->ecc.volatile_corrected = ecc(nvml::kCorrected, nvml::kVolatile);
  h->ecc.volatile_uncorrected = ecc(nvml::kUncorrected, nvml::kVolatile);
  h->ecc.aggregate_corrected = ecc(nvml::kCorrected, nvml::kAggregate);
  h->ecc.aggregate_uncorrected = ecc(nvml::kUncorrected, nvml::kAggregate);
  auto retired = [&](unsigned cause) {
    return Read<uint32_t>(api, api.device_get_retired_pages, [&](uint32_t* v) {
      unsigned count = 0;
      nvml::Return rr = api.device_get_retired_pages(d, cause, &count, nullptr);
      // Count 0 asks for the size: "insufficient size" still gives it.
      if (rr == nvml::kInsufficientSize) rr = nvml::kSuccess;
      *v = count;
      return rr;
    });
  };
  h->retired_single_bit = retired(nvml::kRetiredSingleBit);
  h->retired_double_bit = retired(nvml::kRetiredDoubleBit);
  h->retired_pending = Read<bool>(
      api, api.device_get_retired_pages_pending_status, [&](bool* v) {
        int state = 0;
        nvml::Return rr =
            api.device_get_retired_pages_pending_status(d, &state);
        *v = state != 0;
        return rr;
      });
  h->remapped_rows = Read<RemappedRows>(
      api, api.device_get_remapped_rows, [&](RemappedRows* v) {
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        nvml::Return rr =
            api.device_get_remapped_rows(d, &corr, &unc, &pending, &failure);
        *v = RemappedRows{corr, unc, pending != 0, failure != 0};
        return rr;
      });
  h->gpu_temp_c =
      Read<uint32_t>(api, api.device_get_temperature, [&](uint32_t* v) {
        unsigned t = 0;
        nvml::Return rr =
            api.device_get_temperature(d, nvml::kTemperatureGpu, &t);
        *v = t;
        return rr;
      });
  h->memory_temp_c =
      Read<uint32_t>(api, api.device_get_field_values, [&](uint32_t* v) {
        nvml::FieldValue f{};
        f.field_id = nvml::kFieldMemoryTemp;
        nvml::Return rr = api.device_get_field_values(d, 1, &f);
        if (rr == nvml::kSuccess) rr = f.nvml_return;
        // NVML reports the memory temperature as an unsigned int value.
        *v = f.value.ui;
        return rr;
      });
  auto threshold = [&](unsigned which) {
    return Read<uint32_t>(
        api, api.device_get_temperature_threshold, [&](uint32_t* v) {
          unsigned t = 0;
          nvml::Return rr = api.device_get_temperature_threshold(d, which, &t);
          *v = t;
          return rr;
        });
  };
  h->gpu_temp_slowdown_c = threshold(nvml::kThresholdSlowdown);
  h->gpu_temp_shutdown_c = threshold(nvml::kThresholdShutdown);
  h->gpu_temp_max_c = threshold(nvml::kThresholdGpuMax);
  h->memory_temp_max_c = threshold(nvml::kThresholdMemMax);
  auto reasons_fn = api.device_get_clocks_event_reasons != nullptr
                        ? api.device_get_clocks_event_reasons
                        : api.device_get_clocks_throttle_reasons;
  h->clock_event_reasons = Read<uint64_t>(api, reasons_fn, [&](uint64_t* v) {
    unsigned long long bits = 0;
    nvml::Return rr = reasons_fn(d, &bits);
    *v = bits;
    return rr;
  });
}

}  // namespace

void NoteCudaVersions(int runtime_version, int driver_version) {
  if (runtime_version > 0) g_runtime_version.store(runtime_version);
  if (driver_version > 0) g_driver_version.store(driver_version);
}

namespace {

// The CUDA version the driver supports. NVML's _v2 asks the driver library
// and can fail where the driver is fine (seen on an H200 with driver 580:
// "Unknown Error"); the older entry point asks the kernel module, and the
// driver library itself answers cuDriverGetVersion once the program has loaded
// it. The reason shown when all fail is the first one's.
Reading<int> DriverCudaVersion(const NvmlApi& api) {
  Reading<int> v2 =
      Read<int>(api, api.system_get_cuda_driver_version,
                [&](int* v) { return api.system_get_cuda_driver_version(v); });
  if (v2.ok() && *v2.value > 0) return v2;
  Reading<int> v1 = Read<int>(
      api, api.system_get_cuda_driver_version_v1,
      [&](int* v) { return api.system_get_cuda_driver_version_v1(v); });
  if (v1.ok() && *v1.value > 0) return v1;
  if (const ToolDriver* driver = GetToolDriver(); driver != nullptr) {
    int version = 0;
    if (driver->driver_get_version(&version) == CUDA_SUCCESS && version > 0) {
      return Reading<int>::Of(version);
    }
  }
  return v2;
}

}  // namespace

HealthReading ReadHealth(int only_device) {
  HealthReading out;
  const int runtime = g_runtime_version.load();
  const int driver = g_driver_version.load();
  out.versions.runtime_cuda = runtime > 0 ? Reading<int>::Of(runtime)
                                          : Reading<int>::Missing("not known");
  out.versions.cu_driver_cuda = driver > 0 ? Reading<int>::Of(driver)
                                           : Reading<int>::Missing("not known");
  XidSnapshot(&out.xid_watched, &out.xid_status, &out.xids);
  const NvmlApi* api_ptr = LoadNvml();
  if (!api_ptr->available) {
    out.reason = api_ptr->reason;
    out.versions.driver = Reading<std::string>::Missing("NVML unavailable");
    out.versions.driver_cuda = Reading<int>::Missing("NVML unavailable");
    return out;
  }
  const NvmlApi& api = *api_ptr;
  char text[96] = "";
  nvml::Return r = api.system_get_driver_version(text, sizeof(text));
  out.versions.driver = r == nvml::kSuccess
                            ? Reading<std::string>::Of(text)
                            : Reading<std::string>::Missing(Why(api, r));
  out.versions.driver_cuda = DriverCudaVersion(api);
  unsigned count = 0;
  r = api.device_get_count(&count);
  if (r != nvml::kSuccess) {
    out.reason = absl::StrCat("nvmlDeviceGetCount failed: ", api.ErrorText(r));
    return out;
  }
  out.available = true;
  for (unsigned i = 0; i < count; ++i) {
    if (only_device >= 0 && static_cast<unsigned>(only_device) != i) continue;
    DeviceHealth h;
    h.nvml_index = static_cast<int>(i);
    nvml::Device d = nullptr;
    r = api.device_get_handle_by_index(i, &d);
    if (r != nvml::kSuccess) {
      h.name = absl::StrCat("(device ", i, ": ", api.ErrorText(r), ")");
      const std::string why = Why(api, r);
      h.memory_total = h.memory_used = h.memory_reserved =
          Reading<uint64_t>::Missing(why);
      out.devices.push_back(std::move(h));
      continue;
    }
    ReadDevice(api, d, &h);
    out.devices.push_back(std::move(h));
  }
  if (only_device >= 0 && out.devices.empty()) {
    out.available = false;
    out.reason =
        absl::StrCat("no device ", only_device, " (NVML sees ", count, ")");
  }
  return out;
}

std::vector<ProcessUsage> ReadProcessUsage(int nvml_index,
                                           std::string* status) {
  std::vector<ProcessUsage> out;
  const NvmlApi* api = LoadNvml();
  if (!api->available) {
    *status = absl::StrCat("NVML unavailable: ", api->reason);
    return out;
  }
  auto fn = api->device_get_compute_processes_v3 != nullptr
                ? api->device_get_compute_processes_v3
                : api->device_get_compute_processes_v2;
  if (fn == nullptr) {
    *status = "not supported (old NVML)";
    return out;
  }
  nvml::Device d = nullptr;
  nvml::Return r = api->device_get_handle_by_index(nvml_index, &d);
  if (r != nvml::kSuccess) {
    *status = Why(*api, r);
    return out;
  }
  // The list may grow between the size query and the read: retry a few times.
  std::vector<nvml::ProcessInfo> infos(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    r = fn(d, &count, infos.data());
    if (r == nvml::kInsufficientSize) {
      infos.resize(count + 8);
      continue;
    }
    if (r != nvml::kSuccess) {
      *status = Why(*api, r);
      return out;
    }
    infos.resize(count);
    break;
  }
  if (r != nvml::kSuccess) {
    *status = Why(*api, r);
    return out;
  }
  for (const nvml::ProcessInfo& p : infos) {
    ProcessUsage u;
    u.pid = p.pid;
    if (p.used_gpu_memory != nvml::kValueNotAvailable) {
      u.bytes = p.used_gpu_memory;
    }
    std::ifstream comm(absl::StrCat("/proc/", p.pid, "/comm"));
    if (comm && std::getline(comm, u.name)) {
      absl::StripTrailingAsciiWhitespace(&u.name);
    }
    out.push_back(std::move(u));
  }
  *status = "ok";
  return out;
}

}  // namespace gmt
