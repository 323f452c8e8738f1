#include "lib/platform/nvml_loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace gmt {

std::string NvmlApi::ErrorText(nvml::Return r) const {
  const char* text = error_string != nullptr ? error_string(r) : nullptr;
  if (text == nullptr) return absl::StrCat("NVML error ", r);
  return text;
}

NvmlApi LoadNvmlFrom(const char* library) {
  NvmlApi api;
  // RTLD_LOCAL: NVML's symbols must not satisfy anyone else's lookups.
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    api.reason =
        absl::StrCat(library, " not found (", why ? why : "dlopen failed", ")");
    return api;
  }
#define GMT_NVML_RESOLVE(required, member, symbol, type)                      \
  api.member = reinterpret_cast<NvmlApi::member##_fn>(dlsym(handle, symbol)); \
  if ((required) && api.member == nullptr) {                                  \
    api.reason = absl::StrCat(library, " lacks ", symbol,                     \
                              " (driver too old for this tool)");             \
    return api;                                                               \
  }
  GMT_NVML_FUNCTIONS(GMT_NVML_RESOLVE)
#undef GMT_NVML_RESOLVE
  // The handle is kept open for the life of the process: the Xid thread and
  // late reports use it.
  const nvml::Return r = api.init();
  if (r != nvml::kSuccess) {
    api.reason = absl::StrCat("nvmlInit failed: ", api.ErrorText(r));
    return api;
  }
  api.available = true;
  return api;
}

const NvmlApi* LoadNvml() {
  static const NvmlApi* const api = [] {
    const char* path = std::getenv("GMT_NVML_LIBRARY");
    return new NvmlApi(LoadNvmlFrom(
        path != nullptr && *path != '\0' ? path : "libnvidia-ml.so.1"));
  }();
  return api;
}

}  // namespace gmt
