// Host time of the driver calls the tool makes around a program's tensor
// (per call, median of rounds): what a per-operation budget is made of.
//
//   nvcc -O2 -o driver_call_costs driver_call_costs.cc -lcuda
//   ./driver_call_costs            (prints "<call> <ns>" lines)
//
// The cheap bookkeeping calls (cuCtxGetCurrent, cuStreamIsCapturing,
// cuThreadExchangeStreamCaptureMode, cuEventQuery) against the ones that
// enqueue work (cuMemsetD8Async, cuEventRecord, cuMemcpyDtoHAsync,
// cuMemAllocAsync + cuMemFreeAsync), on a non-blocking stream and on the
// legacy stream, as PyTorch's default stream is. Then cuLaunchKernel of an
// empty kernel whose one parameter is 16 B, 256 B, 1,048 B (the inline
// check's) or 2,096 B (the check riding on a fill): what the size of a
// launch's parameters costs the host.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

void Check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "driver_call_costs: %s: %s\n", what, s ? s : "?");
    std::exit(1);
  }
}

double MedianNs(int calls, const std::function<void()>& call,
                const std::function<void()>& between = nullptr) {
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    if (between) between();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// Empty kernels, one by-value parameter of each size (JIT-compiled PTX).
constexpr char kEmptyKernels[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry p16(.param .align 8 .b8 p[16]) { ret; }
.visible .entry p256(.param .align 8 .b8 p[256]) { ret; }
.visible .entry p1048(.param .align 8 .b8 p[1048]) { ret; }
.visible .entry p2096(.param .align 8 .b8 p[2096]) { ret; }
)";

}  // namespace

int main() {
  Check(cuInit(0), "cuInit");
  CUdevice dev;
  Check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  Check(cuDevicePrimaryCtxRetain(&ctx, dev), "retain");
  Check(cuCtxSetCurrent(ctx), "set current");
  CUstream s;
  Check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "stream");
  CUdeviceptr buf;
  Check(cuMemAlloc(&buf, 64 << 20), "alloc");
  void* host = nullptr;
  Check(cuMemAllocHost(&host, 4096), "host alloc");
  CUevent ev;
  Check(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "event");
  Check(cuEventRecord(ev, s), "record");
  Check(cuStreamSynchronize(s), "sync");
  const int n = 2000;
  auto drain = [&] { cuCtxSynchronize(); };
  for (CUstream st : {s, static_cast<CUstream>(nullptr)}) {
    const char* name = st == nullptr ? "legacy" : "stream";
    std::printf("cuCtxGetCurrent %.0f\n", MedianNs(n, [] {
                  CUcontext c;
                  cuCtxGetCurrent(&c);
                }));
    std::printf("cuStreamIsCapturing[%s] %.0f\n", name, MedianNs(n, [&] {
                  CUstreamCaptureStatus st2;
                  cuStreamIsCapturing(st, &st2);
                }));
    std::printf("cuThreadExchangeStreamCaptureMode(x2) %.0f\n", MedianNs(n, [] {
                  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
                  cuThreadExchangeStreamCaptureMode(&m);
                  cuThreadExchangeStreamCaptureMode(&m);
                }));
    std::printf("cuEventQuery(done) %.0f\n",
                MedianNs(n, [&] { cuEventQuery(ev); }));
    std::printf("cuMemsetD8Async[%s,64B] %.0f\n", name,
                MedianNs(
                    n, [&] { cuMemsetD8Async(buf, 0xCB, 64, st); }, drain));
    std::printf(
        "cuMemsetD8Async[%s,1MiB] %.0f\n", name,
        MedianNs(
            200, [&] { cuMemsetD8Async(buf, 0xFD, 1 << 20, st); }, drain));
    std::printf("cuEventRecord[%s] %.0f\n", name,
                MedianNs(
                    n, [&] { cuEventRecord(ev, st); }, drain));
    std::printf("cuMemcpyDtoHAsync[%s,64B] %.0f\n", name,
                MedianNs(
                    n, [&] { cuMemcpyDtoHAsync(host, buf, 64, st); }, drain));
    std::printf("cuMemAllocAsync+cuMemFreeAsync[%s,1MiB] %.0f\n", name,
                MedianNs(
                    n,
                    [&] {
                      CUdeviceptr p;
                      cuMemAllocAsync(&p, 1 << 20, st);
                      cuMemFreeAsync(p, st);
                    },
                    drain));
  }
  CUmodule module;
  Check(cuModuleLoadData(&module, kEmptyKernels), "load the empty kernels");
  static unsigned char param[2096];
  for (int bytes : {16, 256, 1048, 2096}) {
    CUfunction f;
    const std::string name = "p" + std::to_string(bytes);
    Check(cuModuleGetFunction(&f, module, name.c_str()), "get function");
    void* params[] = {param};
    for (unsigned threads : {32u, 512u}) {
      std::printf("cuLaunchKernel[stream,%dB,%u threads] %.0f\n", bytes,
                  threads,
                  MedianNs(
                      n,
                      [&] {
                        cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, s, params,
                                       nullptr);
                      },
                      drain));
    }
  }
  cuCtxSynchronize();
  return 0;
}
