#include "lib/core/optional_library.h"

#include <dlfcn.h>

#include <string>

namespace gmt {
namespace {

// The folder of the library this code is in ("" when unknown).
std::string OwnFolder() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&OwnFolder), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

void* OpenOptionalLibrary(const char* soname) {
  static const std::string folder = OwnFolder();
  if (!folder.empty()) {
    const std::string beside = folder + "/" + soname;
    if (void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return handle;
    }
  }
  return dlopen(soname, RTLD_NOW | RTLD_LOCAL);
}

}  // namespace gmt
