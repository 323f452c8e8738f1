// Finding and loading libcupti (see cupti_loader.h).
#include "lib/platform/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/platform/real_functions.h"

namespace gmt {
namespace {

// The folder of the first loaded object whose file name contains `fragment`
// ("" if none).
std::string LoadedObjectPath(const char* fragment) {
  struct Search {
    const char* fragment;
    std::string found;
  } search{fragment, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const char* name = info->dlpi_name;
        if (name == nullptr || name[0] == '\0') return 0;
        const char* base = std::strrchr(name, '/');
        base = base != nullptr ? base + 1 : name;
        if (std::strstr(base, s->fragment) == nullptr) return 0;
        s->found = name;
        return 1;
      },
      &search);
  return search.found;
}

std::string Folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

template <typename Fn>
bool Bind(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(RealDlsym()(handle, name));
  return *out != nullptr;
}

const CuptiLibrary* Load(const std::vector<std::string>& candidates,
                         std::string* why) {
  std::vector<std::string> failures;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      failures.push_back(error != nullptr ? error : path);
      continue;
    }
    auto* lib = new CuptiLibrary();  // kept for the life of the process
    lib->path = path;
    const bool complete =
        Bind(handle, "cuptiSubscribe", &lib->subscribe) &&
        Bind(handle, "cuptiUnsubscribe", &lib->unsubscribe) &&
        Bind(handle, "cuptiEnableCallback", &lib->enable_callback) &&
        Bind(handle, "cuptiEnableDomain", &lib->enable_domain);
    Bind(handle, "cuptiSubscribe_v2", &lib->subscribe_v2);
    Bind(handle, "cuptiGetResultString", &lib->get_result_string);
    Bind(handle, "cuptiActivityRegisterCallbacks",
         &lib->activity_register_callbacks);
    Bind(handle, "cuptiActivityEnable", &lib->activity_enable);
    Bind(handle, "cuptiActivityDisable", &lib->activity_disable);
    Bind(handle, "cuptiActivityFlushAll", &lib->activity_flush_all);
    Bind(handle, "cuptiActivityGetNextRecord", &lib->activity_get_next_record);
    if (complete) return lib;
    failures.push_back(absl::StrCat(path, ": lacks the callback API"));
    delete lib;
    dlclose(handle);
  }
  *why = absl::StrCat("tried ", absl::StrJoin(failures, "; "));
  return nullptr;
}

}  // namespace

std::string CuptiLibrary::ResultName(CUptiResult result) const {
  const char* name = nullptr;
  if (get_result_string != nullptr &&
      get_result_string(result, &name) == CUPTI_SUCCESS && name != nullptr) {
    return name;
  }
  return absl::StrCat("CUPTI error ", static_cast<int>(result));
}

std::vector<std::string> CuptiCandidates() {
  std::vector<std::string> out;
  // A copy already in the process (Kineto, a profiler) comes first: two
  // libcupti copies in one process do not know of each other's subscriber.
  if (std::string loaded = LoadedObjectPath("libcupti.so"); !loaded.empty()) {
    out.push_back(loaded);
  }
  out.push_back("libcupti.so.13");
  out.push_back("libcupti.so.12");
  out.push_back("libcupti.so");
  // Next to the runtime: toolkit layouts, and the pip wheels' nvidia/ tree.
  if (std::string cudart = LoadedObjectPath("libcudart.so"); !cudart.empty()) {
    const std::string dir = Folder(cudart);
    out.push_back(dir + "/libcupti.so");
    out.push_back(dir + "/../extras/CUPTI/lib64/libcupti.so");
    out.push_back(dir + "/../../cuda_cupti/lib/libcupti.so.13");
    out.push_back(dir + "/../../cuda_cupti/lib/libcupti.so.12");
  }
  out.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  out.push_back("/usr/local/cuda/lib64/libcupti.so");
  return out;
}

const CuptiLibrary* LoadCupti(const std::string& explicit_path,
                              std::string* why) {
  static std::once_flag once;
  static const CuptiLibrary* library = nullptr;
  static std::string* failure = new std::string();
  std::call_once(once, [&] {
    library =
        Load(explicit_path.empty() ? CuptiCandidates()
                                   : std::vector<std::string>{explicit_path},
             failure);
  });
  if (library == nullptr && why != nullptr) *why = *failure;
  return library;
}

}  // namespace gmt
