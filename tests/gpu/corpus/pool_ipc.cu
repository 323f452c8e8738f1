// A stream-ordered pool shared between two processes, as a data-loader
// process hands batches to a trainer: the exporter creates a pool with POSIX
// file-descriptor handles, allocates from it, exports the pool
// (cudaMemPoolExportToShareableHandle) and two pointers
// (cudaMemPoolExportPointer) and passes the descriptor over a Unix socket;
// the importer imports pool and pointers, checks and changes the data, frees
// its imports; the exporter checks the changes and frees. fork() happens
// before either process touches CUDA.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"
#include "corpus_ipc.h"

namespace {

constexpr size_t kWordsA = 1 << 18;         // 1 MiB
constexpr size_t kWordsB = (3 << 18) + 25;  // 3 MiB + 100 bytes

__global__ void Pattern(unsigned* p, size_t n, unsigned salt) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) p[i] = static_cast<unsigned>(i) * 2654435761u ^ salt;
}

// Counts words that differ from the pattern, then adds 1 to each.
__global__ void CheckAndBump(unsigned* p, size_t n, unsigned salt,
                             unsigned long long* wrong) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) {
    if (p[i] != (static_cast<unsigned>(i) * 2654435761u ^ salt))
      atomicAdd(wrong, 1ull);
    p[i] += 1;
  }
}

unsigned Blocks(size_t n) { return static_cast<unsigned>((n + 255) / 256); }

struct Exported {
  cudaMemPoolPtrExportData a;
  cudaMemPoolPtrExportData b;
};

struct Reply {
  int status;  // 0 ok
};

int Child(const corpus::Channel& ch) {
  corpus::ProgramName() = "pool_ipc child";
  Exported exported{};
  int fd = corpus::Receive(ch, &exported, sizeof exported);
  std::printf("child: received a descriptor: %s\n", fd >= 0 ? "yes" : "no");
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudaMemPool_t pool = nullptr;
  cudaError_t rc =
      corpus::Rc("child: cudaMemPoolImportFromShareableHandle",
                 cudaMemPoolImportFromShareableHandle(
                     &pool, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                     cudaMemHandleTypePosixFileDescriptor, 0));
  Reply reply{1};
  if (rc == cudaSuccess) {
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
    corpus::Rc("child: cudaMemPoolGetAccess",
               cudaMemPoolGetAccess(&flags, pool, &loc));
    std::printf("child: access before set: %d\n", static_cast<int>(flags));
    if (flags != cudaMemAccessFlagsProtReadWrite) {
      cudaMemAccessDesc desc{};
      desc.location = loc;
      desc.flags = cudaMemAccessFlagsProtReadWrite;
      corpus::Rc("child: cudaMemPoolSetAccess",
                 cudaMemPoolSetAccess(pool, &desc, 1));
    }
    unsigned* a = nullptr;
    unsigned* b = nullptr;
    cudaError_t rc_a =
        corpus::Rc("child: cudaMemPoolImportPointer a",
                   cudaMemPoolImportPointer(reinterpret_cast<void**>(&a), pool,
                                            &exported.a));
    cudaError_t rc_b =
        corpus::Rc("child: cudaMemPoolImportPointer b",
                   cudaMemPoolImportPointer(reinterpret_cast<void**>(&b), pool,
                                            &exported.b));
    if (rc_a == cudaSuccess && rc_b == cudaSuccess) {
      cudaPointerAttributes attr{};
      corpus::Rc("child: cudaPointerGetAttributes a",
                 cudaPointerGetAttributes(&attr, a));
      std::printf("child: a is device memory: %s\n",
                  attr.type == cudaMemoryTypeDevice ? "yes" : "no");
      unsigned long long* wrong = nullptr;
      CORPUS_CHECK(cudaMalloc(&wrong, 2 * sizeof *wrong));
      CORPUS_CHECK(cudaMemsetAsync(wrong, 0, 2 * sizeof *wrong, stream));
      CheckAndBump<<<Blocks(kWordsA), 256, 0, stream>>>(a, kWordsA, 0xA5A5u,
                                                        wrong);
      CheckAndBump<<<Blocks(kWordsB), 256, 0, stream>>>(b, kWordsB, 0x5A5Au,
                                                        wrong + 1);
      CORPUS_CHECK(cudaGetLastError());
      unsigned long long host_wrong[2] = {99, 99};
      CORPUS_CHECK(cudaMemcpyAsync(host_wrong, wrong, sizeof host_wrong,
                                   cudaMemcpyDeviceToHost, stream));
      CORPUS_CHECK(cudaStreamSynchronize(stream));
      std::printf("child: a %llu wrong words, b %llu wrong words\n",
                  host_wrong[0], host_wrong[1]);
      corpus::Expect(host_wrong[0] == 0 && host_wrong[1] == 0,
                     "child saw the wrong data");
      CORPUS_CHECK(cudaFree(wrong));
      // Imports are freed before the exporter frees the memory.
      corpus::Rc("child: cudaFreeAsync a", cudaFreeAsync(a, stream));
      corpus::Rc("child: cudaFreeAsync b", cudaFreeAsync(b, stream));
      CORPUS_CHECK(cudaStreamSynchronize(stream));
      reply.status = corpus::Failures() == 0 ? 0 : 1;
    } else {
      corpus::Expect(false, "child: pointer import failed");
    }
    corpus::Rc("child: cudaMemPoolDestroy (imported)",
               cudaMemPoolDestroy(pool));
  } else {
    corpus::Expect(false, "child: pool import failed");
  }
  if (fd >= 0) close(fd);
  CORPUS_CHECK(cudaStreamDestroy(stream));
  int code = corpus::Finish();
  corpus::Send(ch, &reply, sizeof reply);
  return code;
}

}  // namespace

int main() {
  corpus::ProgramName() = "pool_ipc";
  corpus::Channel parent_end, child_end;
  pid_t child = 0;
  if (corpus::ForkWithChannel(&parent_end, &child_end, &child))
    return Child(child_end);

  CORPUS_CHECK(cudaSetDevice(0));
  int handle_types = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(
      &handle_types, cudaDevAttrMemoryPoolSupportedHandleTypes, 0));
  std::printf(
      "pool handle types include POSIX fd: %s\n",
      (handle_types & cudaMemHandleTypePosixFileDescriptor) ? "yes" : "no");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CORPUS_CHECK(cudaMemPoolCreate(&pool, &props));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  unsigned* a = nullptr;
  unsigned* b = nullptr;
  CORPUS_CHECK(cudaMallocFromPoolAsync(
      reinterpret_cast<void**>(&a), kWordsA * sizeof(unsigned), pool, stream));
  CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&b),
                               kWordsB * sizeof(unsigned), pool, stream));
  Pattern<<<Blocks(kWordsA), 256, 0, stream>>>(a, kWordsA, 0xA5A5u);
  Pattern<<<Blocks(kWordsB), 256, 0, stream>>>(b, kWordsB, 0x5A5Au);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));

  int fd = -1;
  corpus::Rc("cudaMemPoolExportToShareableHandle",
             cudaMemPoolExportToShareableHandle(
                 &fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
  Exported exported{};
  corpus::Rc("cudaMemPoolExportPointer a",
             cudaMemPoolExportPointer(&exported.a, a));
  corpus::Rc("cudaMemPoolExportPointer b",
             cudaMemPoolExportPointer(&exported.b, b));
  // An interior pointer is not an allocation of the pool.
  cudaMemPoolPtrExportData interior{};
  corpus::Rc("cudaMemPoolExportPointer interior",
             cudaMemPoolExportPointer(&interior, a + 1024));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  corpus::Send(parent_end, &exported, sizeof exported, fd);
  Reply reply{-1};
  corpus::Receive(parent_end, &reply, sizeof reply);
  int child_code = corpus::WaitChild(child);
  std::printf("child replied %d, exited %d\n", reply.status, child_code);
  corpus::Expect(reply.status == 0 && child_code == 0, "the child failed");

  std::vector<unsigned> host(kWordsB);
  CORPUS_CHECK(cudaMemcpy(host.data(), a, kWordsA * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
  size_t wrong_a = 0, wrong_b = 0;
  for (size_t i = 0; i < kWordsA; ++i)
    if (host[i] != ((static_cast<unsigned>(i) * 2654435761u ^ 0xA5A5u) + 1))
      ++wrong_a;
  CORPUS_CHECK(cudaMemcpy(host.data(), b, kWordsB * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kWordsB; ++i)
    if (host[i] != ((static_cast<unsigned>(i) * 2654435761u ^ 0x5A5Au) + 1))
      ++wrong_b;
  std::printf("exporter sees the child's changes: a %zu/%zu, b %zu/%zu\n",
              kWordsA - wrong_a, kWordsA, kWordsB - wrong_b, kWordsB);
  corpus::Expect(wrong_a == 0 && wrong_b == 0, "the child's writes are lost");

  CORPUS_CHECK(cudaFreeAsync(a, stream));
  CORPUS_CHECK(cudaFreeAsync(b, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  if (fd >= 0) close(fd);
  CORPUS_CHECK(cudaMemPoolDestroy(pool));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
