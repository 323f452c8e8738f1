#include "lib/report/health_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gmt {
namespace {

using nlohmann::json;

// Within this many degrees of a maximum counts as "near" it.
constexpr uint32_t kNearMaxC = 5;

constexpr struct {
  uint64_t bit;
  const char* name;
  bool abnormal;  // worth a warning (idle, app clocks and power cap are not)
  const char* meaning;
} kClockReasons[] = {
    {kClockIdle, "idle", false, ""},
    {kClockAppSetting, "applications clocks setting", false, ""},
    {kClockSwPowerCap, "software power cap", false, ""},
    {kClockHwSlowdown, "hardware slowdown", true,
     "the GPU slows itself (temperature, power brake or power supply)"},
    {kClockSyncBoost, "sync boost", false, ""},
    {kClockSwThermal, "software thermal slowdown", true,
     "the driver lowers clocks to cool the GPU or its memory"},
    {kClockHwThermal, "hardware thermal slowdown", true,
     "the GPU is too hot and throttles hard"},
    {kClockHwPowerBrake, "hardware power brake", true,
     "an external power brake (e.g. the power supply) slows the GPU"},
    {kClockDisplaySetting, "display clock setting", false, ""},
};

std::string ClockReasonNames(uint64_t bits) {
  std::vector<std::string> names;
  for (const auto& r : kClockReasons) {
    if (bits & r.bit) names.push_back(r.name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

std::string Gib(uint64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
}

template <typename T>
std::string Show(const Reading<T>& r, auto&& format) {
  return r.ok() ? format(*r.value) : r.status;
}

std::string Deg(const Reading<uint32_t>& r) {
  return Show(r, [](uint32_t v) { return absl::StrCat(v, " C"); });
}
std::string Count(const Reading<uint64_t>& r) {
  return Show(r, [](uint64_t v) { return absl::StrCat(v); });
}
std::string Count32(const Reading<uint32_t>& r) {
  return Show(r, [](uint32_t v) { return absl::StrCat(v); });
}
std::string YesNo(const Reading<bool>& r) {
  return Show(r, [](bool v) { return std::string(v ? "yes" : "no"); });
}

template <typename T>
void Put(json& j, json& missing, const char* key, const Reading<T>& r) {
  if (r.ok()) {
    j[key] = *r.value;
  } else {
    j[key] = nullptr;
    missing[key] = r.status;
  }
}

}  // namespace

std::string CudaVersionText(int version) {
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

std::vector<HealthWarning> HealthWarnings(const HealthReading& reading) {
  std::vector<HealthWarning> out;
  const VersionInfo& v = reading.versions;
  // The driver must support the CUDA version the program's runtime was built
  // for; otherwise calls fail with "driver too old"
  // (cudaErrorInsufficientDriver).
  const Reading<int>& driver_cuda =
      v.driver_cuda.ok() ? v.driver_cuda : v.cu_driver_cuda;
  if (driver_cuda.ok() && v.runtime_cuda.ok() &&
      *v.runtime_cuda.value > *driver_cuda.value) {
    out.push_back(
        {-1, "driver-too-old",
         absl::StrCat("the program's CUDA runtime is ",
                      CudaVersionText(*v.runtime_cuda.value), " but the driver",
                      v.driver.ok() ? " " + *v.driver.value : "",
                      " supports CUDA ", CudaVersionText(*driver_cuda.value),
                      " only: update the driver (or use the "
                      "compatibility package)")});
  }
  for (const DeviceHealth& d : reading.devices) {
    const int i = d.nvml_index;
    auto add = [&](const char* what, std::string text) {
      out.push_back({i, what, std::move(text)});
    };
    const uint64_t unc_v = d.ecc.volatile_uncorrected.value.value_or(0);
    const uint64_t unc_a = d.ecc.aggregate_uncorrected.value.value_or(0);
    if (unc_v > 0 || unc_a > 0) {
      add("ecc-uncorrected",
          absl::StrCat("uncorrectable ECC errors: ", unc_v,
                       " since the driver loaded, ", unc_a,
                       " over the GPU's life; results computed on this GPU "
                       "may be wrong"));
    }
    if (d.ecc_enabled.ok() && !*d.ecc_enabled.value) {
      add("ecc-off",
          "ECC is supported but turned off: memory errors go undetected "
          "(nvidia-smi -e 1, then reboot)");
    }
    if (d.retired_pending.ok() && *d.retired_pending.value) {
      add("retired-pages-pending",
          "memory pages wait to be retired: reset or reboot the GPU");
    }
    if (d.retired_double_bit.value.value_or(0) > 0) {
      add("retired-pages",
          absl::StrCat(*d.retired_double_bit.value,
                       " pages retired for double-bit errors"));
    }
    if (d.remapped_rows.ok()) {
      const RemappedRows& rows = *d.remapped_rows.value;
      if (rows.failure) {
        add("remap-failure",
            "a memory row remapping failed: the GPU needs service (RMA)");
      }
      if (rows.pending) {
        add("remap-pending",
            "a memory row remap waits for a GPU reset: reset the GPU");
      }
    }
    if (d.memory_temp_c.ok() && d.memory_temp_max_c.ok() &&
        *d.memory_temp_c.value + kNearMaxC >= *d.memory_temp_max_c.value) {
      add("memory-hot", absl::StrCat("memory at ", *d.memory_temp_c.value,
                                     " C, near its maximum of ",
                                     *d.memory_temp_max_c.value, " C"));
    }
    if (d.gpu_temp_c.ok()) {
      const Reading<uint32_t>& limit =
          d.gpu_temp_slowdown_c.ok() ? d.gpu_temp_slowdown_c : d.gpu_temp_max_c;
      if (limit.ok() && *d.gpu_temp_c.value + kNearMaxC >= *limit.value) {
        add("gpu-hot", absl::StrCat("GPU at ", *d.gpu_temp_c.value,
                                    " C, near its slowdown temperature of ",
                                    *limit.value, " C"));
      }
    }
    if (d.clock_event_reasons.ok()) {
      for (const auto& r : kClockReasons) {
        if (r.abnormal && (*d.clock_event_reasons.value & r.bit)) {
          add("clocks-throttled",
              absl::StrCat("clocks throttled: ", r.name, " (", r.meaning, ")"));
        }
      }
    }
  }
  for (const XidEvent& x : reading.xids) {
    absl::string_view meaning = XidMeaning(x.xid);
    out.push_back(
        {x.device, "xid",
         absl::StrFormat("Xid %d at %.3f s: %s", x.xid, x.time_s,
                         meaning.empty() ? "see NVIDIA's Xid catalogue"
                                         : std::string(meaning))});
  }
  return out;
}

std::string RenderHealthText(const HealthReading& reading, bool verbose) {
  std::string out;
  if (!reading.available) {
    absl::StrAppend(&out, "GPU health: unavailable: ", reading.reason, "\n");
  }
  const VersionInfo& v = reading.versions;
  if (reading.available) {
    absl::StrAppend(&out, "  driver ",
                    Show(v.driver, [](const std::string& s) { return s; }),
                    ", driver CUDA ", Show(v.driver_cuda, CudaVersionText),
                    ", program runtime CUDA ",
                    Show(v.runtime_cuda, CudaVersionText),
                    ", program driver API CUDA ",
                    Show(v.cu_driver_cuda, CudaVersionText), "\n");
  }
  const std::vector<HealthWarning> warnings = HealthWarnings(reading);
  for (const DeviceHealth& d : reading.devices) {
    int count = 0;
    for (const HealthWarning& w : warnings) count += w.device == d.nvml_index;
    absl::StrAppend(
        &out, "  GPU ", d.nvml_index, " ", d.name, ": ",
        count == 0 ? "no abnormal value"
                   : absl::StrCat(count, " warning", count == 1 ? "" : "s"),
        "\n");
    if (!verbose) continue;
    absl::StrAppend(
        &out, "    memory: total ", Show(d.memory_total, Gib), ", used ",
        Show(d.memory_used, Gib), ", reserved ", Show(d.memory_reserved, Gib),
        "\n", "    ECC: enabled ", YesNo(d.ecc_enabled), " (after reboot ",
        YesNo(d.ecc_pending_enabled), "); corrected ",
        Count(d.ecc.volatile_corrected), " volatile / ",
        Count(d.ecc.aggregate_corrected), " aggregate; uncorrected ",
        Count(d.ecc.volatile_uncorrected), " volatile / ",
        Count(d.ecc.aggregate_uncorrected), " aggregate\n",
        "    retired pages: single-bit ", Count32(d.retired_single_bit),
        ", double-bit ", Count32(d.retired_double_bit), ", pending ",
        YesNo(d.retired_pending), "\n", "    remapped rows: ",
        Show(d.remapped_rows,
             [](const RemappedRows& r) {
               return absl::StrCat("correctable ", r.corrected,
                                   ", uncorrectable ", r.uncorrected,
                                   ", pending ", r.pending ? "yes" : "no",
                                   ", failure ", r.failure ? "yes" : "no");
             }),
        "\n", "    temperature: GPU ", Deg(d.gpu_temp_c), " (slowdown ",
        Deg(d.gpu_temp_slowdown_c), ", shutdown ", Deg(d.gpu_temp_shutdown_c),
        ", max ", Deg(d.gpu_temp_max_c), "), memory ", Deg(d.memory_temp_c),
        " (max ", Deg(d.memory_temp_max_c), ")\n", "    clock event reasons: ",
        Show(d.clock_event_reasons,
             [](uint64_t b) {
               return absl::StrFormat("0x%x (%s)", b, ClockReasonNames(b));
             }),
        "\n");
  }
  absl::StrAppend(&out, "  Xid events: ", reading.xid_status,
                  reading.xids.empty() ? ", none" : "", "\n");
  for (const HealthWarning& w : warnings) {
    absl::StrAppend(&out, "  WARNING",
                    w.device >= 0 ? absl::StrCat(" GPU ", w.device) : "", ": ",
                    w.text, "\n");
  }
  return out;
}

json DeviceHealthJson(const HealthReading& reading, const DeviceHealth& d,
                      const std::vector<HealthWarning>& warnings) {
  json j = {{"available", true},
            {"nvml_index", d.nvml_index},
            {"name", d.name},
            {"uuid", d.uuid}};
  json missing = json::object();
  Put(j, missing, "memory_total_bytes", d.memory_total);
  Put(j, missing, "memory_used_bytes", d.memory_used);
  Put(j, missing, "memory_reserved_bytes", d.memory_reserved);
  Put(j, missing, "ecc_enabled", d.ecc_enabled);
  Put(j, missing, "ecc_enabled_after_reboot", d.ecc_pending_enabled);
  Put(j, missing, "ecc_corrected_volatile", d.ecc.volatile_corrected);
  Put(j, missing, "ecc_uncorrected_volatile", d.ecc.volatile_uncorrected);
  Put(j, missing, "ecc_corrected_aggregate", d.ecc.aggregate_corrected);
  Put(j, missing, "ecc_uncorrected_aggregate", d.ecc.aggregate_uncorrected);
  Put(j, missing, "retired_pages_single_bit", d.retired_single_bit);
  Put(j, missing, "retired_pages_double_bit", d.retired_double_bit);
  Put(j, missing, "retired_pages_pending", d.retired_pending);
  if (d.remapped_rows.ok()) {
    const RemappedRows& r = *d.remapped_rows.value;
    j["remapped_rows"] = {{"correctable", r.corrected},
                          {"uncorrectable", r.uncorrected},
                          {"pending", r.pending},
                          {"failure", r.failure}};
  } else {
    j["remapped_rows"] = nullptr;
    missing["remapped_rows"] = d.remapped_rows.status;
  }
  Put(j, missing, "gpu_temp_c", d.gpu_temp_c);
  Put(j, missing, "gpu_temp_slowdown_c", d.gpu_temp_slowdown_c);
  Put(j, missing, "gpu_temp_shutdown_c", d.gpu_temp_shutdown_c);
  Put(j, missing, "gpu_temp_max_c", d.gpu_temp_max_c);
  Put(j, missing, "memory_temp_c", d.memory_temp_c);
  Put(j, missing, "memory_temp_max_c", d.memory_temp_max_c);
  Put(j, missing, "clock_event_reasons", d.clock_event_reasons);
  if (d.clock_event_reasons.ok()) {
    j["clock_event_reason_names"] =
        ClockReasonNames(*d.clock_event_reasons.value);
  }
  const VersionInfo& v = reading.versions;
  Put(j, missing, "driver_version", v.driver);
  Put(j, missing, "driver_cuda_version", v.driver_cuda);
  Put(j, missing, "runtime_cuda_version", v.runtime_cuda);
  Put(j, missing, "cu_driver_cuda_version", v.cu_driver_cuda);
  json xids = json::array();
  for (const XidEvent& x : reading.xids) {
    if (x.device != d.nvml_index) continue;
    xids.push_back({{"xid", x.xid},
                    {"time_s", x.time_s},
                    {"meaning", std::string(XidMeaning(x.xid))}});
  }
  j["xid_events"] = std::move(xids);
  j["xid_status"] = reading.xid_status;
  json w = json::array();
  for (const HealthWarning& h : warnings) {
    if (h.device == d.nvml_index || h.device < 0) {
      w.push_back({{"what", h.what}, {"text", h.text}});
    }
  }
  j["warnings"] = std::move(w);
  j["missing"] = std::move(missing);
  return j;
}

json HealthReadingJson(const HealthReading& reading) {
  json out = {{"available", reading.available}};
  if (!reading.available) out["reason"] = reading.reason;
  const std::vector<HealthWarning> warnings = HealthWarnings(reading);
  json devices = json::array();
  for (const DeviceHealth& d : reading.devices) {
    devices.push_back(DeviceHealthJson(reading, d, warnings));
  }
  out["devices"] = std::move(devices);
  json w = json::array();
  for (const HealthWarning& h : warnings) {
    w.push_back({{"device", h.device}, {"what", h.what}, {"text", h.text}});
  }
  out["warnings"] = std::move(w);
  const VersionInfo& v = reading.versions;
  json versions = json::object();
  json missing = json::object();
  Put(versions, missing, "driver_version", v.driver);
  Put(versions, missing, "driver_cuda_version", v.driver_cuda);
  Put(versions, missing, "runtime_cuda_version", v.runtime_cuda);
  Put(versions, missing, "cu_driver_cuda_version", v.cu_driver_cuda);
  versions["missing"] = std::move(missing);
  out["versions"] = std::move(versions);
  out["xid_status"] = reading.xid_status;
  // Every Xid event with its device (also those of devices not listed), so
  // that a saved report reads back whole (lib/report/report_json_parse.h).
  out["xid_watched"] = reading.xid_watched;
  json xids = json::array();
  for (const XidEvent& x : reading.xids) {
    xids.push_back({{"device", x.device},
                    {"xid", x.xid},
                    {"time_s", x.time_s},
                    {"meaning", std::string(XidMeaning(x.xid))}});
  }
  out["xid_events"] = std::move(xids);
  return out;
}

json ReportDeviceHealthJson(bool read, const HealthReading& reading,
                            int cuda_index) {
  if (!read) {
    return {{"available", false}, {"reason", "not read (health=0)"}};
  }
  if (!reading.available) {
    return {{"available", false}, {"reason", reading.reason}};
  }
  for (const DeviceHealth& d : reading.devices) {
    if (d.nvml_index == cuda_index) {
      return DeviceHealthJson(reading, d, HealthWarnings(reading));
    }
  }
  return {{"available", false},
          {"reason", absl::StrCat("NVML has no device ", cuda_index)}};
}

std::string ReportHealthText(bool read, const HealthReading& reading) {
  if (!read) return "";
  if (!reading.available) {
    return absl::StrCat("GPU health: unavailable: ", reading.reason, "\n");
  }
  std::string out = "GPU health (NVML):\n";
  absl::StrAppend(&out, RenderHealthText(reading, /*verbose=*/false));
  return out;
}

absl::string_view XidMeaning(uint64_t xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception (often a program's illegal access or "
             "bad launch)";
    case 31:
      return "GPU memory page fault (illegal address: often a program bug)";
    case 32:
      return "invalid or corrupted push buffer stream";
    case 38:
      return "driver firmware error";
    case 43:
      return "GPU stopped processing (a program faulted; the GPU is still "
             "usable)";
    case 45:
      return "preemptive cleanup after an earlier error (context torn down)";
    case 48:
      return "double-bit (uncorrectable) ECC error";
    case 56:
      return "display engine error";
    case 57:
      return "error programming video memory interface";
    case 61:
      return "internal micro-controller breakpoint/warning";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping recorded";
    case 64:
      return "ECC page retirement or row remapping failure";
    case 68:
      return "video processor exception";
    case 69:
      return "graphics engine class error";
    case 74:
      return "NVLink error";
    case 79:
      return "GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained uncorrectable ECC error (only the affected work)";
    case 95:
      return "uncontained uncorrectable ECC error (GPU reset needed)";
    case 109:
      return "context switch timeout";
    case 119:
      return "GSP RPC timeout";
    case 120:
      return "GSP error";
    case 121:
      return "C2C link error";
    case 140:
      return "unrecovered ECC error";
    case 143:
      return "GPU initialization failure";
    default:
      return "";
  }
}

}  // namespace gmt
