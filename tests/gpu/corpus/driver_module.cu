// A driver-API program with its kernels embedded as PTX, as a JIT-based
// framework ships them: cuModuleLoadDataEx with a JIT log, the same PTX again
// through the library API (cuLibraryLoadData), cuModuleGetGlobal of a module
// variable, cuLaunchKernel with kernelParams and with the packed `extra`
// argument buffer, cuMemAllocPitch with a pitched kernel and cuMemcpy2D, and
// every module unloaded. No runtime-API call at all.
//
// The PTX is nvcc's output (CUDA 13.0, -arch=compute_90 -ptx -O3) for:
//
//   __device__ int launches;
//   extern "C" __global__ void saxpy(float a, const float* x, float* y,
//                                    int n) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i == 0) atomicAdd(&launches, 1);
//     if (i < n) y[i] = a * x[i] + y[i];
//   }
//   extern "C" __global__ void fill_rows(char* base,
//                                        unsigned long long pitch,
//                                        int width, int height, char value) {
//     int x = blockIdx.x * blockDim.x + threadIdx.x;
//     int y = blockIdx.y;
//     if (x < width && y < height) base[y * pitch + x] = value + (char)y;
//   }
#include <cuda.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "corpus_check.h"

namespace {

const char kPtx[] =
    ".version 9.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    "    // .globl    saxpy\n"
    ".global .align 4 .u32 launches;\n"
    "\n"
    ".visible .entry saxpy(\n"
    "    .param .f32 saxpy_param_0,\n"
    "    .param .u64 saxpy_param_1,\n"
    "    .param .u64 saxpy_param_2,\n"
    "    .param .u32 saxpy_param_3\n"
    ")\n"
    "{\n"
    "    .reg .pred     %p<3>;\n"
    "    .reg .f32     %f<5>;\n"
    "    .reg .b32     %r<7>;\n"
    "    .reg .b64     %rd<9>;\n"
    "\n"
    "\n"
    "    ld.param.f32     %f1, [saxpy_param_0];\n"
    "    ld.param.u64     %rd1, [saxpy_param_1];\n"
    "    ld.param.u64     %rd2, [saxpy_param_2];\n"
    "    ld.param.u32     %r2, [saxpy_param_3];\n"
    "    mov.u32     %r3, %ntid.x;\n"
    "    mov.u32     %r4, %ctaid.x;\n"
    "    mov.u32     %r5, %tid.x;\n"
    "    mad.lo.s32     %r1, %r4, %r3, %r5;\n"
    "    setp.ne.s32     %p1, %r1, 0;\n"
    "    @%p1 bra     $L__BB0_2;\n"
    "\n"
    "    mov.u64     %rd3, launches;\n"
    "    atom.global.add.u32     %r6, [%rd3], 1;\n"
    "\n"
    "$L__BB0_2:\n"
    "    setp.ge.s32     %p2, %r1, %r2;\n"
    "    @%p2 bra     $L__BB0_4;\n"
    "\n"
    "    cvta.to.global.u64     %rd4, %rd1;\n"
    "    mul.wide.s32     %rd5, %r1, 4;\n"
    "    add.s64     %rd6, %rd4, %rd5;\n"
    "    ld.global.f32     %f2, [%rd6];\n"
    "    cvta.to.global.u64     %rd7, %rd2;\n"
    "    add.s64     %rd8, %rd7, %rd5;\n"
    "    ld.global.f32     %f3, [%rd8];\n"
    "    fma.rn.f32     %f4, %f2, %f1, %f3;\n"
    "    st.global.f32     [%rd8], %f4;\n"
    "\n"
    "$L__BB0_4:\n"
    "    ret;\n"
    "\n"
    "}\n"
    "    // .globl    fill_rows\n"
    ".visible .entry fill_rows(\n"
    "    .param .u64 fill_rows_param_0,\n"
    "    .param .u64 fill_rows_param_1,\n"
    "    .param .u32 fill_rows_param_2,\n"
    "    .param .u32 fill_rows_param_3,\n"
    "    .param .u8 fill_rows_param_4\n"
    ")\n"
    "{\n"
    "    .reg .pred     %p<4>;\n"
    "    .reg .b16     %rs<4>;\n"
    "    .reg .b32     %r<8>;\n"
    "    .reg .b64     %rd<9>;\n"
    "\n"
    "\n"
    "    ld.param.s8     %rs1, [fill_rows_param_4];\n"
    "    ld.param.u64     %rd1, [fill_rows_param_0];\n"
    "    ld.param.u64     %rd2, [fill_rows_param_1];\n"
    "    ld.param.u32     %r3, [fill_rows_param_2];\n"
    "    ld.param.u32     %r4, [fill_rows_param_3];\n"
    "    mov.u32     %r5, %ctaid.x;\n"
    "    mov.u32     %r6, %ntid.x;\n"
    "    mov.u32     %r7, %tid.x;\n"
    "    mad.lo.s32     %r1, %r5, %r6, %r7;\n"
    "    setp.ge.s32     %p1, %r1, %r3;\n"
    "    mov.u32     %r2, %ctaid.y;\n"
    "    setp.ge.s32     %p2, %r2, %r4;\n"
    "    or.pred      %p3, %p1, %p2;\n"
    "    @%p3 bra     $L__BB1_2;\n"
    "\n"
    "    cvta.to.global.u64     %rd3, %rd1;\n"
    "    cvt.u16.u32     %rs2, %r2;\n"
    "    add.s16     %rs3, %rs2, %rs1;\n"
    "    cvt.s64.s32     %rd4, %r2;\n"
    "    mul.lo.s64     %rd5, %rd4, %rd2;\n"
    "    cvt.s64.s32     %rd6, %r1;\n"
    "    add.s64     %rd7, %rd5, %rd6;\n"
    "    add.s64     %rd8, %rd3, %rd7;\n"
    "    st.global.u8     [%rd8], %rs3;\n"
    "\n"
    "$L__BB1_2:\n"
    "    ret;\n"
    "\n"
    "}\n";

}  // namespace

int main() {
  corpus::ProgramName() = "driver_module";
  CORPUS_CHECK(cuInit(0));
  CUdevice dev;
  CORPUS_CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CORPUS_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CORPUS_CHECK(cuCtxSetCurrent(ctx));

  char log[4096] = {0};
  char error_log[4096] = {0};
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof log), error_log,
                    reinterpret_cast<void*>(sizeof error_log)};
  CUmodule module = nullptr;
  if (corpus::Rc("cuModuleLoadDataEx (PTX)",
                 cuModuleLoadDataEx(&module, kPtx, 4, options, values)) !=
      CUDA_SUCCESS) {
    std::fprintf(stderr, "JIT error log: %s\n", error_log);
    return 1;
  }
  CUfunction saxpy, fill_rows;
  CORPUS_CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CORPUS_CHECK(cuModuleGetFunction(&fill_rows, module, "fill_rows"));
  CUdeviceptr launches = 0;
  size_t launches_size = 0;
  corpus::Rc("cuModuleGetGlobal launches",
             cuModuleGetGlobal(&launches, &launches_size, module, "launches"));
  std::printf("module global: %zu bytes\n", launches_size);
  int max_threads = 0;
  CORPUS_CHECK(cuFuncGetAttribute(
      &max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, saxpy));
  std::printf("saxpy max threads per block >= 256: %s\n",
              max_threads >= 256 ? "yes" : "no");

  constexpr int kN = 100003;
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 100);
    y[i] = 1.0f;
  }
  CUdeviceptr dx = 0, dy = 0;
  CORPUS_CHECK(cuMemAlloc(&dx, kN * sizeof(float)));
  CORPUS_CHECK(cuMemAlloc(&dy, kN * sizeof(float)));
  CORPUS_CHECK(cuMemcpyHtoD(dx, x.data(), kN * sizeof(float)));
  CORPUS_CHECK(cuMemcpyHtoD(dy, y.data(), kN * sizeof(float)));

  // kernelParams: an array of pointers to each argument.
  float a = 2.0f;
  int n = kN;
  void* params[] = {&a, &dx, &dy, &n};
  unsigned blocks = (kN + 255) / 256;
  corpus::Rc("cuLaunchKernel saxpy (kernelParams)",
             cuLaunchKernel(saxpy, blocks, 1, 1, 256, 1, 1, 0, nullptr, params,
                            nullptr));
  // extra: the arguments packed in one buffer with their ABI alignment.
  struct {
    float a;
    int pad;
    CUdeviceptr x;
    CUdeviceptr y;
    int n;
  } packed = {3.0f, 0, dx, dy, kN};
  static_assert(offsetof(decltype(packed), x) == 8, "pointer at offset 8");
  size_t packed_size = offsetof(decltype(packed), n) + sizeof(int);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed,
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                   CU_LAUNCH_PARAM_END};
  corpus::Rc("cuLaunchKernel saxpy (extra)",
             cuLaunchKernel(saxpy, blocks, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                            extra));
  CORPUS_CHECK(cuCtxSynchronize());
  CORPUS_CHECK(cuMemcpyDtoH(y.data(), dy, kN * sizeof(float)));
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (y[i] != 1.0f + 5.0f * static_cast<float>(i % 100)) ++wrong;
  int launched = 0;
  CORPUS_CHECK(cuMemcpyDtoH(&launched, launches, sizeof launched));
  std::printf("saxpy twice: %d wrong, launch counter %d\n", wrong, launched);
  corpus::Expect(wrong == 0 && launched == 2, "saxpy results");

  // Pitched memory, filled by a kernel, copied out with cuMemcpy2D.
  constexpr int kWidth = 1000, kHeight = 37;
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  corpus::Rc("cuMemAllocPitch 1000 x 37",
             cuMemAllocPitch(&pitched, &pitch, kWidth, kHeight, 16));
  std::printf("pitch %zu\n", pitch);
  CORPUS_CHECK(cuMemsetD2D8(pitched, pitch, 0, kWidth, kHeight));
  unsigned long long pitch_arg = pitch;
  int width = kWidth, height = kHeight;
  char value = 5;
  void* fill_params[] = {&pitched, &pitch_arg, &width, &height, &value};
  corpus::Rc("cuLaunchKernel fill_rows",
             cuLaunchKernel(fill_rows, (kWidth + 127) / 128, kHeight, 1, 128, 1,
                            1, 0, nullptr, fill_params, nullptr));
  std::vector<char> host(kWidth * kHeight);
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = pitched;
  copy.srcPitch = pitch;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = host.data();
  copy.dstPitch = kWidth;
  copy.WidthInBytes = kWidth;
  copy.Height = kHeight;
  corpus::Rc("cuMemcpy2D pitched -> host", cuMemcpy2D(&copy));
  int bad = 0;
  for (int r = 0; r < kHeight; ++r)
    for (int c = 0; c < kWidth; ++c)
      if (host[r * kWidth + c] != static_cast<char>(5 + r)) ++bad;
  std::printf("pitched fill: %d wrong bytes\n", bad);
  corpus::Expect(bad == 0, "pitched fill");

  // The same PTX through the library API (context-independent loading).
  CUlibrary library = nullptr;
  corpus::Rc("cuLibraryLoadData (PTX)",
             cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr,
                               nullptr, 0));
  CUkernel kernel = nullptr;
  CORPUS_CHECK(cuLibraryGetKernel(&kernel, library, "saxpy"));
  a = -1.0f;
  corpus::Rc("cuLaunchKernel library kernel",
             cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), blocks, 1, 1,
                            256, 1, 1, 0, nullptr, params, nullptr));
  CORPUS_CHECK(cuCtxSynchronize());
  CORPUS_CHECK(cuMemcpyDtoH(y.data(), dy, kN * sizeof(float)));
  wrong = 0;
  for (int i = 0; i < kN; ++i)
    if (y[i] != 1.0f + 4.0f * static_cast<float>(i % 100)) ++wrong;
  std::printf("library saxpy: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "library saxpy");

  CORPUS_CHECK(cuLibraryUnload(library));
  CORPUS_CHECK(cuMemFree(pitched));
  CORPUS_CHECK(cuMemFree(dx));
  CORPUS_CHECK(cuMemFree(dy));
  CORPUS_CHECK(cuModuleUnload(module));
  CORPUS_CHECK(cuDevicePrimaryCtxRelease(dev));
  return corpus::Finish();
}
