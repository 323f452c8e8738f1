#include "lib/core/optional_library.h"

#include <dlfcn.h>

#include <string>

#include "lib/core/log.h"

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
  // Never destroyed: the exit report may load libdw from the library's
  // destructor, after exit() has run the destructors of function statics (a
  // std::string here was read after its free, found by ASan).
  static const std::string* const folder = new std::string(OwnFolder());
  std::string beside_error;
  if (!folder->empty()) {
    const std::string beside = *folder + "/" + soname;
    if (void* handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return handle;
    }
    if (const char* e = dlerror()) beside_error = e;
  }
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    // Why, for whoever wonders where file:line or the fast unwinder went.
    LogNote(1, "%s could not be loaded: %s%s%s", soname,
            beside_error.empty() ? "" : beside_error.c_str(),
            beside_error.empty() ? "" : "; ", e != nullptr ? e : "");
  }
  return handle;
}

}  // namespace gmt
