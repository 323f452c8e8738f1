// user_view: what a program can learn about its own device and managed
// blocks must not change under the tool, although guard zones make every
// block bigger (a 512-byte front redzone, a tail redzone) and move the
// pointer the program gets (DESIGN.md section 2, pitfall 5).
//
// One block from each allocator (cudaMalloc of 1, 1000, 4096 and 1 MiB,
// cuMemAlloc, cudaMallocManaged, cudaMallocAsync, cudaMallocPitch,
// cudaMalloc3D, cuMemAllocPitch); for each, only facts that do not depend on
// where the block happens to lie are printed:
//
//   * the pointer's alignment (ptr % 256);
//   * cuMemGetAddressRange on ptr and on ptr + size - 1: (base - ptr), size;
//   * cuMemGetAddressRange one byte past the end and one byte before the
//     start: "inside" (the answer is a range holding the block) or "outside"
//     (an error, or a neighbour's range; which of the two depends on the
//     neighbours). One past the end also prints CUDA's code when `size` is
//     not a multiple of 256: no block can start there (every block is
//     256-byte aligned), so the code is always CUDA_ERROR_NOT_FOUND;
//   * cuPointerGetAttribute RANGE_START_ADDR (as start - ptr) and RANGE_SIZE
//     on ptr and on ptr + size - 1, and cuPointerGetAttributes (the same two,
//     IS_MANAGED, DEVICE_ORDINAL) on an interior pointer;
//   * cudaPointerGetAttributes on ptr + 100 (ptr + size - 1 for smaller
//     blocks): type, device, devicePointer - ptr, hostPointer - ptr;
//   * the pitches CUDA chose, and for 3-D the pitched pointer's pitch, xsize
//     and ysize.
//
// Then the 3-D block is used correctly end to end: a kernel writes every byte
// of the extent, cudaMemcpy3D copies it to the host, cudaMemset3D sets the
// full extent, cudaMemcpy3D H2D and D2H round-trip a host pattern; the
// checksums are printed.
//
// Measured on an H200 without the tool: cudaMalloc(n) gives base == ptr and
// size == n (not rounded), one past the end is CUDA_ERROR_NOT_FOUND (500)
// unless a neighbour starts there; cudaMallocPitch(1000 x 7) gives pitch 1024
// and a 7168-byte range.
//
// Expected: stdout identical with and without the tool (check=sync and
// check=kernel), no errors and no leaks in the report; exit 0.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "example_check.h"

namespace {

constexpr size_t k3dWidth = 300;
constexpr size_t k3dHeight = 5;
constexpr size_t k3dDepth = 3;

const char* CuName(CUresult res) {
  const char* name = nullptr;
  if (cuGetErrorName(res, &name) != CUDA_SUCCESS || name == nullptr) {
    return "?";
  }
  return name;
}

// A range CUDA gave for an address of the block [ptr, ptr + n), as far as it
// does not depend on where the block lies.
void PrintRange(const char* what, CUresult res, CUdeviceptr base, size_t size,
                CUdeviceptr ptr, size_t n) {
  if (res != CUDA_SUCCESS) {
    std::printf("  %s: %d (%s)\n", what, static_cast<int>(res), CuName(res));
  } else if (base == ptr) {
    std::printf("  %s: base-ptr=0 size=%zu%s\n", what, size,
                size == n ? "" : " (not the block's size)");
  } else if (base < ptr && base + size >= ptr + n) {
    // Position-dependent numbers are not printed.
    std::printf("  %s: a larger range starting before the block\n", what);
  } else {
    std::printf("  %s: base-ptr=%lld size=%zu\n", what,
                static_cast<long long>(base - ptr), size);
  }
}

// "inside" when CUDA answers for `address` with a range that holds the
// block's first byte, "outside" otherwise.
const char* Side(CUresult res, CUdeviceptr base, size_t size, CUdeviceptr ptr) {
  return res == CUDA_SUCCESS && base <= ptr && ptr - base < size ? "inside"
                                                                 : "outside";
}

void Describe(const char* label, void* vp, size_t n) {
  const auto ptr = reinterpret_cast<CUdeviceptr>(vp);
  std::printf("user_view: %s: %zu bytes, ptr%%256=%llu\n", label, n,
              static_cast<unsigned long long>(ptr % 256));

  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult res = cuMemGetAddressRange(&base, &size, ptr);
  PrintRange("cuMemGetAddressRange(ptr)", res, base, size, ptr, n);
  base = 0, size = 0;
  res = cuMemGetAddressRange(&base, &size, ptr + n - 1);
  PrintRange("cuMemGetAddressRange(ptr+size-1)", res, base, size, ptr, n);

  base = 0, size = 0;
  res = cuMemGetAddressRange(&base, &size, ptr + n);
  if (n % 256 != 0) {
    std::printf("  cuMemGetAddressRange(ptr+size): %s, %d (%s)\n",
                Side(res, base, size, ptr), static_cast<int>(res), CuName(res));
  } else {
    // A neighbour may start there: only which side it is on.
    std::printf("  cuMemGetAddressRange(ptr+size): %s\n",
                Side(res, base, size, ptr));
  }
  base = 0, size = 0;
  res = cuMemGetAddressRange(&base, &size, ptr - 1);
  std::printf("  cuMemGetAddressRange(ptr-1): %s\n",
              Side(res, base, size, ptr));

  for (size_t off : {size_t{0}, n - 1}) {
    CUdeviceptr start = 0;
    size_t range = 0;
    CUresult r1 = cuPointerGetAttribute(
        &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr + off);
    CUresult r2 = cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        ptr + off);
    char what[96];
    std::snprintf(what, sizeof what, "cuPointerGetAttribute(ptr+%s)",
                  off == 0 ? "0" : "size-1");
    if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
      std::printf("  %s: %d (%s) / %d (%s)\n", what, static_cast<int>(r1),
                  CuName(r1), static_cast<int>(r2), CuName(r2));
    } else {
      PrintRange(what, CUDA_SUCCESS, start, range, ptr, n);
    }
  }

  const size_t interior = n > 100 ? 100 : n - 1;
  {
    CUdeviceptr start = 0;
    size_t range = 0;
    int is_managed = -1;
    int ordinal = -1;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* data[] = {&start, &range, &is_managed, &ordinal};
    CUresult r = cuPointerGetAttributes(4, attrs, data, ptr + interior);
    char what[96];
    std::snprintf(what, sizeof what, "cuPointerGetAttributes(ptr+%zu)",
                  interior);
    if (r != CUDA_SUCCESS) {
      std::printf("  %s: %d (%s)\n", what, static_cast<int>(r), CuName(r));
    } else {
      PrintRange(what, r, start, range, ptr, n);
      std::printf("  %s: is_managed=%d device_ordinal=%d\n", what, is_managed,
                  ordinal);
    }
  }
  {
    cudaPointerAttributes a{};
    cudaError_t err =
        cudaPointerGetAttributes(&a, static_cast<char*>(vp) + interior);
    if (err != cudaSuccess) {
      std::printf("  cudaPointerGetAttributes(ptr+%zu): %d (%s)\n", interior,
                  static_cast<int>(err), cudaGetErrorName(err));
    } else {
      long long dev =
          a.devicePointer == nullptr
              ? -1
              : static_cast<long long>(static_cast<char*>(a.devicePointer) -
                                       static_cast<char*>(vp));
      std::printf(
          "  cudaPointerGetAttributes(ptr+%zu): type=%d device=%d "
          "devicePointer-ptr=%lld hostPointer%s",
          interior, static_cast<int>(a.type), a.device, dev,
          a.hostPointer == nullptr ? "=null\n" : "-ptr=");
      if (a.hostPointer != nullptr) {
        std::printf("%lld\n",
                    static_cast<long long>(static_cast<char*>(a.hostPointer) -
                                           static_cast<char*>(vp)));
      }
    }
  }
}

__attribute__((noinline)) void* UserViewMalloc(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
}

__attribute__((noinline)) CUdeviceptr UserViewDriverAlloc(size_t bytes) {
  CUdeviceptr p = 0;
  EXAMPLE_CHECK_CU(cuMemAlloc(&p, bytes));
  return p;
}

__attribute__((noinline)) void* UserViewManaged(size_t bytes) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocManaged(&p, bytes));
  return p;
}

__attribute__((noinline)) void* UserViewAsync(size_t bytes,
                                              cudaStream_t stream) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocAsync(&p, bytes, stream));
  return p;
}

__attribute__((noinline)) void* UserViewPitch(size_t* pitch, size_t width,
                                              size_t height) {
  void* p = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMallocPitch(&p, pitch, width, height));
  return p;
}

__attribute__((noinline)) cudaPitchedPtr UserView3D(cudaExtent extent) {
  cudaPitchedPtr pp{};
  EXAMPLE_CHECK_CUDA(cudaMalloc3D(&pp, extent));
  return pp;
}

__attribute__((noinline)) CUdeviceptr UserViewDriverPitch(size_t* pitch,
                                                          size_t width,
                                                          size_t height,
                                                          unsigned elem) {
  CUdeviceptr p = 0;
  EXAMPLE_CHECK_CU(cuMemAllocPitch(&p, pitch, width, height, elem));
  return p;
}

__global__ void Fill3DKernel(unsigned char* base, size_t pitch, size_t ysize,
                             int width, int height, int depth) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  int z = blockIdx.z;
  if (x < width && y < height && z < depth) {
    base[(z * ysize + y) * pitch + x] =
        static_cast<unsigned char>(x * 7 + y * 31 + z * 101 + 1);
  }
}

unsigned long long Sum(const std::vector<unsigned char>& v) {
  unsigned long long s = 0;
  for (unsigned char c : v) s += c;
  return s;
}

// The 3-D block used correctly: every call covers the full extent exactly.
void Use3D(cudaPitchedPtr pp, cudaExtent extent) {
  const size_t n = extent.width * extent.height * extent.depth;
  std::vector<unsigned char> host(n, 0);
  cudaPitchedPtr hp = make_cudaPitchedPtr(host.data(), extent.width,
                                          extent.width, extent.height);

  dim3 block(128);
  dim3 grid((extent.width + 127) / 128, extent.height, extent.depth);
  Fill3DKernel<<<grid, block>>>(static_cast<unsigned char*>(pp.ptr), pp.pitch,
                                pp.ysize, static_cast<int>(extent.width),
                                static_cast<int>(extent.height),
                                static_cast<int>(extent.depth));
  EXAMPLE_CHECK_CUDA(cudaGetLastError());
  cudaMemcpy3DParms d2h{};
  d2h.srcPtr = pp;
  d2h.dstPtr = hp;
  d2h.extent = extent;
  d2h.kind = cudaMemcpyDeviceToHost;
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&d2h));
  unsigned long long kernel_sum = Sum(host);
  size_t wrong = 0;
  for (size_t z = 0; z < extent.depth; ++z) {
    for (size_t y = 0; y < extent.height; ++y) {
      for (size_t x = 0; x < extent.width; ++x) {
        unsigned char want =
            static_cast<unsigned char>(x * 7 + y * 31 + z * 101 + 1);
        wrong += host[(z * extent.height + y) * extent.width + x] != want;
      }
    }
  }

  EXAMPLE_CHECK_CUDA(cudaMemset3D(pp, 0xa5, extent));
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&d2h));
  size_t set = 0;
  for (unsigned char c : host) set += c == 0xa5;

  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 13);
  const unsigned long long pattern_sum = Sum(host);
  cudaMemcpy3DParms h2d{};
  h2d.srcPtr = hp;
  h2d.dstPtr = pp;
  h2d.extent = extent;
  h2d.kind = cudaMemcpyHostToDevice;
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&h2d));
  std::fill(host.begin(), host.end(), 0);
  EXAMPLE_CHECK_CUDA(cudaMemcpy3D(&d2h));
  size_t round_trip = 0;
  for (size_t i = 0; i < n; ++i) {
    round_trip += host[i] == static_cast<unsigned char>(i * 13);
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());
  std::printf(
      "user_view: 3-D %zu x %zu x %zu: kernel checksum %llu (%zu wrong), "
      "memset3D %zu/%zu bytes, round trip %zu/%zu bytes (checksum %llu)\n",
      extent.width, extent.height, extent.depth, kernel_sum, wrong, set, n,
      round_trip, n, pattern_sum);
}

}  // namespace

int main() {
  // The runtime makes the primary context current for the driver calls.
  EXAMPLE_CHECK_CUDA(cudaFree(nullptr));
  cudaStream_t stream;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const size_t sizes[] = {1, 1000, 4096, size_t{1} << 20};
  std::vector<void*> blocks;
  for (size_t n : sizes) blocks.push_back(UserViewMalloc(n));
  const CUdeviceptr driver = UserViewDriverAlloc(3000);
  void* managed = UserViewManaged(100000);
  void* async = UserViewAsync(5000, stream);
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  size_t pitch = 0;
  void* pitched = UserViewPitch(&pitch, 1000, 7);
  const cudaExtent extent = make_cudaExtent(k3dWidth, k3dHeight, k3dDepth);
  const cudaPitchedPtr pp = UserView3D(extent);
  size_t dpitch = 0;
  const CUdeviceptr dpitched = UserViewDriverPitch(&dpitch, 700, 9, 4);

  for (size_t i = 0; i < blocks.size(); ++i) {
    char label[64];
    std::snprintf(label, sizeof label, "cudaMalloc(%zu)", sizes[i]);
    Describe(label, blocks[i], sizes[i]);
  }
  Describe("cuMemAlloc(3000)", reinterpret_cast<void*>(driver), 3000);
  Describe("cudaMallocManaged(100000)", managed, 100000);
  Describe("cudaMallocAsync(5000)", async, 5000);
  std::printf("user_view: cudaMallocPitch(1000 x 7): pitch %zu\n", pitch);
  Describe("cudaMallocPitch(1000 x 7)", pitched, pitch * 7);
  std::printf(
      "user_view: cudaMalloc3D(%zu x %zu x %zu): pitch %zu xsize %zu "
      "ysize %zu\n",
      k3dWidth, k3dHeight, k3dDepth, pp.pitch, pp.xsize, pp.ysize);
  Describe("cudaMalloc3D(300 x 5 x 3)", pp.ptr, pp.pitch * pp.ysize * k3dDepth);
  std::printf("user_view: cuMemAllocPitch(700 x 9, 4): pitch %zu\n", dpitch);
  Describe("cuMemAllocPitch(700 x 9, 4)", reinterpret_cast<void*>(dpitched),
           dpitch * 9);

  Use3D(pp, extent);

  for (void* p : blocks) EXAMPLE_CHECK_CUDA(cudaFree(p));
  EXAMPLE_CHECK_CU(cuMemFree(driver));
  EXAMPLE_CHECK_CUDA(cudaFree(managed));
  EXAMPLE_CHECK_CUDA(cudaFreeAsync(async, stream));
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  EXAMPLE_CHECK_CUDA(cudaFree(pitched));
  EXAMPLE_CHECK_CUDA(cudaFree(pp.ptr));
  EXAMPLE_CHECK_CU(cuMemFree(dpitched));
  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("user_view: done\n");
  return 0;
}
