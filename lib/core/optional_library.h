// The libraries the tool can do without but runs better with, loaded at run
// time: libunwind (fast stack capture), libdw and libelf (file:line, the
// symbol tables of the exit scan).
//
// Each is looked for beside the tool's own library first (the wheel carries
// them there, since a GPU machine often has none of them installed), then
// wherever the loader finds it. Never unloaded.
#ifndef GMT_LIB_CORE_OPTIONAL_LIBRARY_H_
#define GMT_LIB_CORE_OPTIONAL_LIBRARY_H_

#include <dlfcn.h>

namespace gmt {

// dlopen(RTLD_NOW | RTLD_LOCAL) of `soname` ("libunwind.so.8"); null when
// neither copy loads. A copy beside the tool loads only if what it needs
// does (load its companions beside the tool first: libelf before libdw).
void* OpenOptionalLibrary(const char* soname);

// Sets `*out` to the entry point `name` of a library OpenOptionalLibrary
// opened; whether it has one.
template <typename F>
bool LoadEntryPoint(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

}  // namespace gmt

#endif  // GMT_LIB_CORE_OPTIONAL_LIBRARY_H_
