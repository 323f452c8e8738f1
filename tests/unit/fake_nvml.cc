// A stand-in libnvidia-ml for the health and memtest tests (loaded through
// GMT_NVML_LIBRARY): one "NVIDIA H200" with chosen values, some abnormal,
// some unsupported, so the gather path of lib/health/health.cc and the
// memtest's counters (lib/memtest/nvml_counters.cc) run without a GPU.
//
//   PCI bus id    0000:41:00.0
//   memory        total 140 GiB, used 1 GiB, reserved 512 MiB (v2)
//   ECC           on; corrected 5/40, uncorrected 0 volatile / 2 aggregate
//   retired pages 1 single-bit, 0 double-bit; none pending
//   remapped rows 3 correctable, 1 uncorrectable, pending, no failure
//   temperature   GPU 50 C (slowdown 90, shutdown 95, max 87); memory
//                 temperature NOT SUPPORTED; memory max 95
//   clock events  HW thermal slowdown (0x40)
//   processes     pid 1 (4 GiB) and pid 4242 (hidden), after one
//                 "insufficient size" answer
//   Xid events    one Xid 79, then timeouts
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {
using Ret = int;
struct Memory {
  unsigned long long total, free, used;
};
struct MemoryV2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};
struct ProcessInfo {
  unsigned pid;
  unsigned long long used;
  unsigned gi, ci;
};
struct FieldValue {
  unsigned field_id, scope_id;
  long long timestamp, latency;
  int value_type;
  Ret ret;
  unsigned long long value;
};
struct EventData {
  void* device;
  unsigned long long type, data;
  unsigned gi, ci;
};
constexpr unsigned long long kGiB = 1ull << 30;
int g_device_tag;  // the one device handle
int g_set_tag;
bool g_xid_sent = false;
}  // namespace

#define API extern "C" __attribute__((visibility("default"))) Ret
// FAKE_NVML_INIT_MS: how long nvmlInit takes (a machine with many GPUs).
API nvmlInit_v2() {
  if (const char* ms = std::getenv("FAKE_NVML_INIT_MS")) {
    usleep(static_cast<useconds_t>(std::atoi(ms)) * 1000);
  }
  return 0;
}
extern "C" __attribute__((visibility("default"))) const char* nvmlErrorString(
    Ret r) {
  return r == 3 ? "Not Supported" : r == 999 ? "Unknown Error" : "Fake Error";
}
API nvmlSystemGetDriverVersion(char* out, unsigned n) {
  std::strncpy(out, "570.86.15", n);
  return 0;
}
// FAKE_NVML_CUDA_VERSION=v2-fails: _v2 answers NVML_ERROR_UNKNOWN (999), as
// seen on a real driver; =both-fail: the older entry point too.
API nvmlSystemGetCudaDriverVersion_v2(int* v) {
  const char* mode = std::getenv("FAKE_NVML_CUDA_VERSION");
  if (mode != nullptr && *mode != '\0') return 999;
  *v = 12080;
  return 0;
}
API nvmlSystemGetCudaDriverVersion(int* v) {
  const char* mode = std::getenv("FAKE_NVML_CUDA_VERSION");
  if (mode != nullptr && std::strcmp(mode, "both-fail") == 0) return 999;
  *v = 12080;
  return 0;
}
API nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return 0;
}
API nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (i != 0) return 2;
  *d = &g_device_tag;
  return 0;
}
// The device sits at bus 0x41 (the test double of libcuda puts its device 0
// there too); NVML takes the domain in 4 or 8 hex digits.
API nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** d) {
  if (bus_id == nullptr || d == nullptr) return 2;  // invalid argument
  if (std::strcmp(bus_id, "0000:41:00.0") != 0 &&
      std::strcmp(bus_id, "00000000:41:00.0") != 0) {
    return 6;  // not found
  }
  *d = &g_device_tag;
  return 0;
}
API nvmlDeviceGetName(void*, char* out, unsigned n) {
  std::strncpy(out, "NVIDIA H200", n);
  return 0;
}
API nvmlDeviceGetUUID(void*, char* out, unsigned n) {
  std::strncpy(out, "GPU-fake", n);
  return 0;
}
API nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  *m = {140 * kGiB, 139 * kGiB, kGiB};
  return 0;
}
API nvmlDeviceGetMemoryInfo_v2(void*, MemoryV2* m) {
  if (m->version != (sizeof(MemoryV2) | (2u << 24))) return 25;  // version
  m->total = 140 * kGiB;
  m->reserved = kGiB / 2;
  m->used = kGiB;
  m->free = 139 * kGiB;
  return 0;
}
API nvmlDeviceGetEccMode(void*, int* cur, int* pend) {
  *cur = *pend = 1;
  return 0;
}
API nvmlDeviceGetTotalEccErrors(void*, unsigned type, unsigned counter,
                                unsigned long long* n) {
  *n = type == 0 ? (counter == 0 ? 5 : 40) : (counter == 0 ? 0 : 2);
  return 0;
}
API nvmlDeviceGetRetiredPages(void*, unsigned cause, unsigned* count,
                              unsigned long long*) {
  const unsigned have = cause == 0 ? 1 : 0;
  const bool small = *count < have;
  *count = have;
  return small ? 7 : 0;
}
API nvmlDeviceGetRetiredPagesPendingStatus(void*, int* s) {
  *s = 0;
  return 0;
}
API nvmlDeviceGetRemappedRows(void*, unsigned* c, unsigned* u, unsigned* p,
                              unsigned* f) {
  *c = 3;
  *u = 1;
  *p = 1;
  *f = 0;
  return 0;
}
API nvmlDeviceGetTemperature(void*, unsigned, unsigned* t) {
  *t = 50;
  return 0;
}
API nvmlDeviceGetTemperatureThreshold(void*, unsigned which, unsigned* t) {
  static const unsigned kValues[] = {95, 90, 95, 87};
  if (which > 3) return 2;
  *t = kValues[which];
  return 0;
}
API nvmlDeviceGetFieldValues(void*, int n, FieldValue* v) {
  for (int i = 0; i < n; ++i)
    v[i].ret = 3;  // memory temperature: not supported
  return 0;
}
API nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* r) {
  *r = 0x40;
  return 0;
}
API nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned* count,
                                            ProcessInfo* out) {
  static int calls = 0;
  if (calls++ == 0 || *count < 2) {  // the list "grew" since the caller asked
    *count = 2;
    return 7;
  }
  *count = 2;
  out[0] = {1, 4 * kGiB, 0, 0};
  out[1] = {4242, ~0ull, 0, 0};
  return 0;
}
API nvmlEventSetCreate(void** set) {
  *set = &g_set_tag;
  return 0;
}
API nvmlDeviceRegisterEvents(void*, unsigned long long, void*) { return 0; }
// FAKE_NVML_XID_AFTER_MS: the Xid comes that long after the first wait (a
// fault's event, which reaches NVML after the program saw the error).
API nvmlEventSetWait_v2(void*, EventData* e, unsigned timeout_ms) {
  if (g_xid_sent) return 10;  // timeout
  if (const char* after = std::getenv("FAKE_NVML_XID_AFTER_MS")) {
    static const auto first = std::chrono::steady_clock::now();
    const auto due = first + std::chrono::milliseconds(std::atoi(after));
    const auto now = std::chrono::steady_clock::now();
    if (now < due) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          due - now, std::chrono::milliseconds(timeout_ms)));
      if (std::chrono::steady_clock::now() < due) return 10;  // timeout
    }
  }
  g_xid_sent = true;
  *e = {&g_device_tag, 0x8, 79, 0, 0};
  return 0;
}
API nvmlEventSetFree(void*) { return 0; }
