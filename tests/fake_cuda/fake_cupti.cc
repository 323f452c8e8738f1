// Fake libcupti (libcupti.so.13 in the fake CUDA folder): the callback API
// subset gpumemtrace uses. One subscriber; the fake driver delivers
// driver-API callbacks to it for the entry points that are enabled.
//
// Environment (read at cuptiSubscribe):
//   FAKE_CUPTI_TAKEN=<name>   another tool holds CUPTI: subscribing fails with
//                             CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
//   FAKE_CUPTI_REPORT=<path>  at exit, write the enabled driver-API callback
//                             ids there, one "domain cbid" a line
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

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
