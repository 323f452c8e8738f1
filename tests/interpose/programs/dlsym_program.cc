// Finds the driver the way a statically linked runtime (or a framework's
// lazy loader) does: dlopen("libcuda.so.1") + dlsym, never by linking.
//
//   LeakThroughDlsym     dlsym(handle, "cuMemAlloc_v2"), 1212 bytes, leaked
//   LeakThroughDlsymV1   dlsym(handle, "cuGetProcAddress") (the CUDA 11 entry
//                        point) -> "cuMemAlloc" -> 1313 bytes, leaked
//   untouched names      dlsym of entry points the tool does not handle must
//                        still come from libcuda.so.1 (printed: the module)
#include <dlfcn.h>

#include <cstring>
#include <initializer_list>

#include "tests/interpose/programs/program_util.h"

namespace {

using InitFn = CUresult (*)(unsigned int);
using RetainFn = CUresult (*)(CUcontext*, CUdevice);
using SetCurrentFn = CUresult (*)(CUcontext);
using MemAllocFn = CUresult (*)(CUdeviceptr*, size_t);
using GetProcV1Fn = CUresult (*)(const char*, void**, int, cuuint64_t);

void* g_cuda = nullptr;

void* Sym(const char* name) { return dlsym(g_cuda, name); }

void PrintResult(const char* what, CUresult r) {
  std::printf("%s -> %d\n", what, static_cast<int>(r));
}

// The file name of the object that defines `fn`.
const char* ModuleOf(void* fn) {
  Dl_info info = {};
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr) {
    return "?";
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

}  // namespace

NOINLINE void LeakThroughDlsym() {
  CUdeviceptr p = 0;
  PrintResult("dlsym cuMemAlloc_v2(1212)",
              reinterpret_cast<MemAllocFn>(Sym("cuMemAlloc_v2"))(&p, 1212));
  AfterCall();
}

NOINLINE void LeakThroughDlsymV1() {
  void* fn = nullptr;
  PrintResult("dlsym cuGetProcAddress(cuMemAlloc)",
              reinterpret_cast<GetProcV1Fn>(Sym("cuGetProcAddress"))(
                  "cuMemAlloc", &fn, 12000, 0));
  CUdeviceptr p = 0;
  PrintResult("v1 cuMemAlloc(1313)",
              reinterpret_cast<MemAllocFn>(fn)(&p, 1313));
  AfterCall();
}

int main() {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  std::printf("dlopen %s\n", g_cuda ? "ok" : "failed");
  if (g_cuda == nullptr) return 1;
  PrintResult("cuInit", reinterpret_cast<InitFn>(Sym("cuInit"))(0));
  CUcontext ctx = nullptr;
  PrintResult(
      "cuDevicePrimaryCtxRetain",
      reinterpret_cast<RetainFn>(Sym("cuDevicePrimaryCtxRetain"))(&ctx, 0));
  PrintResult("cuCtxSetCurrent",
              reinterpret_cast<SetCurrentFn>(Sym("cuCtxSetCurrent"))(ctx));
  LeakThroughDlsym();
  LeakThroughDlsymV1();
  for (const char* name : {"cuInit", "cuDeviceGetName", "cuCtxSetCurrent",
                           "cuDeviceTotalMem_v2", "cuArrayCreate_v2"}) {
    std::printf("dlsym %s from %s\n", name, ModuleOf(Sym(name)));
  }
  std::printf("dlsym cuNoSuchFunction %s\n",
              Sym("cuNoSuchFunction") == nullptr ? "null" : "non-null");
  std::printf("done\n");
  return 0;
}
