// CuptiLibrary: libcupti, loaded at run time (never linked), so that a machine
// without it still runs the tool with interposition only.
//
//   std::string why;
//   const CuptiLibrary* cupti = LoadCupti(options.cupti_library, &why);
//   if (cupti == nullptr) LogNote(1, "no CUPTI: %s", why.c_str());
//
// Only the functions the subscriber uses are resolved. A libcupti that some
// other component of the process already loaded (torch.profiler's Kineto, a
// profiler's injection) is preferred to loading a second copy.
#ifndef GMT_LIB_PLATFORM_CUPTI_LOADER_H_
#define GMT_LIB_PLATFORM_CUPTI_LOADER_H_

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>

#include <string>
#include <vector>

namespace gmt {

struct CuptiLibrary {
  std::string path;  // what dlopen was given (or the loaded copy's name)
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  // Null on a CUPTI without it (before CUDA 12.x's multi-subscriber API).
  decltype(&::cuptiSubscribe_v2) subscribe_v2 = nullptr;
  decltype(&::cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&::cuptiEnableCallback) enable_callback = nullptr;
  decltype(&::cuptiEnableDomain) enable_domain = nullptr;
  decltype(&::cuptiGetResultString) get_result_string = nullptr;  // optional
  // The activity API (memory records), optional: null when
  // this libcupti lacks any of them, and activity collection is then off.
  decltype(&::cuptiActivityRegisterCallbacks) activity_register_callbacks =
      nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityDisable) activity_disable = nullptr;
  decltype(&::cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  bool HasActivity() const {
    return activity_register_callbacks != nullptr &&
           activity_enable != nullptr && activity_disable != nullptr &&
           activity_flush_all != nullptr && activity_get_next_record != nullptr;
  }

  // "CUPTI_ERROR_..." for `result`, or its number.
  std::string ResultName(CUptiResult result) const;
};

// Loads libcupti once per process and returns it, or null when none could be
// loaded or it lacks a required function; `why` then lists what was tried.
// `explicit_path` (option cupti_library), when not empty, is the only
// candidate. Later calls return the first answer. Thread-safe.
const CuptiLibrary* LoadCupti(const std::string& explicit_path,
                              std::string* why);

// The candidates LoadCupti tries, in order, when no path is given (exposed
// for tests).
std::vector<std::string> CuptiCandidates();

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_CUPTI_LOADER_H_
