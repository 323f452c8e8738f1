// VMM memory shared between two processes through a POSIX file descriptor
// (cf. the memMapIPCDrv sample): the exporter creates an allocation that
// allows CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, maps and fills it, exports
// it with cuMemExportToShareableHandle and passes the descriptor over a Unix
// socket; the importer imports it (cuMemImportFromShareableHandle), maps it in
// its own address space, checks and rewrites it, and tears its mapping down.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"
#include "corpus_ipc.h"

namespace {

__global__ void Stamp(unsigned* p, size_t n, unsigned salt) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned>(i) * 97u + salt;
}

__global__ void CheckAndStamp(unsigned* p, size_t n, unsigned salt,
                              unsigned new_salt, unsigned long long* wrong) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) {
    if (p[i] != static_cast<unsigned>(i) * 97u + salt) atomicAdd(wrong, 1ull);
    p[i] = static_cast<unsigned>(i) * 97u + new_salt;
  }
}

unsigned Blocks(size_t n) { return static_cast<unsigned>((n + 255) / 256); }

CUmemAllocationProp ShareableProp() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

struct Message {
  uint64_t size;
};

int Child(const corpus::Channel& ch) {
  corpus::ProgramName() = "vmm_ipc child";
  Message msg{};
  int fd = corpus::Receive(ch, &msg, sizeof msg);
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));
  CORPUS_CHECK(cuInit(0));
  int status = 1;
  CUmemGenericAllocationHandle handle = 0;
  CUresult rc = corpus::Rc(
      "child: cuMemImportFromShareableHandle",
      cuMemImportFromShareableHandle(
          &handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  if (rc == CUDA_SUCCESS) {
    CUmemAllocationProp prop{};
    CORPUS_CHECK(cuMemGetAllocationPropertiesFromHandle(&prop, handle));
    std::printf(
        "child: imported allocation allows POSIX fd handles: %s\n",
        (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            ? "yes"
            : "no");
    CUdeviceptr va = 0;
    CORPUS_CHECK(cuMemAddressReserve(&va, msg.size, 0, 0, 0));
    corpus::Rc("child: cuMemMap", cuMemMap(va, msg.size, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    corpus::Rc("child: cuMemSetAccess",
               cuMemSetAccess(va, msg.size, &access, 1));
    unsigned long long* wrong = nullptr;
    CORPUS_CHECK(cudaMalloc(&wrong, sizeof *wrong));
    CORPUS_CHECK(cudaMemset(wrong, 0, sizeof *wrong));
    size_t words = msg.size / sizeof(unsigned);
    CheckAndStamp<<<Blocks(words), 256>>>(reinterpret_cast<unsigned*>(va),
                                          words, 5u, 6u, wrong);
    CORPUS_CHECK(cudaGetLastError());
    unsigned long long host_wrong = 1;
    CORPUS_CHECK(cudaMemcpy(&host_wrong, wrong, sizeof host_wrong,
                            cudaMemcpyDeviceToHost));
    std::printf("child: %llu wrong words\n", host_wrong);
    corpus::Expect(host_wrong == 0, "child: wrong data");
    CORPUS_CHECK(cudaFree(wrong));
    corpus::Rc("child: cuMemUnmap", cuMemUnmap(va, msg.size));
    corpus::Rc("child: cuMemRelease", cuMemRelease(handle));
    corpus::Rc("child: cuMemAddressFree", cuMemAddressFree(va, msg.size));
    status = corpus::Failures() == 0 ? 0 : 1;
  } else {
    corpus::Expect(false, "child: import failed");
  }
  if (fd >= 0) close(fd);
  int code = corpus::Finish();
  corpus::Send(ch, &status, sizeof status);
  return code;
}

}  // namespace

int main() {
  corpus::ProgramName() = "vmm_ipc";
  corpus::Channel parent_end, child_end;
  pid_t child = 0;
  if (corpus::ForkWithChannel(&parent_end, &child_end, &child))
    return Child(child_end);

  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));
  CORPUS_CHECK(cuInit(0));
  int fd_supported = 0;
  CORPUS_CHECK(cuDeviceGetAttribute(
      &fd_supported,
      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0));
  std::printf("POSIX fd handles supported: %d\n", fd_supported);
  CUmemAllocationProp prop = ShareableProp();
  size_t gran = 0;
  CORPUS_CHECK(cuMemGetAllocationGranularity(&gran, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = 3 * gran;
  CUmemGenericAllocationHandle handle = 0;
  corpus::Rc("cuMemCreate (shareable)", cuMemCreate(&handle, size, &prop, 0));
  CUdeviceptr va = 0;
  CORPUS_CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CORPUS_CHECK(cuMemMap(va, size, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CORPUS_CHECK(cuMemSetAccess(va, size, &access, 1));
  size_t words = size / sizeof(unsigned);
  Stamp<<<Blocks(words), 256>>>(reinterpret_cast<unsigned*>(va), words, 5u);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaDeviceSynchronize());

  int fd = -1;
  corpus::Rc("cuMemExportToShareableHandle",
             cuMemExportToShareableHandle(
                 &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  unsigned long long allowed = 0;
  corpus::Rc("cuPointerGetAttribute ALLOWED_HANDLE_TYPES",
             cuPointerGetAttribute(
                 &allowed, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, va));
  std::printf("allowed handle types: %llu\n", allowed);
  Message msg{size};
  corpus::Send(parent_end, &msg, sizeof msg, fd);
  int status = -1;
  corpus::Receive(parent_end, &status, sizeof status);
  int child_code = corpus::WaitChild(child);
  std::printf("child replied %d, exited %d\n", status, child_code);
  corpus::Expect(status == 0 && child_code == 0, "the child failed");

  std::vector<unsigned> host(words);
  CORPUS_CHECK(cuMemcpyDtoH(host.data(), va, size));
  size_t bad = 0;
  for (size_t i = 0; i < words; ++i)
    if (host[i] != static_cast<unsigned>(i) * 97u + 6u) ++bad;
  std::printf("exporter sees the child's words: %zu/%zu\n", words - bad, words);
  corpus::Expect(bad == 0, "the child's writes are lost");
  if (fd >= 0) close(fd);
  CORPUS_CHECK(cuMemUnmap(va, size));
  CORPUS_CHECK(cuMemRelease(handle));
  CORPUS_CHECK(cuMemAddressFree(va, size));
  return corpus::Finish();
}
