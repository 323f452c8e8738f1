// include/gmt/gmt.h: the growth callback.
#define GMT_BUILDING_LIBRARY 1
#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "gmt/gmt.h"
#include "lib/engine/growth_callback.h"

namespace gmt {
namespace {

ABSL_CONST_INIT absl::Mutex g_callback_mu(absl::kConstInit);
gmt_growth_callback g_callback ABSL_GUARDED_BY(g_callback_mu) = nullptr;
void* g_callback_user ABSL_GUARDED_BY(g_callback_mu) = nullptr;

}  // namespace

void NotifyGrowthCallback(const char* site, uint64_t stack_id,
                          uint64_t first_bytes, uint64_t last_bytes,
                          uint32_t rises, double seconds) {
  gmt_growth_callback callback;
  void* user;
  {
    absl::MutexLock lock(&g_callback_mu);
    callback = g_callback;
    user = g_callback_user;
  }
  if (callback == nullptr) return;
  gmt_growth_event event{site,       stack_id, first_bytes,
                         last_bytes, rises,    seconds};
  // Outside the lock: the callback may register another one.
  callback(&event, user);
}

void set_growth_callback(gmt_growth_callback callback, void* user) {
  absl::MutexLock lock(&g_callback_mu);
  g_callback = callback;
  g_callback_user = user;
}

}  // namespace gmt

extern "C" void gmt_set_growth_callback(gmt_growth_callback callback,
                                        void* user) {
  gmt::set_growth_callback(callback, user);
}
