// Fake libcupti (libcupti.so.13 in the fake CUDA folder): the callback API
// subset gpumemtrace uses. One subscriber; the fake driver delivers
// driver-API callbacks to it for the entry points that are enabled.
//
// The activity API: CUPTI_ACTIVITY_KIND_MEMORY2 only. Once
// enabled, the fake driver reports each device allocation and release
// (fake_cupti_emit.h); the records wait here until cuptiActivityFlushAll,
// which hands them over in CUpti_ActivityMemory4 records through the client's
// buffer callbacks, on the calling thread. FAKE_CUPTI_ACTIVITY_TAKEN=1 makes
// cuptiActivityRegisterCallbacks fail (another tool's).
//
// Environment (read at cuptiSubscribe):
//   FAKE_CUPTI_TAKEN=<name>   another tool holds CUPTI: subscribing fails with
//                             CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
//   FAKE_CUPTI_REPORT=<path>  at exit, write the enabled driver-API callback
//                             ids there, one "domain cbid" a line
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "tests/fake_cuda/fake_cupti_emit.h"

#define FAKE_CUPTI_API extern "C" __attribute__((visibility("default")))

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
};

namespace {

std::mutex g_mu;
CUpti_Subscriber_st* g_subscriber = nullptr;  // guarded by g_mu
std::set<std::pair<int, int>>* g_enabled =
    new std::set<std::pair<int, int>>();  // guarded by g_mu

void Emit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
          const void* data) {
  CUpti_Subscriber_st subscriber;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_subscriber == nullptr ||
        g_enabled->count({static_cast<int>(domain), static_cast<int>(cbid)}) ==
            0) {
      return;
    }
    subscriber = *g_subscriber;
  }
  subscriber.callback(subscriber.userdata, domain, cbid, data);
}

using SetEmitter = void (*)(void (*)(CUpti_CallbackDomain, CUpti_CallbackId,
                                     const void*));

SetEmitter DriverHook() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return nullptr;
  return reinterpret_cast<SetEmitter>(
      dlsym(cuda, "fake_cuda_set_cupti_emitter"));
}

void WriteReport() {
  const char* path = std::getenv("FAKE_CUPTI_REPORT");
  if (path == nullptr || path[0] == '\0') return;
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [domain, cbid] : *g_enabled) {
    std::fprintf(f, "%d %d\n", domain, cbid);
  }
  std::fclose(f);
}

CUptiResult Subscribe(CUpti_SubscriberHandle* out, CUpti_CallbackFunc callback,
                      void* userdata, CUpti_SubscriberParams* params) {
  if (out == nullptr || callback == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (const char* taken = std::getenv("FAKE_CUPTI_TAKEN");
      taken != nullptr && taken[0] != '\0') {
    if (params != nullptr && params->oldSubscriberName != nullptr &&
        params->oldSubscriberSize > 0) {
      std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
                    taken);
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_subscriber != nullptr) {
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  g_subscriber = new CUpti_Subscriber_st{callback, userdata};
  *out = g_subscriber;
  if (SetEmitter set = DriverHook()) set(&Emit);
  std::atexit(WriteReport);
  return CUPTI_SUCCESS;
}

}  // namespace

FAKE_CUPTI_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                          CUpti_CallbackFunc callback,
                                          void* userdata) {
  return Subscribe(subscriber, callback, userdata, nullptr);
}

FAKE_CUPTI_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                             CUpti_CallbackFunc callback,
                                             void* userdata,
                                             CUpti_SubscriberParams* params) {
  if (params != nullptr && params->structSize == 0) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return Subscribe(subscriber, callback, userdata, params);
}

FAKE_CUPTI_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (subscriber == nullptr || subscriber != g_subscriber) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  g_subscriber = nullptr;
  g_enabled->clear();
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult
cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (subscriber == nullptr || subscriber != g_subscriber) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  const std::pair<int, int> key{static_cast<int>(domain),
                                static_cast<int>(cbid)};
  if (enable != 0) {
    g_enabled->insert(key);
  } else {
    g_enabled->erase(key);
  }
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiEnableDomain(uint32_t enable,
                                             CUpti_SubscriberHandle subscriber,
                                             CUpti_CallbackDomain domain) {
  (void)enable;
  (void)domain;
  return subscriber == nullptr ? CUPTI_ERROR_INVALID_PARAMETER
                               : CUPTI_ERROR_NOT_SUPPORTED;
}

FAKE_CUPTI_API CUptiResult cuptiGetResultString(CUptiResult result,
                                                const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
             ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
             : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

// ---- Activity API ------------------------------------------

namespace {

std::mutex g_activity_mu;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;    // guarded
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;  // guarded
std::vector<CUpti_ActivityMemory4>* g_records =
    new std::vector<CUpti_ActivityMemory4>();  // guarded
uint64_t g_clock = 0;                          // guarded

void RecordMemory(const fake_cuda::FakeMemoryRecord& r) {
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = r.alloc
                              ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                              : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.memoryKind = r.managed ? CUPTI_ACTIVITY_MEMORY_KIND_MANAGED
                           : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = r.address;
  m.bytes = r.bytes;
  m.deviceId = static_cast<uint32_t>(r.device);
  m.isAsync = r.async ? 1 : 0;
  m.memoryPoolConfig.memoryPoolType =
      r.pool ? CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL
             : CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
  m.PC = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  std::lock_guard<std::mutex> lock(g_activity_mu);
  m.timestamp = ++g_clock;
  g_records->push_back(m);
}

using SetActivityEmitter = void (*)(fake_cuda::ActivityEmitter);

SetActivityEmitter ActivityHook() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return nullptr;
  return reinterpret_cast<SetActivityEmitter>(
      dlsym(cuda, "fake_cuda_set_cupti_activity_emitter"));
}

}  // namespace

FAKE_CUPTI_API CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                               CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (const char* taken = std::getenv("FAKE_CUPTI_ACTIVITY_TAKEN");
      taken != nullptr && taken[0] == '1') {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  std::lock_guard<std::mutex> lock(g_activity_mu);
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind != CUPTI_ACTIVITY_KIND_MEMORY2) return CUPTI_ERROR_NOT_SUPPORTED;
  SetActivityEmitter set = ActivityHook();
  if (set == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  set(&RecordMemory);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind != CUPTI_ACTIVITY_KIND_MEMORY2) return CUPTI_ERROR_NOT_SUPPORTED;
  if (SetActivityEmitter set = ActivityHook()) set(nullptr);
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityFlushAll(uint32_t /*flag*/) {
  std::vector<CUpti_ActivityMemory4> records;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_activity_mu);
    records.swap(*g_records);
    request = g_request;
    complete = g_complete;
  }
  if (request == nullptr || complete == nullptr) return CUPTI_SUCCESS;
  size_t next = 0;
  while (next < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    request(&buffer, &size, &max_records);
    const size_t fit = size / sizeof(CUpti_ActivityMemory4);
    if (buffer == nullptr || fit == 0) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t n = std::min(fit, records.size() - next);
    if (max_records != 0) n = std::min(n, max_records);
    std::memcpy(buffer, &records[next], n * sizeof(CUpti_ActivityMemory4));
    next += n;
    complete(nullptr, 0, buffer, size, n * sizeof(CUpti_ActivityMemory4));
  }
  return CUPTI_SUCCESS;
}

FAKE_CUPTI_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer,
                                                      size_t valid,
                                                      CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  uint8_t* next = *record == nullptr ? buffer
                                     : reinterpret_cast<uint8_t*>(*record) +
                                           sizeof(CUpti_ActivityMemory4);
  if (next + sizeof(CUpti_ActivityMemory4) > buffer + valid) {
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}
