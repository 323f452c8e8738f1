// Every copy and set the guard-zone shims check, each in bounds ("in"),
// ending exactly at the block's last byte ("end") and one byte past it
// ("past"); the result CUDA returns is printed, so a test can check that the
// tool returns the same codes as CUDA without it.
//
//   gmt_guard_copy_program MODE     MODE: runtime | driver
//
// Built twice: as is, and with CUDA_API_PER_THREAD_DEFAULT_STREAM, where the
// same source names call the _ptds / _ptsz entry points. The blocks are never
// freed before the end and the printed lines hold no pointers.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/interpose/programs/program_util.h"

namespace {

constexpr size_t kBytes = 4000;
std::vector<unsigned char> g_host(1 << 16, 7);

char* At(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

std::string Name(const char* api, const char* which) {
  return std::string(api) + " " + which;
}

}  // namespace

NOINLINE void RuntimeLinear() {
  void* a = nullptr;
  void* b = nullptr;
  Rt("cudaMalloc a", cudaMalloc(&a, kBytes));
  Rt("cudaMalloc b", cudaMalloc(&b, kBytes));
  void* h = g_host.data();
  cudaStream_t s = nullptr;

  Rt("cudaMemcpy H2D in", cudaMemcpy(a, h, kBytes, cudaMemcpyHostToDevice));
  Rt("cudaMemcpy H2D end",
     cudaMemcpy(At(a, 1), h, kBytes - 1, cudaMemcpyHostToDevice));
  Rt("cudaMemcpy H2D past",
     cudaMemcpy(At(a, 1), h, kBytes, cudaMemcpyHostToDevice));
  Rt("cudaMemcpy D2H in", cudaMemcpy(h, a, kBytes, cudaMemcpyDeviceToHost));
  Rt("cudaMemcpy D2H past",
     cudaMemcpy(h, At(a, 1), kBytes, cudaMemcpyDeviceToHost));
  Rt("cudaMemcpy D2D in", cudaMemcpy(b, a, kBytes, cudaMemcpyDeviceToDevice));
  Rt("cudaMemcpy D2D dst past",
     cudaMemcpy(At(b, 1), a, kBytes, cudaMemcpyDeviceToDevice));
  Rt("cudaMemcpy D2D src past",
     cudaMemcpy(b, At(a, 1), kBytes, cudaMemcpyDeviceToDevice));
  Rt("cudaMemcpy Default in", cudaMemcpy(a, h, kBytes, cudaMemcpyDefault));
  Rt("cudaMemcpy Default past",
     cudaMemcpy(a, h, kBytes + 1, cudaMemcpyDefault));
  Rt("cudaMemcpy bad kind",
     cudaMemcpy(a, h, kBytes, static_cast<cudaMemcpyKind>(9)));

  Rt("cudaMemcpyAsync in",
     cudaMemcpyAsync(a, h, kBytes, cudaMemcpyHostToDevice, s));
  Rt("cudaMemcpyAsync past",
     cudaMemcpyAsync(h, At(a, kBytes - 8), 9, cudaMemcpyDeviceToHost, s));

  Rt("cudaMemset in", cudaMemset(a, 1, kBytes));
  Rt("cudaMemset end", cudaMemset(At(a, kBytes - 1), 1, 1));
  Rt("cudaMemset past", cudaMemset(At(a, kBytes - 1), 1, 2));
  // The refusal is the runtime's last error, as after CUDA's own.
  Rt("cudaPeekAtLastError after refusal", cudaPeekAtLastError());
  Rt("cudaGetLastError after refusal", cudaGetLastError());
  Rt("cudaGetLastError again", cudaGetLastError());
  Rt("cudaMemsetAsync in", cudaMemsetAsync(a, 2, kBytes, s));
  Rt("cudaMemsetAsync past", cudaMemsetAsync(a, 2, kBytes + 1, s));

  Rt("cudaMemcpyPeer in", cudaMemcpyPeer(b, 0, a, 0, kBytes));
  Rt("cudaMemcpyPeer past", cudaMemcpyPeer(b, 0, a, 0, kBytes + 1));
  Rt("cudaMemcpyPeerAsync in", cudaMemcpyPeerAsync(b, 0, a, 0, kBytes, s));
  Rt("cudaMemcpyPeerAsync past",
     cudaMemcpyPeerAsync(At(b, 4), 0, a, 0, kBytes - 3, s));

  // 2-D over a linear block: 10 rows of 400 bytes fill it exactly.
  Rt("cudaMemcpy2D linear in",
     cudaMemcpy2D(a, 400, h, 400, 400, 10, cudaMemcpyHostToDevice));
  Rt("cudaMemcpy2D linear past",
     cudaMemcpy2D(a, 400, h, 400, 400, 11, cudaMemcpyHostToDevice));
  Rt("cudaMemset2D linear in", cudaMemset2D(a, 400, 3, 400, 10));
  Rt("cudaMemset2D linear past", cudaMemset2D(a, 400, 3, 400, 11));
  Rt("cudaMemset2D bad pitch", cudaMemset2D(a, 100, 3, 400, 10));
}

NOINLINE void RuntimePitched() {
  void* p = nullptr;
  size_t pitch = 0;
  constexpr size_t kWidth = 100, kRows = 10;
  Rt("cudaMallocPitch", cudaMallocPitch(&p, &pitch, kWidth, kRows));
  void* h = g_host.data();
  cudaStream_t s = nullptr;
  // The last row ends at the block's end when it starts pitch - width later.
  const size_t end = pitch - kWidth;
  struct Case {
    const char* which;
    size_t offset;
  };
  for (Case c : {Case{"in", 0}, Case{"end", end}, Case{"past", end + 1}}) {
    Rt(Name("cudaMemcpy2D H2D", c.which).c_str(),
       cudaMemcpy2D(At(p, c.offset), pitch, h, kWidth, kWidth, kRows,
                    cudaMemcpyHostToDevice));
    Rt(Name("cudaMemcpy2D D2H", c.which).c_str(),
       cudaMemcpy2D(h, kWidth, At(p, c.offset), pitch, kWidth, kRows,
                    cudaMemcpyDeviceToHost));
    Rt(Name("cudaMemcpy2DAsync", c.which).c_str(),
       cudaMemcpy2DAsync(At(p, c.offset), pitch, h, kWidth, kWidth, kRows,
                         cudaMemcpyDefault, s));
    Rt(Name("cudaMemset2D", c.which).c_str(),
       cudaMemset2D(At(p, c.offset), pitch, 4, kWidth, kRows));
    Rt(Name("cudaMemset2DAsync", c.which).c_str(),
       cudaMemset2DAsync(At(p, c.offset), pitch, 4, kWidth, kRows, s));
  }
}

NOINLINE void Runtime3D() {
  cudaPitchedPtr v{};
  const cudaExtent extent{100, 4, 3};  // width (bytes), height, depth
  Rt("cudaMalloc3D", cudaMalloc3D(&v, extent));
  void* h = g_host.data();
  const size_t end = v.pitch - extent.width;
  struct Case {
    const char* which;
    size_t offset;
  };
  for (Case c : {Case{"in", 0}, Case{"end", end}, Case{"past", end + 1}}) {
    cudaMemcpy3DParms p{};
    p.srcPtr = cudaPitchedPtr{h, extent.width, extent.width, extent.height};
    p.dstPtr = v;
    p.dstPos = cudaPos{c.offset, 0, 0};
    p.extent = extent;
    p.kind = cudaMemcpyHostToDevice;
    Rt(Name("cudaMemcpy3D", c.which).c_str(), cudaMemcpy3D(&p));
    Rt(Name("cudaMemcpy3DAsync", c.which).c_str(),
       cudaMemcpy3DAsync(&p, nullptr));
    cudaPitchedPtr at = v;
    at.ptr = At(v.ptr, c.offset);
    Rt(Name("cudaMemset3D", c.which).c_str(), cudaMemset3D(at, 5, extent));
    Rt(Name("cudaMemset3DAsync", c.which).c_str(),
       cudaMemset3DAsync(at, 5, extent, nullptr));
  }
}

NOINLINE void DriverLinear() {
  CUcontext ctx = nullptr;
  Cu("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
  CUdeviceptr d = 0, e = 0;
  Cu("cuMemAlloc d", cuMemAlloc(&d, kBytes));
  Cu("cuMemAlloc e", cuMemAlloc(&e, kBytes));
  const auto h = reinterpret_cast<CUdeviceptr>(g_host.data());
  void* hp = g_host.data();
  CUstream s = nullptr;

  Cu("cuMemcpy in", cuMemcpy(d, h, kBytes));
  Cu("cuMemcpy past", cuMemcpy(d + 1, h, kBytes));
  Cu("cuMemcpy src past", cuMemcpy(h, d, kBytes + 1));
  Cu("cuMemcpyAsync in", cuMemcpyAsync(e, d, kBytes, s));
  Cu("cuMemcpyAsync past", cuMemcpyAsync(e, d + 8, kBytes - 7, s));

  Cu("cuMemcpyHtoD in", cuMemcpyHtoD(d, hp, kBytes));
  Cu("cuMemcpyHtoD end", cuMemcpyHtoD(d + kBytes - 1, hp, 1));
  Cu("cuMemcpyHtoD past", cuMemcpyHtoD(d + kBytes - 1, hp, 2));
  Cu("cuMemcpyDtoH in", cuMemcpyDtoH(hp, d, kBytes));
  Cu("cuMemcpyDtoH past", cuMemcpyDtoH(hp, d, kBytes + 1));
  Cu("cuMemcpyDtoD in", cuMemcpyDtoD(e, d, kBytes));
  Cu("cuMemcpyDtoD dst past", cuMemcpyDtoD(e + 1, d, kBytes));
  Cu("cuMemcpyDtoD src past", cuMemcpyDtoD(e, d + 1, kBytes));
  Cu("cuMemcpyHtoDAsync in", cuMemcpyHtoDAsync(d, hp, kBytes, s));
  Cu("cuMemcpyHtoDAsync past", cuMemcpyHtoDAsync(d, hp, kBytes + 1, s));
  Cu("cuMemcpyDtoHAsync in", cuMemcpyDtoHAsync(hp, d, kBytes, s));
  Cu("cuMemcpyDtoHAsync past", cuMemcpyDtoHAsync(hp, d + 2, kBytes, s));
  Cu("cuMemcpyDtoDAsync in", cuMemcpyDtoDAsync(e, d, kBytes, s));
  Cu("cuMemcpyDtoDAsync past", cuMemcpyDtoDAsync(e, d, kBytes + 1, s));

  Cu("cuMemcpyPeer in", cuMemcpyPeer(e, ctx, d, ctx, kBytes));
  Cu("cuMemcpyPeer past", cuMemcpyPeer(e, ctx, d + 1, ctx, kBytes));
  Cu("cuMemcpyPeerAsync in", cuMemcpyPeerAsync(e, ctx, d, ctx, kBytes, s));
  Cu("cuMemcpyPeerAsync past",
     cuMemcpyPeerAsync(e + 1, ctx, d, ctx, kBytes, s));

  Cu("cuMemsetD8 in", cuMemsetD8(d, 1, kBytes));
  Cu("cuMemsetD8 past", cuMemsetD8(d, 1, kBytes + 1));
  Cu("cuMemsetD16 in", cuMemsetD16(d, 2, kBytes / 2));
  Cu("cuMemsetD16 past", cuMemsetD16(d + 2, 2, kBytes / 2));
  Cu("cuMemsetD32 in", cuMemsetD32(d, 3, kBytes / 4));
  Cu("cuMemsetD32 past", cuMemsetD32(d, 3, kBytes / 4 + 1));
  Cu("cuMemsetD8Async in", cuMemsetD8Async(d, 1, kBytes, s));
  Cu("cuMemsetD8Async past", cuMemsetD8Async(d + 1, 1, kBytes, s));
  Cu("cuMemsetD16Async in", cuMemsetD16Async(d, 2, kBytes / 2, s));
  Cu("cuMemsetD16Async past", cuMemsetD16Async(d, 2, kBytes / 2 + 1, s));
  Cu("cuMemsetD32Async in", cuMemsetD32Async(d, 3, kBytes / 4, s));
  Cu("cuMemsetD32Async past", cuMemsetD32Async(d + 4, 3, kBytes / 4, s));
}

NOINLINE void DriverPitched() {
  CUdeviceptr q = 0;
  size_t pitch = 0;
  constexpr size_t kWidth = 100, kRows = 10;
  Cu("cuMemAllocPitch", cuMemAllocPitch(&q, &pitch, kWidth, kRows, 4));
  void* hp = g_host.data();
  CUstream s = nullptr;
  const size_t end = pitch - kWidth;
  struct Case {
    const char* which;
    size_t offset;
  };
  for (Case c : {Case{"in", 0}, Case{"end", end}, Case{"past", end + 4}}) {
    const CUdeviceptr at = q + c.offset;
    Cu(Name("cuMemsetD2D8", c.which).c_str(),
       cuMemsetD2D8(at, pitch, 1, kWidth, kRows));
    Cu(Name("cuMemsetD2D16", c.which).c_str(),
       cuMemsetD2D16(at, pitch, 2, kWidth / 2, kRows));
    Cu(Name("cuMemsetD2D32", c.which).c_str(),
       cuMemsetD2D32(at, pitch, 3, kWidth / 4, kRows));
    Cu(Name("cuMemsetD2D8Async", c.which).c_str(),
       cuMemsetD2D8Async(at, pitch, 1, kWidth, kRows, s));
    Cu(Name("cuMemsetD2D16Async", c.which).c_str(),
       cuMemsetD2D16Async(at, pitch, 2, kWidth / 2, kRows, s));
    Cu(Name("cuMemsetD2D32Async", c.which).c_str(),
       cuMemsetD2D32Async(at, pitch, 3, kWidth / 4, kRows, s));

    CUDA_MEMCPY2D m{};
    m.srcMemoryType = CU_MEMORYTYPE_HOST;
    m.srcHost = hp;
    m.srcPitch = kWidth;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = q;
    m.dstXInBytes = c.offset;
    m.dstPitch = pitch;
    m.WidthInBytes = kWidth;
    m.Height = kRows;
    Cu(Name("cuMemcpy2D H2D", c.which).c_str(), cuMemcpy2D(&m));
    Cu(Name("cuMemcpy2DUnaligned", c.which).c_str(), cuMemcpy2DUnaligned(&m));
    Cu(Name("cuMemcpy2DAsync", c.which).c_str(), cuMemcpy2DAsync(&m, s));
    CUDA_MEMCPY2D back{};
    back.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    back.srcDevice = q;
    back.srcXInBytes = c.offset;
    back.srcPitch = pitch;
    back.dstMemoryType = CU_MEMORYTYPE_HOST;
    back.dstHost = hp;
    back.dstPitch = kWidth;
    back.WidthInBytes = kWidth;
    back.Height = kRows;
    Cu(Name("cuMemcpy2D D2H unified", c.which).c_str(), cuMemcpy2D(&back));

    // The block as 2 slices of 5 rows.
    CUDA_MEMCPY3D v{};
    v.srcMemoryType = CU_MEMORYTYPE_HOST;
    v.srcHost = hp;
    v.srcPitch = kWidth;
    v.srcHeight = kRows / 2;
    v.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    v.dstDevice = q;
    v.dstXInBytes = c.offset;
    v.dstPitch = pitch;
    v.dstHeight = kRows / 2;
    v.WidthInBytes = kWidth;
    v.Height = kRows / 2;
    v.Depth = 2;
    Cu(Name("cuMemcpy3D", c.which).c_str(), cuMemcpy3D(&v));
    Cu(Name("cuMemcpy3DAsync", c.which).c_str(), cuMemcpy3DAsync(&v, s));
  }
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "runtime") {
    RuntimeLinear();
    RuntimePitched();
    Runtime3D();
  } else if (mode == "driver") {
    if (!DriverSetup(0)) return 1;
    DriverLinear();
    DriverPitched();
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
