// The test double's own contract (no gpumemtrace involved): the behaviour the
// interposition tests rely on, checked against the real driver's rules.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/zone_abi.h"

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
  char bus[16];
  EXPECT_EQ(cuDeviceGetPCIBusId(bus, sizeof(bus), 1), CUDA_SUCCESS);
  EXPECT_STREQ(bus, "0000:42:00.0");
  EXPECT_EQ(cuDeviceGetPCIBusId(bus, sizeof(bus), 2),
            CUDA_ERROR_INVALID_DEVICE);

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

// A size near SIZE_MAX is out of memory (a bad shape for a pitched block),
// never a small block after the rounding wraps: what an H200 answered.
TEST_F(FakeDriverTest, HugeSizesAreRefusedNotWrapped) {
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  CUdeviceptr keep = 0;  // something in use, so a sum could wrap as well
  ASSERT_EQ(cuMemAlloc(&keep, 1000), CUDA_SUCCESS);
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 255, SIZE_MAX - 1000, SIZE_MAX / 2,
                       size_t{1} << 52}) {
    CUdeviceptr d = 0;
    EXPECT_EQ(cuMemAlloc(&d, bytes), CUDA_ERROR_OUT_OF_MEMORY) << bytes;
    EXPECT_EQ(cuMemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL),
              CUDA_ERROR_OUT_OF_MEMORY)
        << bytes;
    EXPECT_EQ(cuMemAllocAsync(&d, bytes, nullptr), CUDA_ERROR_OUT_OF_MEMORY)
        << bytes;
    EXPECT_EQ(d, 0u);
  }
  void* h = nullptr;
  EXPECT_EQ(cuMemAllocHost(&h, SIZE_MAX), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemHostAlloc(&h, SIZE_MAX, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr d = 0;
  size_t pitch = 0;
  EXPECT_EQ(cuMemAllocPitch(&d, &pitch, SIZE_MAX, 1, 4),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocPitch(&d, &pitch, size_t{1} << 20, size_t{1} << 50, 4),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(keep), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_after, free_before);  // nothing was charged
}

// Calls that need an allocation's start refuse an interior pointer, as the
// real driver does (measured: cuMemFree, cuMemFreeAsync, cuIpcCloseMemHandle
// of base + 256); cuIpcGetMemHandle accepts one and names the whole block,
// but exports only cuMemAlloc memory.
TEST_F(FakeDriverTest, StartOnlyCallsRefuseInteriorPointers) {
  CUdeviceptr managed = 0, pooled = 0, d = 0;
  ASSERT_EQ(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&pooled, 4096, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(managed + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeAsync(pooled + 256, nullptr), CUDA_ERROR_INVALID_VALUE);

  CUipcMemHandle at_base{}, inside{};
  ASSERT_EQ(cuIpcGetMemHandle(&at_base, d), CUDA_SUCCESS);
  ASSERT_EQ(cuIpcGetMemHandle(&inside, d + 256), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&at_base, &inside, sizeof(at_base)), 0);
  CUdeviceptr mapped = 0;
  ASSERT_EQ(
      cuIpcOpenMemHandle(&mapped, inside, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
      CUDA_SUCCESS);
  EXPECT_EQ(mapped, d);  // the whole allocation, at its base
  EXPECT_EQ(cuIpcCloseMemHandle(mapped + 256), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuIpcCloseMemHandle(mapped), CUDA_SUCCESS);
  CUipcMemHandle refused{};
  EXPECT_EQ(cuIpcGetMemHandle(&refused, managed), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuIpcGetMemHandle(&refused, pooled), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync(pooled, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(managed), CUDA_SUCCESS);
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

TEST_F(FakeDriverTest, StreamsAndEvents) {
  CUstream stream = nullptr;
  EXPECT_EQ(cuStreamCreate(&stream, 0x40), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_EQ(cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(cuStreamIsCapturing(CU_STREAM_LEGACY, &status), CUDA_SUCCESS);

  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_SUCCESS);  // never recorded: complete
  EXPECT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_SUCCESS);  // the double is synchronous
  EXPECT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(stream, event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);

  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(event, stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_ERROR_INVALID_HANDLE);

  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
}

TEST_F(FakeDriverTest, ContextStack) {
  CUcontext ctx1 = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(ctx1), CUDA_SUCCESS);
  CUcontext current = nullptr;
  EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx1);
  CUcontext popped = nullptr;
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx1);
  EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx_);
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx_);
  EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, nullptr);
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPushCurrent(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, CopiesAndSetsStayInsideTheirBlock) {
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, 1000), CUDA_SUCCESS);
  std::vector<unsigned char> host(1001, 7);
  EXPECT_EQ(cuMemcpyHtoD(d, host.data(), 1000), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD(d, host.data(), 1001), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoD(d + 999, host.data(), 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(host.data()), host.data(), 1),
      CUDA_ERROR_INVALID_VALUE);  // pageable memory is no device side
  EXPECT_EQ(cuMemsetD8Async(d + 10, 0xab, 5, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8Async(d, 0, 1001, nullptr), CUDA_ERROR_INVALID_VALUE);
  std::vector<unsigned char> back(1000);
  EXPECT_EQ(cuMemcpyDtoH(back.data(), d, 1000), CUDA_SUCCESS);
  EXPECT_EQ(back[9], 7);
  EXPECT_EQ(back[10], 0xab);
  EXPECT_EQ(back[14], 0xab);
  EXPECT_EQ(back[15], 7);
  EXPECT_EQ(cuMemcpyDtoH(back.data(), d + 1, 1000), CUDA_ERROR_INVALID_VALUE);

  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD32Async(d, 0x01020304u, 250, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD32Async(d, 0, 251, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32Async(d + 2, 0, 1, stream), CUDA_ERROR_INVALID_VALUE);
  uint32_t word = 0;
  EXPECT_EQ(cuMemcpyDtoHAsync(&word, d + 996, 4, stream), CUDA_SUCCESS);
  EXPECT_EQ(word, 0x01020304u);
  word = 0x55667788u;
  EXPECT_EQ(cuMemcpyHtoDAsync(d + 4, &word, 4, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoDAsync(d + 998, &word, 4, stream),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(reinterpret_cast<uint32_t*>(d)[1], 0x55667788u);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8Async(d, 0, 1, stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, DeviceAttributesAndNewProcAddresses) {
  int sms = 0;
  EXPECT_EQ(
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1),
      CUDA_SUCCESS);
  EXPECT_EQ(sms, 4);
  EXPECT_EQ(
      cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 2),
      CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0),
            CUDA_ERROR_INVALID_VALUE);

  struct {
    const char* base;
    const char* symbol;
  } const kCases[] = {
      {"cuLibraryLoadData", "cuLibraryLoadData"},
      {"cuLibraryGetKernel", "cuLibraryGetKernel"},
      {"cuLaunchKernel", "cuLaunchKernel"},
      {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2"},
      {"cuMemcpyDtoH", "cuMemcpyDtoH_v2"},
      {"cuMemsetD8Async", "cuMemsetD8Async"},
      {"cuStreamDestroy", "cuStreamDestroy_v2"},
      {"cuEventDestroy", "cuEventDestroy_v2"},
      {"cuCtxPushCurrent", "cuCtxPushCurrent_v2"},
      {"cuCtxPopCurrent", "cuCtxPopCurrent_v2"},
      {"cuDeviceGetAttribute", "cuDeviceGetAttribute"},
      {"cuThreadExchangeStreamCaptureMode",
       "cuThreadExchangeStreamCaptureMode"},
  };
  for (const auto& c : kCases) {
    void* fn = nullptr;
    EXPECT_EQ(cuGetProcAddress(c.base, &fn, 13000, 0, nullptr), CUDA_SUCCESS)
        << c.base;
    EXPECT_NE(fn, nullptr) << c.base;
    EXPECT_EQ(fn, DriverSymbol(c.symbol)) << c.base;
  }
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress("cuLibraryLoadData", &fn, 11080, 0, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

// The guard kernels, emulated on the host (kernels/zone_abi.h).
class FakeZoneKernelTest : public FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    // The fatbin magic is all the double looks at.
    const unsigned char image[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    ASSERT_EQ(cuLibraryLoadData(&library_, image, nullptr, nullptr, 0, nullptr,
                                nullptr, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(cuLibraryGetKernel(&fill_, library_, GMT_FILL_KERNEL_NAME),
              CUDA_SUCCESS);
    ASSERT_EQ(cuLibraryGetKernel(&check_, library_, GMT_CHECK_KERNEL_NAME),
              CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&memory_, 3 * GMT_ZONE_CHUNK_BYTES), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&table_, 4096), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cuMemFree(memory_), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree(table_), CUDA_SUCCESS);
    EXPECT_EQ(cuLibraryUnload(library_), CUDA_SUCCESS);
  }
  // Uploads `zones` with the chunk_begin prefix sum; returns total chunks.
  uint64_t Upload(std::vector<GmtZone> zones) {
    uint64_t chunks = 0;
    for (GmtZone& z : zones) {
      z.chunk_begin = chunks;
      chunks += (z.bytes + GMT_ZONE_CHUNK_BYTES - 1) / GMT_ZONE_CHUNK_BYTES;
    }
    EXPECT_EQ(
        cuMemcpyHtoD(table_, zones.data(), zones.size() * sizeof(GmtZone)),
        CUDA_SUCCESS);
    return chunks;
  }
  CUresult Launch(CUkernel kernel, uint64_t count, uint64_t chunks) {
    CUdeviceptr zones = table_;
    CUdeviceptr results = table_ + 1024;
    CUdeviceptr summary = table_ + 2048;
    void* params[] = {&zones, &count, &chunks, &results, &summary};
    return cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 2, 1, 1, 256, 1,
                          1, 0, nullptr, params, nullptr);
  }
  const GmtZoneResult* Results() const {
    return reinterpret_cast<const GmtZoneResult*>(table_ + 1024);
  }
  const GmtCheckSummary* Summary() const {
    return reinterpret_cast<const GmtCheckSummary*>(table_ + 2048);
  }

  CUlibrary library_ = nullptr;
  CUkernel fill_ = nullptr;
  CUkernel check_ = nullptr;
  CUdeviceptr memory_ = 0;
  CUdeviceptr table_ = 0;
};

TEST_F(FakeZoneKernelTest, LibraryAndKernelHandles) {
  CUlibrary other = nullptr;
  const unsigned char not_fatbin[8] = {0x7f, 'E', 'L', 'F'};
  EXPECT_EQ(cuLibraryLoadData(&other, not_fatbin, nullptr, nullptr, 0, nullptr,
                              nullptr, 0),
            CUDA_ERROR_INVALID_IMAGE);
  CUkernel kernel = nullptr;
  EXPECT_EQ(cuLibraryGetKernel(&kernel, library_, "gmt_other_kernel"),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuLibraryGetKernel(&kernel, nullptr, GMT_FILL_KERNEL_NAME),
            CUDA_ERROR_INVALID_HANDLE);
  void* params[5] = {};
  EXPECT_EQ(
      cuLaunchKernel(nullptr, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
      CUDA_ERROR_INVALID_HANDLE);
  // Another kernel: checked, not run (the double runs no other device code).
  static const char kOther[] = "other_kernel";
  EXPECT_EQ(
      cuLaunchKernel(reinterpret_cast<CUfunction>(const_cast<char*>(kOther)), 1,
                     1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  // The guard kernels need their parameters.
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(fill_), 1, 1, 1, 256, 1,
                           1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(fill_), 0, 1, 1, 256, 1,
                           1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeZoneKernelTest, FillThenCheckFindsExactlyTheChangedBytes) {
  const uint64_t big = GMT_ZONE_CHUNK_BYTES + 100;  // two chunks
  const std::vector<GmtZone> zones = {
      {memory_ + 3, 61, 0xfa, 0},
      {memory_ + 64, 0, 0x11, 0},  // empty: skipped
      {memory_ + 100, big, 0xfb, 0},
  };
  const uint64_t chunks = Upload(zones);
  EXPECT_EQ(chunks, 3u);
  ASSERT_EQ(Launch(fill_, 3, chunks), CUDA_SUCCESS);
  auto* bytes = reinterpret_cast<unsigned char*>(memory_);
  EXPECT_EQ(bytes[2], 0);
  EXPECT_EQ(bytes[3], 0xfa);
  EXPECT_EQ(bytes[63], 0xfa);
  EXPECT_EQ(bytes[64], 0);
  EXPECT_EQ(bytes[100 + big - 1], 0xfb);
  EXPECT_EQ(bytes[100 + big], 0);

  bytes[10] = 0;
  bytes[20] = 1;
  bytes[100 + big - 1] = 0;
  ASSERT_EQ(cuMemsetD8(table_ + 1024, 0, 2048), CUDA_SUCCESS);
  ASSERT_EQ(Launch(check_, 3, chunks), CUDA_SUCCESS);
  EXPECT_EQ(Results()[0].changed_bytes, 2u);
  EXPECT_EQ(~Results()[0].first_inverted, 7u);
  EXPECT_EQ(Results()[0].last_plus1, 18u);
  EXPECT_EQ(Results()[1].changed_bytes, 0u);
  EXPECT_EQ(Results()[2].changed_bytes, 1u);
  EXPECT_EQ(~Results()[2].first_inverted, big - 1);
  EXPECT_EQ(Results()[2].last_plus1, big);
  EXPECT_EQ(Summary()->zones_changed, 2u);
  EXPECT_EQ(Summary()->bytes_changed, 3u);
}

TEST_F(FakeZoneKernelTest, BadTablesFailTheLaunch) {
  uint64_t chunks = Upload({{memory_, 100, 1, 0}});
  EXPECT_EQ(Launch(fill_, 1, chunks + 1), CUDA_ERROR_LAUNCH_FAILED);
  GmtZone wrong_prefix = {memory_, 100, 1, 5};
  ASSERT_EQ(cuMemcpyHtoD(table_, &wrong_prefix, sizeof(wrong_prefix)),
            CUDA_SUCCESS);
  EXPECT_EQ(Launch(fill_, 1, 1), CUDA_ERROR_LAUNCH_FAILED);
  // A zone running past its block.
  chunks = Upload({{memory_ + 3 * GMT_ZONE_CHUNK_BYTES - 10, 11, 1, 0}});
  EXPECT_EQ(Launch(check_, 1, chunks), CUDA_ERROR_ILLEGAL_ADDRESS);
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

// Kernel parameter layouts, read from the double's mangled kernel names as a
// compiler lays out the parameter buffer; past the last parameter is
// CUDA_ERROR_INVALID_VALUE, as in CUDA.
TEST_F(FakeDriverTest, ParamInfoFollowsTheMangledSignature) {
  struct Expected {
    const char* name;
    std::vector<std::pair<size_t, size_t>> params;  // offset, size
  };
  const Expected cases[] = {
      {"_Z4fillPfi", {{0, 8}, {8, 4}}},
      {"_Z4stepv", {}},
      {"_Z3addPKfS0_Pfi", {{0, 8}, {8, 8}, {16, 8}, {24, 4}}},
      {"_Z4copyc6Args24i", {{0, 1}, {8, 24}, {32, 4}}},
      {"_Z3sumPdS_m", {{0, 8}, {8, 8}, {16, 8}}},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.name);
    auto f = reinterpret_cast<CUfunction>(const_cast<char*>(c.name));
    auto k = reinterpret_cast<CUkernel>(const_cast<char*>(c.name));
    size_t i = 0;
    for (; i < c.params.size(); ++i) {
      size_t offset = 99;
      size_t size = 99;
      ASSERT_EQ(cuFuncGetParamInfo(f, i, &offset, &size), CUDA_SUCCESS);
      EXPECT_EQ(offset, c.params[i].first);
      EXPECT_EQ(size, c.params[i].second);
      ASSERT_EQ(cuKernelGetParamInfo(k, i, &offset, &size), CUDA_SUCCESS);
      EXPECT_EQ(offset, c.params[i].first);
    }
    size_t offset = 0;
    size_t size = 0;
    EXPECT_EQ(cuFuncGetParamInfo(f, i, &offset, &size),
              CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuKernelGetParamInfo(k, i + 5, &offset, &size),
              CUDA_ERROR_INVALID_VALUE);
  }
  size_t offset = 0;
  size_t size = 0;
  EXPECT_EQ(cuFuncGetParamInfo(nullptr, 0, &offset, &size),
            CUDA_ERROR_INVALID_HANDLE);
  // A name the double cannot read: it does not know the layout.
  char unmangled[] = "fill";
  EXPECT_EQ(cuFuncGetParamInfo(reinterpret_cast<CUfunction>(unmangled), 0,
                               &offset, &size),
            CUDA_ERROR_NOT_SUPPORTED);
}

TEST(FakeRuntimeTest, FuncBySymbolAndParamInfo) {
  static char name[] = "_Z4fillPfi";
  cudaFunction_t f = nullptr;
  ASSERT_EQ(cudaGetFuncBySymbol(&f, name), cudaSuccess);
  EXPECT_EQ(static_cast<void*>(f), static_cast<void*>(name));
  size_t offset = 0;
  size_t size = 0;
  ASSERT_EQ(cudaFuncGetParamInfo(name, 1, &offset, &size), cudaSuccess);
  EXPECT_EQ(offset, 8u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cudaFuncGetParamInfo(name, 2, &offset, &size),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetFuncBySymbol(&f, nullptr), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
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

// Graphs with memory nodes. The alloc node's address is
// fixed at creation; its memory is a device block from a launch until freed;
// a relaunch with the block unfreed fails unless auto-free; a capture turns
// cuMemAllocAsync / cuMemFreeAsync into nodes; the tool's queries answer.
TEST_F(FakeDriverTest, GraphMemoryNodesLiveFromLaunchToFree) {
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.bytesize = 1000;
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &p), CUDA_SUCCESS);
  ASSERT_NE(p.dptr, 0u);
  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CUDA_MEM_ALLOC_NODE_PARAMS got{};
  ASSERT_EQ(cuGraphMemAllocNodeGetParams(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.dptr, p.dptr);
  EXPECT_EQ(got.bytesize, 1000u);
  size_t n = 0;
  ASSERT_EQ(cuGraphGetNodes(graph, nullptr, &n), CUDA_SUCCESS);
  EXPECT_EQ(n, 1u);
  // Not memory before the launch.
  EXPECT_EQ(cuMemFree(p.dptr), CUDA_ERROR_INVALID_VALUE);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);  // unfreed
  EXPECT_EQ(cuMemsetD8(p.dptr, 1, 1000), CUDA_SUCCESS);  // memory now
  EXPECT_EQ(cuMemFree(p.dptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);  // same address
  EXPECT_EQ(cuMemFreeAsync(p.dptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  // Auto-free: each launch frees the previous one's block.
  ASSERT_EQ(cuGraphInstantiate(&exec, graph,
                               CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
            CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p.dptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p.dptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  // A free node frees within the launch; only alloc-node addresses qualify.
  CUgraphNode free_node = nullptr;
  EXPECT_EQ(cuGraphAddMemFreeNode(&free_node, graph, &node, 1, p.dptr + 256),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGraphAddMemFreeNode(&free_node, graph, &node, 1, p.dptr),
            CUDA_SUCCESS);
  CUdeviceptr freed = 0;
  ASSERT_EQ(cuGraphMemFreeNodeGetParams(free_node, &freed), CUDA_SUCCESS);
  EXPECT_EQ(freed, p.dptr);
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p.dptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  // Any other non-null handle still launches (no memory).
  EXPECT_EQ(cuGraphLaunch(reinterpret_cast<CUgraphExec>(0x1234), nullptr),
            CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, CaptureTurnsStreamOrderedCallsIntoNodes) {
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUdeviceptr q = 0;
  ASSERT_EQ(cuMemAllocAsync(&q, 512, s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(q), CUDA_ERROR_INVALID_VALUE);  // a node, not memory
  ASSERT_EQ(cuMemFreeAsync(q, s), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  CUgraphNode nodes[4];
  size_t n = 4;
  ASSERT_EQ(cuGraphGetNodes(graph, nodes, &n), CUDA_SUCCESS);
  ASSERT_EQ(n, 2u);
  CUgraphNodeType types[2];
  ASSERT_EQ(cuGraphNodeGetType(nodes[0], &types[0]), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphNodeGetType(nodes[1], &types[1]), CUDA_SUCCESS);
  EXPECT_EQ(types[0], CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  EXPECT_EQ(types[1], CU_GRAPH_NODE_TYPE_MEM_FREE);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s), CUDA_SUCCESS);  // freed by its free node
  EXPECT_EQ(cuMemFree(q), CUDA_ERROR_INVALID_VALUE);
  void* fn = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuGraphInstantiate", &fn, 13000, 0, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, DriverSymbol("cuGraphInstantiateWithFlags"));
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

}  // namespace
