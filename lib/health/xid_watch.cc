#include "lib/health/xid_watch.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lib/core/clock.h"
#include "lib/core/tool_thread.h"
#include "lib/platform/nvml_loader.h"

namespace gmt {
namespace {

// Bounded: a broken GPU can raise Xids in a storm.
constexpr size_t kMaxEvents = 1024;
// How long one wait lasts: the longest a stop request waits for the
// thread to leave NVML, which the exit report does (the exit's other work,
// the reachability scan, takes a few ms when the blocks are an allocator's
// and hides no longer wait). A wake-up every 20 ms costs the process
// nothing it could notice.
constexpr unsigned kWaitMs = 20;

ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);
bool g_started ABSL_GUARDED_BY(g_mu) = false;
bool g_watched ABSL_GUARDED_BY(g_mu) = false;
std::string* g_status ABSL_GUARDED_BY(g_mu) = nullptr;
std::vector<XidEvent>* g_events ABSL_GUARDED_BY(g_mu) = nullptr;
std::atomic<bool> g_stop{false};
std::atomic<bool> g_running{false};

bool EventRecorded() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  return g_events != nullptr && !g_events->empty();
}

void SetStatus(std::string status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  if (g_status == nullptr) g_status = new std::string;
  *g_status = std::move(status);
}

void WatchLoop(const NvmlApi* api, nvml::EventSet set,
               std::vector<nvml::Device> devices) {
  struct Running {
    ~Running() { g_running.store(false, std::memory_order_release); }
  } running;
  while (!g_stop.load(std::memory_order_acquire)) {
    nvml::EventData data{};
    const nvml::Return r = api->event_set_wait(set, &data, kWaitMs);
    if (r == nvml::kTimeout) continue;
    if (r != nvml::kSuccess) {
      absl::MutexLock lock(&g_mu);
      SetStatus(absl::StrCat("stopped: nvmlEventSetWait failed: ",
                             api->ErrorText(r)));
      return;  // the set stays: freeing it could race a late reader
    }
    if ((data.event_type & nvml::kEventXidCriticalError) == 0) continue;
    XidEvent e;
    e.time_s = static_cast<double>(SinceStartNs(NowNs())) * 1e-9;
    e.xid = data.event_data;
    e.device = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i] == data.device) e.device = static_cast<int>(i);
    }
    absl::MutexLock lock(&g_mu);
    if (g_events == nullptr) g_events = new std::vector<XidEvent>;
    if (g_events->size() < kMaxEvents) g_events->push_back(e);
  }
}

}  // namespace

void DeclineXidWatch(const std::string& why) {
  absl::MutexLock lock(&g_mu);
  if (g_started) return;
  g_started = true;
  SetStatus(absl::StrCat("not watched: ", why));
}

bool StartXidWatch() {
  absl::MutexLock lock(&g_mu);
  if (g_started) return g_watched;
  g_started = true;
  const NvmlApi* api = LoadNvml();
  if (!api->available) {
    SetStatus(absl::StrCat("not watched: NVML unavailable: ", api->reason));
    return false;
  }
  if (api->event_set_create == nullptr ||
      api->device_register_events == nullptr ||
      api->event_set_wait == nullptr) {
    SetStatus("not watched: this NVML has no event sets");
    return false;
  }
  nvml::EventSet set = nullptr;
  nvml::Return r = api->event_set_create(&set);
  if (r != nvml::kSuccess) {
    SetStatus(
        absl::StrCat("not watched: nvmlEventSetCreate: ", api->ErrorText(r)));
    return false;
  }
  unsigned count = 0;
  std::vector<nvml::Device> devices;
  int registered = 0;
  std::string last_error;
  if (api->device_get_count(&count) == nvml::kSuccess) {
    for (unsigned i = 0; i < count; ++i) {
      nvml::Device d = nullptr;
      if (api->device_get_handle_by_index(i, &d) != nvml::kSuccess) d = nullptr;
      devices.push_back(d);
      if (d == nullptr) continue;
      r = api->device_register_events(d, nvml::kEventXidCriticalError, set);
      if (r == nvml::kSuccess) {
        ++registered;
      } else {
        last_error = api->ErrorText(r);
      }
    }
  }
  if (registered == 0) {
    if (api->event_set_free != nullptr) api->event_set_free(set);
    SetStatus(absl::StrCat("not watched: no device accepted Xid events",
                           last_error.empty() ? "" : " (", last_error,
                           last_error.empty() ? "" : ")"));
    return false;
  }
  // On a stack the exit scan leaves alone (lib/core/tool_thread.h).
  g_running.store(true, std::memory_order_release);
  if (!StartToolThread([api, set, devices = std::move(devices)] {
        WatchLoop(api, set, devices);
      })) {
    g_running.store(false, std::memory_order_release);
    SetStatus("not watched: could not start a thread");
    return false;
  }
  g_watched = true;
  // NVML tells an event set only of Xids after its registration (H200: a
  // fault 0.36 s into a process, before its watcher had registered, was seen
  // by another process's set but not by its own): the time says which
  // faults could be seen.
  SetStatus(absl::StrFormat(
      "watched on %d device%s since %.3f s (an Xid before that is not seen)",
      registered, registered == 1 ? "" : "s",
      static_cast<double>(SinceStartNs(NowNs())) * 1e-9));
  return true;
}

bool WaitForFirstXid(int wait_ms) {
  absl::MutexLock lock(&g_mu);
  if (!EventRecorded() && g_watched &&
      g_running.load(std::memory_order_acquire)) {
    g_mu.AwaitWithTimeout(absl::Condition(
                              +[](void*) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                return EventRecorded();
                              },
                              nullptr),
                          absl::Milliseconds(wait_ms));
  }
  return EventRecorded();
}

void RequestXidWatchStop() { g_stop.store(true, std::memory_order_release); }

bool StopXidWatch(int wait_ms) {
  g_stop.store(true, std::memory_order_release);
  for (int waited = 0; g_running.load(std::memory_order_acquire);
       waited += 10) {
    if (waited >= wait_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void XidSnapshot(bool* watched, std::string* status,
                 std::vector<XidEvent>* events) {
  absl::MutexLock lock(&g_mu);
  *watched = g_watched;
  *status = g_status != nullptr ? *g_status
                                : std::string("not watched (not started)");
  events->clear();
  if (g_events != nullptr) *events = *g_events;
}

}  // namespace gmt
