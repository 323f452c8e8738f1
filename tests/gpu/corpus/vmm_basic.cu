// The virtual memory management API end to end, as a custom allocator uses
// it: granularity queries, cuMemCreate, one reservation with the same
// physical memory mapped twice (an alias), two physical chunks mapped back to
// back and copied across their seam, access set and read back, the handle
// retrieved from an address, the mapping described by pointer attributes and
// cuMemGetAddressRange, and everything unmapped, released and freed.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Stamp(unsigned* p, size_t n, unsigned salt) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned>(i) ^ salt;
}

__global__ void CountWrong(const unsigned* p, size_t n, unsigned salt,
                           unsigned long long* wrong) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n && p[i] != (static_cast<unsigned>(i) ^ salt))
    atomicAdd(wrong, 1ull);
}

unsigned Blocks(size_t n) { return static_cast<unsigned>((n + 255) / 256); }

CUmemAllocationProp DeviceProp(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

template <typename T>
void PrintPointerAttribute(const char* what, CUpointer_attribute attr,
                           CUdeviceptr p, CUdeviceptr base) {
  T value{};
  CUresult rc = cuPointerGetAttribute(&value, attr, p);
  if (rc != CUDA_SUCCESS) {
    std::printf("  %s -> %d (%s)\n", what, static_cast<int>(rc),
                corpus::ErrorName(rc));
    return;
  }
  if (base != 0)  // an address: print it relative to the reservation
    std::printf("  %s = reservation%+lld\n", what,
                static_cast<long long>(static_cast<CUdeviceptr>(value) - base));
  else
    std::printf("  %s = %llu\n", what, static_cast<unsigned long long>(value));
}

}  // namespace

int main() {
  corpus::ProgramName() = "vmm_basic";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));  // the primary context, current
  CORPUS_CHECK(cuInit(0));
  int vmm = 0;
  CORPUS_CHECK(cuDeviceGetAttribute(
      &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  std::printf("VMM supported: %d\n", vmm);

  CUmemAllocationProp prop = DeviceProp(0);
  size_t gran = 0, recommended = 0;
  CORPUS_CHECK(cuMemGetAllocationGranularity(&gran, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CORPUS_CHECK(cuMemGetAllocationGranularity(
      &recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  std::printf("granularity: minimum %zu, recommended %zu\n", gran, recommended);

  const size_t chunk = 2 * gran;
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  corpus::Rc("cuMemCreate chunk 1", cuMemCreate(&h1, chunk, &prop, 0));
  corpus::Rc("cuMemCreate chunk 2", cuMemCreate(&h2, chunk, &prop, 0));
  CUmemGenericAllocationHandle odd = 0;
  if (corpus::Rc("cuMemCreate size not a multiple of the granularity",
                 cuMemCreate(&odd, gran + 4096, &prop, 0)) == CUDA_SUCCESS)
    CORPUS_CHECK(cuMemRelease(odd));

  // Reservation: [alias A | alias B | chunk 1 | chunk 2]
  CUdeviceptr va = 0;
  corpus::Rc("cuMemAddressReserve 4 chunks",
             cuMemAddressReserve(&va, 4 * chunk, 0, 0, 0));
  corpus::Rc("cuMemMap alias A", cuMemMap(va, chunk, 0, h1, 0));
  corpus::Rc("cuMemMap alias B", cuMemMap(va + chunk, chunk, 0, h1, 0));
  corpus::Rc("cuMemMap seam left", cuMemMap(va + 2 * chunk, chunk, 0, h2, 0));
  CUmemGenericAllocationHandle h3 = 0;
  CORPUS_CHECK(cuMemCreate(&h3, chunk, &prop, 0));
  corpus::Rc("cuMemMap seam right", cuMemMap(va + 3 * chunk, chunk, 0, h3, 0));
  corpus::Rc("cuMemMap over a mapped range", cuMemMap(va, chunk, 0, h2, 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  corpus::Rc("cuMemSetAccess all", cuMemSetAccess(va, 4 * chunk, &access, 1));
  unsigned long long flags = 0;
  CUmemLocation loc = access.location;
  corpus::Rc("cuMemGetAccess", cuMemGetAccess(&flags, &loc, va + chunk));
  std::printf("access flags: %llu\n", flags);

  // Write through alias A, read through alias B.
  unsigned* alias_a = reinterpret_cast<unsigned*>(va);
  unsigned* alias_b = reinterpret_cast<unsigned*>(va + chunk);
  size_t words = chunk / sizeof(unsigned);
  unsigned long long* wrong = nullptr;
  CORPUS_CHECK(cudaMalloc(&wrong, sizeof *wrong));
  CORPUS_CHECK(cudaMemset(wrong, 0, sizeof *wrong));
  Stamp<<<Blocks(words), 256>>>(alias_a, words, 0x1234u);
  CountWrong<<<Blocks(words), 256>>>(alias_b, words, 0x1234u, wrong);
  CORPUS_CHECK(cudaGetLastError());
  unsigned long long host_wrong = 1;
  CORPUS_CHECK(cudaMemcpy(&host_wrong, wrong, sizeof host_wrong,
                          cudaMemcpyDeviceToHost));
  std::printf("alias B sees alias A's writes: %s\n",
              host_wrong == 0 ? "yes" : "no");
  corpus::Expect(host_wrong == 0, "aliases disagree in %llu words", host_wrong);

  // One copy across the seam between two physical allocations.
  std::vector<unsigned> host(2 * words);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<unsigned>(i * 7 + 1);
  CORPUS_CHECK(cudaMemcpy(reinterpret_cast<void*>(va + 2 * chunk), host.data(),
                          2 * chunk, cudaMemcpyHostToDevice));
  std::vector<unsigned> back(words);
  CORPUS_CHECK(cudaMemcpy(back.data(),
                          reinterpret_cast<void*>(va + 2 * chunk + chunk / 2),
                          chunk, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < words; ++i)
    if (back[i] != host[words / 2 + i]) ++bad;
  std::printf("copy across the seam: %zu/%zu words right\n", words - bad,
              words);
  corpus::Expect(bad == 0, "seam copy wrong");

  // What the driver says about an address inside the alias.
  CUdeviceptr inside = va + chunk + 4096;
  std::printf("pointer attributes at alias B + 4096:\n");
  PrintPointerAttribute<unsigned>("MEMORY_TYPE",
                                  CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside, 0);
  PrintPointerAttribute<CUdeviceptr>(
      "RANGE_START_ADDR", CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside, va);
  PrintPointerAttribute<size_t>("RANGE_SIZE", CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                inside, 0);
  PrintPointerAttribute<CUdeviceptr>(
      "MAPPING_BASE_ADDR", CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, inside, va);
  PrintPointerAttribute<size_t>("MAPPING_SIZE",
                                CU_POINTER_ATTRIBUTE_MAPPING_SIZE, inside, 0);
  PrintPointerAttribute<int>("MAPPED", CU_POINTER_ATTRIBUTE_MAPPED, inside, 0);
  PrintPointerAttribute<int>("IS_LEGACY_CUDA_IPC_CAPABLE",
                             CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                             inside, 0);
  PrintPointerAttribute<unsigned long long>(
      "ALLOWED_HANDLE_TYPES", CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, inside,
      0);
  PrintPointerAttribute<unsigned long long>(
      "ACCESS_FLAGS", CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, inside, 0);
  CUdeviceptr base = 0;
  size_t size = 0;
  corpus::Rc("cuMemGetAddressRange alias B + 4096",
             cuMemGetAddressRange(&base, &size, inside));
  std::printf("  range: reservation%+lld, %zu bytes\n",
              static_cast<long long>(base - va), size);
  cudaPointerAttributes attr{};
  corpus::Rc("cudaPointerGetAttributes alias B",
             cudaPointerGetAttributes(&attr, alias_b));
  std::printf("  runtime type %d, device %d\n", static_cast<int>(attr.type),
              attr.device);

  CUmemGenericAllocationHandle retained = 0;
  corpus::Rc(
      "cuMemRetainAllocationHandle alias B + 4096",
      cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(inside)));
  std::printf("retained handle is chunk 1: %s\n",
              retained == h1 ? "yes" : "no");
  if (retained != 0) CORPUS_CHECK(cuMemRelease(retained));
  CUmemAllocationProp got{};
  corpus::Rc("cuMemGetAllocationPropertiesFromHandle",
             cuMemGetAllocationPropertiesFromHandle(&got, h1));
  std::printf("chunk 1: type %d, location type %d id %d\n",
              static_cast<int>(got.type), static_cast<int>(got.location.type),
              got.location.id);

  // Teardown in the order a careful allocator uses: unmap, release, free.
  CORPUS_CHECK(cudaFree(wrong));
  corpus::Rc("cuMemUnmap alias B", cuMemUnmap(va + chunk, chunk));
  corpus::Rc("cuMemUnmap alias A", cuMemUnmap(va, chunk));
  corpus::Rc("cuMemUnmap seam left", cuMemUnmap(va + 2 * chunk, chunk));
  corpus::Rc("cuMemUnmap seam right", cuMemUnmap(va + 3 * chunk, chunk));
  corpus::Rc("cuMemRelease chunk 1", cuMemRelease(h1));
  corpus::Rc("cuMemRelease chunk 2", cuMemRelease(h2));
  corpus::Rc("cuMemRelease chunk 3", cuMemRelease(h3));
  corpus::Rc("cuMemAddressFree", cuMemAddressFree(va, 4 * chunk));
  return corpus::Finish();
}
