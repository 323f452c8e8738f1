// NVML (libnvidia-ml.so.1), loaded at run time with dlopen: the library and
// the launcher must load and run on machines without it. Never linked.
//
// Only the functions the tool uses are resolved (the health reading of
// lib/health/, the memtest's ECC and remapped-row counters), each by exact
// name from one table (GMT_NVML_FUNCTIONS below). The types below are the few
// NVML ABI structs and constants those functions take, declared here because
// nvml.h is not always installed; their layouts are NVML's stable ABI.
//
//   const NvmlApi* nvml = LoadNvml();
//   if (!nvml->available) puts(nvml->reason.c_str());
//
// Thread safety: LoadNvml is thread-safe; the NVML functions are themselves
// thread-safe.
#ifndef GMT_LIB_PLATFORM_NVML_LOADER_H_
#define GMT_LIB_PLATFORM_NVML_LOADER_H_

#include <cstdint>
#include <string>

namespace gmt {

namespace nvml {
using Return = int;  // nvmlReturn_t
using Device = struct DeviceOpaque*;
using EventSet = struct EventSetOpaque*;

constexpr Return kSuccess = 0;
constexpr Return kNotSupported = 3;
constexpr Return kInsufficientSize = 7;
constexpr Return kTimeout = 10;
constexpr Return kFunctionNotFound = 13;

constexpr unsigned kTemperatureGpu = 0;
// nvmlTemperatureThresholds_t
constexpr unsigned kThresholdShutdown = 0;
constexpr unsigned kThresholdSlowdown = 1;
constexpr unsigned kThresholdMemMax = 2;
constexpr unsigned kThresholdGpuMax = 3;
// nvmlMemoryErrorType_t, nvmlEccCounterType_t
constexpr unsigned kCorrected = 0;
constexpr unsigned kUncorrected = 1;
constexpr unsigned kVolatile = 0;
constexpr unsigned kAggregate = 1;
// nvmlPageRetirementCause_t
constexpr unsigned kRetiredSingleBit = 0;
constexpr unsigned kRetiredDoubleBit = 1;
// nvmlDeviceGetFieldValues: NVML_FI_DEV_MEMORY_TEMP.
constexpr unsigned kFieldMemoryTemp = 82;
constexpr unsigned long long kEventXidCriticalError = 0x8;
constexpr unsigned long long kValueNotAvailable = ~0ULL;

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct MemoryV2 {  // nvmlMemory_v2_t
  unsigned version;
  unsigned long long total, reserved, free, used;
};
constexpr unsigned kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);

struct ProcessInfo {  // nvmlProcessInfo_t (v2/v3 layout)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};

struct FieldValue {  // nvmlFieldValue_t
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;  // nvmlValueType_t
  Return nvml_return;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
  } value;
};

struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
}  // namespace nvml

// The NVML entry points the tool uses. A required one missing makes NVML
// unavailable; an optional one (newer NVML only) is null when absent.
struct NvmlApi {
  bool available = false;
  std::string reason;  // why not available

#define GMT_NVML_FUNCTIONS(X)                                                 \
  X(true, init, "nvmlInit_v2", nvml::Return (*)())                            \
  X(true, error_string, "nvmlErrorString", const char* (*)(nvml::Return))     \
  X(true, system_get_driver_version, "nvmlSystemGetDriverVersion",            \
    nvml::Return (*)(char*, unsigned))                                        \
  X(false, system_get_cuda_driver_version,                                    \
    "nvmlSystemGetCudaDriverVersion_v2", nvml::Return (*)(int*))              \
  X(false, system_get_cuda_driver_version_v1,                                 \
    "nvmlSystemGetCudaDriverVersion", nvml::Return (*)(int*))                 \
  X(true, device_get_count, "nvmlDeviceGetCount_v2",                          \
    nvml::Return (*)(unsigned*))                                              \
  X(true, device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2",        \
    nvml::Return (*)(unsigned, nvml::Device*))                                \
  X(false, device_get_handle_by_pci_bus_id,                                   \
    "nvmlDeviceGetHandleByPciBusId_v2",                                       \
    nvml::Return (*)(const char*, nvml::Device*))                             \
  X(true, device_get_name, "nvmlDeviceGetName",                               \
    nvml::Return (*)(nvml::Device, char*, unsigned))                          \
  X(false, device_get_uuid, "nvmlDeviceGetUUID",                              \
    nvml::Return (*)(nvml::Device, char*, unsigned))                          \
  X(true, device_get_memory_info, "nvmlDeviceGetMemoryInfo",                  \
    nvml::Return (*)(nvml::Device, nvml::Memory*))                            \
  X(false, device_get_memory_info_v2, "nvmlDeviceGetMemoryInfo_v2",           \
    nvml::Return (*)(nvml::Device, nvml::MemoryV2*))                          \
  X(false, device_get_ecc_mode, "nvmlDeviceGetEccMode",                       \
    nvml::Return (*)(nvml::Device, int*, int*))                               \
  X(false, device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors",        \
    nvml::Return (*)(nvml::Device, unsigned, unsigned, unsigned long long*))  \
  X(false, device_get_retired_pages, "nvmlDeviceGetRetiredPages",             \
    nvml::Return (*)(nvml::Device, unsigned, unsigned*, unsigned long long*)) \
  X(false, device_get_retired_pages_pending_status,                           \
    "nvmlDeviceGetRetiredPagesPendingStatus",                                 \
    nvml::Return (*)(nvml::Device, int*))                                     \
  X(false, device_get_remapped_rows, "nvmlDeviceGetRemappedRows",             \
    nvml::Return (*)(nvml::Device, unsigned*, unsigned*, unsigned*,           \
                     unsigned*))                                              \
  X(false, device_get_temperature, "nvmlDeviceGetTemperature",                \
    nvml::Return (*)(nvml::Device, unsigned, unsigned*))                      \
  X(false, device_get_temperature_threshold,                                  \
    "nvmlDeviceGetTemperatureThreshold",                                      \
    nvml::Return (*)(nvml::Device, unsigned, unsigned*))                      \
  X(false, device_get_field_values, "nvmlDeviceGetFieldValues",               \
    nvml::Return (*)(nvml::Device, int, nvml::FieldValue*))                   \
  X(false, device_get_clocks_event_reasons,                                   \
    "nvmlDeviceGetCurrentClocksEventReasons",                                 \
    nvml::Return (*)(nvml::Device, unsigned long long*))                      \
  X(false, device_get_clocks_throttle_reasons,                                \
    "nvmlDeviceGetCurrentClocksThrottleReasons",                              \
    nvml::Return (*)(nvml::Device, unsigned long long*))                      \
  X(false, device_get_compute_processes_v3,                                   \
    "nvmlDeviceGetComputeRunningProcesses_v3",                                \
    nvml::Return (*)(nvml::Device, unsigned*, nvml::ProcessInfo*))            \
  X(false, device_get_compute_processes_v2,                                   \
    "nvmlDeviceGetComputeRunningProcesses_v2",                                \
    nvml::Return (*)(nvml::Device, unsigned*, nvml::ProcessInfo*))            \
  X(false, event_set_create, "nvmlEventSetCreate",                            \
    nvml::Return (*)(nvml::EventSet*))                                        \
  X(false, device_register_events, "nvmlDeviceRegisterEvents",                \
    nvml::Return (*)(nvml::Device, unsigned long long, nvml::EventSet))       \
  X(false, event_set_wait, "nvmlEventSetWait_v2",                             \
    nvml::Return (*)(nvml::EventSet, nvml::EventData*, unsigned))             \
  X(false, event_set_free, "nvmlEventSetFree", nvml::Return (*)(nvml::EventSet))

#define GMT_NVML_MEMBER(required, member, symbol, type) \
  using member##_fn = type;                             \
  member##_fn member = nullptr;
  GMT_NVML_FUNCTIONS(GMT_NVML_MEMBER)
#undef GMT_NVML_MEMBER

  // "NVML_ERROR_NOT_SUPPORTED"-style text for a code (nvmlErrorString).
  std::string ErrorText(nvml::Return r) const;
};

// Loads and initializes NVML once (dlopen of `library`, default
// libnvidia-ml.so.1; GMT_NVML_LIBRARY overrides it, for tests). Never null,
// never throws; `available` false says why.
const NvmlApi* LoadNvml();

// The same, uncached, from a given path (tests).
NvmlApi LoadNvmlFrom(const char* library);

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_NVML_LOADER_H_
