// Looks up every driver entry point the guard-zone shims cover through
// cuGetProcAddress (the way libcudart finds the driver), per version and
// per-thread flag, and prints whether it got the exported variant the real
// driver would give, and from which module. Also says where the program's
// runtime symbols resolve. Under the tool every pointer must be the tool's
// shim for exactly that variant (DESIGN §2, pitfall 1).
//
//   "<base> <version> <default|per-thread> -> <symbol> <match|MISMATCH> in
//   <module>"
#include <dlfcn.h>

#include <cstring>

#include "tests/interpose/programs/program_util.h"

namespace {

struct Lookup {
  const char* base;
  int version;
  bool per_thread;
  const char* expected;  // the exported symbol the driver hands out
};

constexpr Lookup kLookups[] = {
    {"cuMemcpy", 13000, false, "cuMemcpy"},
    {"cuMemcpy", 13000, true, "cuMemcpy_ptds"},
    {"cuMemcpyPeer", 13000, false, "cuMemcpyPeer"},
    {"cuMemcpyPeer", 13000, true, "cuMemcpyPeer_ptds"},
    {"cuMemcpyAsync", 13000, false, "cuMemcpyAsync"},
    {"cuMemcpyAsync", 13000, true, "cuMemcpyAsync_ptsz"},
    {"cuMemcpyPeerAsync", 13000, false, "cuMemcpyPeerAsync"},
    {"cuMemcpyPeerAsync", 13000, true, "cuMemcpyPeerAsync_ptsz"},
    {"cuMemcpyHtoD", 13000, false, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 13000, true, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyDtoH", 13000, false, "cuMemcpyDtoH_v2"},
    {"cuMemcpyDtoH", 13000, true, "cuMemcpyDtoH_v2_ptds"},
    {"cuMemcpyDtoD", 13000, false, "cuMemcpyDtoD_v2"},
    {"cuMemcpyDtoD", 13000, true, "cuMemcpyDtoD_v2_ptds"},
    {"cuMemcpyHtoDAsync", 13000, false, "cuMemcpyHtoDAsync_v2"},
    {"cuMemcpyHtoDAsync", 13000, true, "cuMemcpyHtoDAsync_v2_ptsz"},
    {"cuMemcpyDtoHAsync", 13000, false, "cuMemcpyDtoHAsync_v2"},
    {"cuMemcpyDtoHAsync", 13000, true, "cuMemcpyDtoHAsync_v2_ptsz"},
    {"cuMemcpyDtoDAsync", 13000, false, "cuMemcpyDtoDAsync_v2"},
    {"cuMemcpyDtoDAsync", 13000, true, "cuMemcpyDtoDAsync_v2_ptsz"},
    {"cuMemcpy2D", 13000, false, "cuMemcpy2D_v2"},
    {"cuMemcpy2D", 13000, true, "cuMemcpy2D_v2_ptds"},
    {"cuMemcpy2DUnaligned", 13000, false, "cuMemcpy2DUnaligned_v2"},
    {"cuMemcpy2DUnaligned", 13000, true, "cuMemcpy2DUnaligned_v2_ptds"},
    {"cuMemcpy3D", 13000, false, "cuMemcpy3D_v2"},
    {"cuMemcpy3D", 13000, true, "cuMemcpy3D_v2_ptds"},
    {"cuMemcpy2DAsync", 13000, false, "cuMemcpy2DAsync_v2"},
    {"cuMemcpy2DAsync", 13000, true, "cuMemcpy2DAsync_v2_ptsz"},
    {"cuMemcpy3DAsync", 13000, false, "cuMemcpy3DAsync_v2"},
    {"cuMemcpy3DAsync", 13000, true, "cuMemcpy3DAsync_v2_ptsz"},
    {"cuMemsetD8", 13000, false, "cuMemsetD8_v2"},
    {"cuMemsetD8", 13000, true, "cuMemsetD8_v2_ptds"},
    {"cuMemsetD16", 13000, false, "cuMemsetD16_v2"},
    {"cuMemsetD16", 13000, true, "cuMemsetD16_v2_ptds"},
    {"cuMemsetD32", 13000, false, "cuMemsetD32_v2"},
    {"cuMemsetD32", 13000, true, "cuMemsetD32_v2_ptds"},
    {"cuMemsetD2D8", 13000, false, "cuMemsetD2D8_v2"},
    {"cuMemsetD2D8", 13000, true, "cuMemsetD2D8_v2_ptds"},
    {"cuMemsetD2D16", 13000, false, "cuMemsetD2D16_v2"},
    {"cuMemsetD2D16", 13000, true, "cuMemsetD2D16_v2_ptds"},
    {"cuMemsetD2D32", 13000, false, "cuMemsetD2D32_v2"},
    {"cuMemsetD2D32", 13000, true, "cuMemsetD2D32_v2_ptds"},
    {"cuMemsetD8Async", 13000, false, "cuMemsetD8Async"},
    {"cuMemsetD8Async", 13000, true, "cuMemsetD8Async_ptsz"},
    {"cuMemsetD16Async", 13000, false, "cuMemsetD16Async"},
    {"cuMemsetD16Async", 13000, true, "cuMemsetD16Async_ptsz"},
    {"cuMemsetD32Async", 13000, false, "cuMemsetD32Async"},
    {"cuMemsetD32Async", 13000, true, "cuMemsetD32Async_ptsz"},
    {"cuMemsetD2D8Async", 13000, false, "cuMemsetD2D8Async"},
    {"cuMemsetD2D8Async", 13000, true, "cuMemsetD2D8Async_ptsz"},
    {"cuMemsetD2D16Async", 13000, false, "cuMemsetD2D16Async"},
    {"cuMemsetD2D16Async", 13000, true, "cuMemsetD2D16Async_ptsz"},
    {"cuMemsetD2D32Async", 13000, false, "cuMemsetD2D32Async"},
    {"cuMemsetD2D32Async", 13000, true, "cuMemsetD2D32Async_ptsz"},
    {"cuMemGetAddressRange", 13000, false, "cuMemGetAddressRange_v2"},
    {"cuPointerGetAttribute", 13000, false, "cuPointerGetAttribute"},
    {"cuPointerGetAttributes", 13000, false, "cuPointerGetAttributes"},
    {"cuIpcGetMemHandle", 13000, false, "cuIpcGetMemHandle"},
    {"cuIpcOpenMemHandle", 13000, false, "cuIpcOpenMemHandle_v2"},
    {"cuIpcCloseMemHandle", 13000, false, "cuIpcCloseMemHandle"},
    {"cuLaunchKernel", 13000, false, "cuLaunchKernel"},
    {"cuLaunchKernel", 13000, true, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 13000, false, "cuLaunchKernelEx"},
    {"cuLaunchKernelEx", 13000, true, "cuLaunchKernelEx_ptsz"},
    {"cuLaunchCooperativeKernel", 13000, false, "cuLaunchCooperativeKernel"},
    {"cuLaunchCooperativeKernel", 13000, true,
     "cuLaunchCooperativeKernel_ptsz"},
    {"cuGraphLaunch", 13000, false, "cuGraphLaunch"},
    {"cuGraphLaunch", 13000, true, "cuGraphLaunch_ptsz"},
    {"cuCtxSynchronize", 13000, false, "cuCtxSynchronize_v2"},
    {"cuStreamSynchronize", 13000, false, "cuStreamSynchronize"},
    {"cuStreamSynchronize", 13000, true, "cuStreamSynchronize_ptsz"},
    {"cuEventSynchronize", 13000, false, "cuEventSynchronize"},
    {"cuIpcOpenMemHandle", 10020, false, "cuIpcOpenMemHandle"},
    {"cuCtxSynchronize", 12080, false, "cuCtxSynchronize"},
    {"cuEventSynchronize", 13000, true, "cuEventSynchronize"},
};

const char* const kRuntimeSymbols[] = {
    "cudaMemcpy",
    "cudaMemcpy_ptds",
    "cudaMemcpyAsync",
    "cudaMemcpyAsync_ptsz",
    "cudaMemset",
    "cudaMemset_ptds",
    "cudaMemsetAsync",
    "cudaMemsetAsync_ptsz",
    "cudaMemcpy2D",
    "cudaMemcpy2D_ptds",
    "cudaMemcpy2DAsync",
    "cudaMemcpy2DAsync_ptsz",
    "cudaMemset2D",
    "cudaMemset2D_ptds",
    "cudaMemset2DAsync",
    "cudaMemset2DAsync_ptsz",
    "cudaMemcpy3D",
    "cudaMemcpy3D_ptds",
    "cudaMemcpy3DAsync",
    "cudaMemcpy3DAsync_ptsz",
    "cudaMemset3D",
    "cudaMemset3D_ptds",
    "cudaMemset3DAsync",
    "cudaMemset3DAsync_ptsz",
    "cudaMemcpyPeer",
    "cudaMemcpyPeerAsync",
    "cudaIpcGetMemHandle",
    "cudaIpcOpenMemHandle",
    "cudaIpcCloseMemHandle",
    "cudaLaunchKernel",
    "cudaLaunchKernel_ptsz",
    "cudaLaunchKernelExC",
    "cudaLaunchKernelExC_ptsz",
    "cudaLaunchCooperativeKernel",
    "cudaLaunchCooperativeKernel_ptsz",
    "cudaGraphLaunch",
    "cudaGraphLaunch_ptsz",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaStreamSynchronize_ptsz",
    "cudaEventSynchronize",
};

const char* ModuleOf(const void* p) {
  Dl_info info{};
  if (p == nullptr || dladdr(p, &info) == 0 || info.dli_fname == nullptr) {
    return "?";
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash != nullptr ? slash + 1 : info.dli_fname;
}

}  // namespace

int main() {
  if (!DriverSetup(0)) return 1;
  for (const Lookup& l : kLookups) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status =
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = cuGetProcAddress(
        l.base, &fn, l.version,
        l.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                     : CU_GET_PROC_ADDRESS_DEFAULT,
        &status);
    void* exported = dlsym(RTLD_DEFAULT, l.expected);
    std::printf("%s %d %s -> %s %s in %s (result %d status %d)\n", l.base,
                l.version, l.per_thread ? "per-thread" : "default", l.expected,
                fn != nullptr && fn == exported ? "match" : "MISMATCH",
                ModuleOf(fn), static_cast<int>(r), static_cast<int>(status));
  }
  for (const char* symbol : kRuntimeSymbols) {
    std::printf("runtime %s in %s\n", symbol,
                ModuleOf(dlsym(RTLD_DEFAULT, symbol)));
  }
  std::printf("done\n");
  return 0;
}
