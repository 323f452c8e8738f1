// The test double's own contract (no gpumemtrace involved): the behaviour the
// interposition tests rely on, checked against the real driver's rules.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace {

void* DriverSymbol(const char* name) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen("libcuda.so.1", RTLD_NOW);
  return handle ? dlsym(handle, name) : nullptr;
}

class FakeDriverTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  CUcontext ctx_ = nullptr;
};

TEST(FakeDriverInitTest, CallsBeforeCuInitFail) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process
  EXPECT_EXIT(
      {
        CUdeviceptr p = 0;
        int count = 0;
        bool ok = cuMemAlloc(&p, 16) == CUDA_ERROR_NOT_INITIALIZED &&
                  cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST_F(FakeDriverTest, DevicesAndContexts) {
  int count = 0;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2);
  char name[64];
  EXPECT_EQ(cuDeviceGetName(name, sizeof(name), 1), CUDA_SUCCESS);
  EXPECT_STREQ(name, "Fake GPU 1");
  size_t total = 0;
  EXPECT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, size_t{16} << 30);
  EXPECT_EQ(cuDeviceGetName(name, sizeof(name), 2), CUDA_ERROR_INVALID_DEVICE);

  CUcontext ctx1 = nullptr;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
  EXPECT_NE(ctx1, ctx_);
  CUcontext current = nullptr;
  EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx_);  // retaining does not make it current
  EXPECT_EQ(cuCtxSetCurrent(ctx1), CUDA_SUCCESS);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, NoCurrentContextIsAnError) {
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(FakeDriverTest, ProcAddressPicksTheRightVariant) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuMemAlloc_v2"));

  EXPECT_EQ(
      cuGetProcAddress("cuMemAllocAsync", &fn, 13000,
                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
      CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuMemAllocAsync_ptsz"));
  EXPECT_EQ(cuGetProcAddress("cuMemAllocAsync", &fn, 13000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuMemAllocAsync"));
  // No per-thread variant: the default one.
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 13000, 2, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuMemAlloc_v2"));

  EXPECT_EQ(cuGetProcAddress("cuGetProcAddress", &fn, 12000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuGetProcAddress_v2"));
  EXPECT_EQ(cuGetProcAddress("cuGetProcAddress", &fn, 11080, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuGetProcAddress"));
  EXPECT_EQ(cuGetProcAddress("cuCtxGetDevice", &fn, 13000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuCtxGetDevice_v2"));
  EXPECT_EQ(cuGetProcAddress("cuCtxGetDevice", &fn, 12080, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuCtxGetDevice"));

  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc_v2", &fn, 13000, 0, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(cuGetProcAddress("cuBogus", &fn, 13000, 0, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST_F(FakeDriverTest, FreesAreCheckedLikeTheRealDriver) {
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, 1000), CUDA_SUCCESS);
  EXPECT_EQ(d % 256, 0u);
  std::memset(reinterpret_cast<void*>(d), 1, 1000);  // host-accessible
  void* h = nullptr;
  ASSERT_EQ(cuMemAllocHost(&h, 100), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d + 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(reinterpret_cast<void*>(d)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(reinterpret_cast<CUdeviceptr>(h)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriverTest, PitchAndInfo) {
  CUdeviceptr d = 0;
  size_t pitch = 0;
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocPitch(&d, &pitch, 1000, 3, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_before - free_after, 3072u);
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, d + 100), CUDA_SUCCESS);
  EXPECT_EQ(base, d);
  EXPECT_EQ(size, 3072u);
  EXPECT_EQ(cuMemsetD8(d, 0, 3073), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8(d, 0, 3072), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, HostRegister) {
  std::vector<char> buffer(8192);
  EXPECT_EQ(cuMemHostRegister(buffer.data(), 4096, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister(buffer.data() + 100, 4096, 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(buffer.data()), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(buffer.data()),
            CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

TEST_F(FakeDriverTest, PrimaryResetFreesItsMemory) {
  CUdeviceptr d = 0;
  void* h = nullptr;
  ASSERT_EQ(cuMemAlloc(&d, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocHost(&h, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriverTest, VmmPhysicalLivesUntilReleasedAndUnmapped) {
  constexpr size_t k2M = size_t{2} << 20;
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(cuMemCreate(&handle, 1000, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemCreate(&handle, k2M, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(cuMemAddressReserve(&va, 2 * k2M, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % k2M, 0u);
  ASSERT_EQ(cuMemMap(va, k2M, 0, handle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(va + k2M, k2M, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(va, k2M, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  EXPECT_EQ(cuMemSetAccess(va, k2M, &access, 1), CUDA_SUCCESS);
  reinterpret_cast<char*>(va)[10] = 42;
  EXPECT_EQ(reinterpret_cast<char*>(va + k2M)[10], 42);  // same physical
  EXPECT_EQ(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<char*>(va)[10], 42);  // still mapped
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressFree(va, 2 * k2M), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemUnmap(va, 2 * k2M), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(va, k2M), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressFree(va, 2 * k2M), CUDA_SUCCESS);
}

TEST(FakeRuntimeTest, AllocFreeAndErrors) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1000), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(cudaMemset(p, 7, 1000), cudaSuccess);
  EXPECT_EQ(cudaMemset(p, 7, 1001), cudaErrorInvalidValue);
  char host[1000];
  EXPECT_EQ(cudaMemcpy(host, p, 1000, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[999], 7);
  EXPECT_EQ(cudaFreeHost(p), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaFree(static_cast<char*>(p) + 8), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue),
               "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation),
               "cudaErrorMemoryAllocation");
  void* zero = &p;
  EXPECT_EQ(cudaMalloc(&zero, 0), cudaSuccess);
  EXPECT_EQ(zero, nullptr);
  EXPECT_EQ(cudaMalloc(&p, size_t{17} << 30), cudaErrorMemoryAllocation);
}

TEST(FakeRuntimeTest, RuntimeBindsThePrimaryContextOfItsDevice) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 100), cudaSuccess);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(FakeRuntimeTest, DeviceResetReleasesBlocks) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  void* p = nullptr;
  void* h = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 100), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&h, 100), cudaSuccess);
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(h), cudaErrorInvalidValue);
  ASSERT_EQ(cudaMalloc(&p, 100), cudaSuccess);  // usable again
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST(FakeRuntimeTest, OtherAllocators) {
  void* p = nullptr;
  size_t pitch = 0;
  ASSERT_EQ(cudaMallocPitch(&p, &pitch, 100, 4), cudaSuccess);
  EXPECT_EQ(pitch, 512u);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  cudaPitchedPtr pp = {};
  ASSERT_EQ(cudaMalloc3D(&pp, cudaExtent{600, 2, 3}), cudaSuccess);
  EXPECT_EQ(pp.pitch, 1024u);
  EXPECT_EQ(cudaFree(pp.ptr), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&p, 100, cudaMemAttachGlobal), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaMallocAsync(&p, 100, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(p, nullptr), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMallocFromPoolAsync(&p, 100, pool, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(p, nullptr), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&p, 100, cudaHostAllocPortable), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(p), cudaSuccess);
  cudaArray_t array = nullptr;
  cudaChannelFormatDesc desc = {32, 0, 0, 0, cudaChannelFormatKindFloat};
  ASSERT_EQ(cudaMallocArray(&array, &desc, 64, 64), cudaSuccess);
  EXPECT_EQ(cudaFreeArray(array), cudaSuccess);
  EXPECT_EQ(cudaFreeArray(array), cudaErrorInvalidResourceHandle);
}

TEST(FakeRuntimeTest, DriverEntryPointsComeFromTheDriver) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000,
                                             cudaEnableDefault, &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  EXPECT_EQ(fn, DriverSymbol("cuMemAlloc_v2"));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_EQ(cudaGetDriverEntryPoint("cuMemFreeAsync", &fn,
                                    cudaEnablePerThreadDefaultStream, &status),
            cudaSuccess);
#pragma GCC diagnostic pop
  EXPECT_EQ(fn, DriverSymbol("cuMemFreeAsync_ptsz"));
}

TEST(FakeRuntimeTest, FaultInjection) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process
  EXPECT_EXIT(
      {
        setenv("FAKE_CUDA_FAIL_ALLOC_AFTER", "2", 1);
        void* p[4] = {};
        bool ok = cudaMalloc(&p[0], 8) == cudaSuccess &&
                  cudaMallocHost(&p[1], 8) == cudaSuccess &&
                  cudaMalloc(&p[2], 8) == cudaErrorMemoryAllocation &&
                  cudaMalloc(&p[3], 8) == cudaSuccess;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
