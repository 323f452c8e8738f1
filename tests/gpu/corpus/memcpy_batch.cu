// The batch memory APIs of CUDA 12.8/13: cudaMemcpyBatchAsync with two
// attribute sets (stream-ordered sources, and a stack variable copied during
// the call), cudaMemcpy3DBatchAsync (pointer to pointer and pointer to
// array), cudaMemPrefetchBatchAsync / cuMemPrefetchBatchAsync of managed
// ranges to the GPU and to the host, and the discard calls
// (cudaMemDiscardBatchAsync, cuMemDiscardBatchAsync,
// cudaMemDiscardAndPrefetchBatchAsync) on managed buffers that are written
// again afterwards, as a data loader that recycles its buffers does.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Fill(int* p, int n, int base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = base + i;
}

int CountWrong(const int* p, int n, int base) {
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (p[i] != base + i) ++wrong;
  return wrong;
}

cudaMemLocation Device0() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeDevice;
  l.id = 0;
  return l;
}

cudaMemLocation HostLoc() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeHost;
  return l;
}

}  // namespace

int main() {
  corpus::ProgramName() = "memcpy_batch";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cuInit(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr int kN = 1 << 18;
  constexpr size_t kBytes = kN * sizeof(int);

  int *a, *b, *c, *pinned, *managed;
  CORPUS_CHECK(cudaMalloc(&a, kBytes));
  CORPUS_CHECK(cudaMalloc(&b, kBytes));
  CORPUS_CHECK(cudaMalloc(&c, 2 * kBytes));
  CORPUS_CHECK(cudaMallocHost(&pinned, kBytes));
  CORPUS_CHECK(cudaMallocManaged(&managed, kBytes));
  std::vector<int> pageable(kN);
  for (int i = 0; i < kN; ++i) {
    pinned[i] = 100 + i;
    pageable[i] = 200 + i;
    managed[i] = 300 + i;
  }
  int stack_value[4] = {7, 8, 9, 10};

  // Copies 0-2 read their sources in stream order; copy 3 reads a stack
  // array during the call.
  void* dsts[] = {a, b, c + kN, c};
  const void* srcs[] = {pinned, pageable.data(), managed, stack_value};
  size_t sizes[] = {kBytes, kBytes, kBytes, sizeof stack_value};
  cudaMemcpyAttributes attrs[2] = {};
  attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attrs[0].srcLocHint = HostLoc();
  attrs[0].dstLocHint = Device0();
  attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
  attrs[1].srcLocHint = HostLoc();
  attrs[1].dstLocHint = Device0();
  size_t attr_idx[] = {0, 3};
  cudaError_t batch_rc = corpus::Rc(
      "cudaMemcpyBatchAsync 4 copies",
      cudaMemcpyBatchAsync(dsts, srcs, sizes, 4, attrs, attr_idx, 2, stream));
  cudaGetLastError();
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  std::vector<int> host(2 * kN);
  CORPUS_CHECK(cudaMemcpy(host.data(), a, kBytes, cudaMemcpyDeviceToHost));
  int wrong = CountWrong(host.data(), kN, 100);
  CORPUS_CHECK(cudaMemcpy(host.data(), b, kBytes, cudaMemcpyDeviceToHost));
  wrong += CountWrong(host.data(), kN, 200);
  CORPUS_CHECK(cudaMemcpy(host.data(), c, 2 * kBytes, cudaMemcpyDeviceToHost));
  wrong += CountWrong(host.data() + kN, kN, 300);
  wrong += CountWrong(host.data(), 4, 7);
  if (batch_rc == cudaSuccess) {  // a refused batch copied nothing
    std::printf("batch copies: %d wrong\n", wrong);
    corpus::Expect(wrong == 0, "batch copies");
  }

  // 3-D batch: a 64 x 32 block of ints from a to b (row length 512), and
  // the same block into a 2-D array.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<int>();
  cudaArray_t array = nullptr;
  CORPUS_CHECK(cudaMallocArray(&array, &desc, 64, 32));
  // Extents and row lengths count elements: bytes between two pointers,
  // the array's 4-byte ints when an array takes part.
  cudaMemcpy3DBatchOp ops[2] = {};
  for (int k = 0; k < 2; ++k) {
    const size_t elem = k == 0 ? sizeof(int) : 1;
    ops[k].src.type = cudaMemcpyOperandTypePointer;
    ops[k].src.op.ptr.ptr = a;
    ops[k].src.op.ptr.rowLength = 512 * elem;
    ops[k].src.op.ptr.layerHeight = 32;
    ops[k].extent = make_cudaExtent(64 * elem, 32, 1);
    ops[k].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  }
  ops[0].dst.type = cudaMemcpyOperandTypePointer;
  ops[0].dst.op.ptr.ptr = b;
  ops[0].dst.op.ptr.rowLength = 512 * sizeof(int);
  ops[0].dst.op.ptr.layerHeight = 32;
  ops[1].dst.type = cudaMemcpyOperandTypeArray;
  ops[1].dst.op.array.array = array;
  CORPUS_CHECK(cudaMemsetAsync(b, 0, kBytes, stream));
  cudaError_t batch3d_rc =
      corpus::Rc("cudaMemcpy3DBatchAsync 2 ops",
                 cudaMemcpy3DBatchAsync(2, ops, 0, stream));
  cudaGetLastError();
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaMemcpy(host.data(), b, kBytes, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 512; ++x) {
      int want = x < 64 ? 100 + y * 512 + x : 0;
      if (host[y * 512 + x] != want) ++wrong;
    }
  std::vector<int> block(64 * 32);
  CORPUS_CHECK(cudaMemcpy2DFromArray(block.data(), 64 * sizeof(int), array, 0,
                                     0, 64 * sizeof(int), 32,
                                     cudaMemcpyDeviceToHost));
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 64; ++x)
      if (block[y * 64 + x] != 100 + y * 512 + x) ++wrong;
  if (batch3d_rc == cudaSuccess) {
    std::printf("3-D batch: %d wrong\n", wrong);
    corpus::Expect(wrong == 0, "3-D batch");
  }

  // Prefetch batches of managed ranges.
  int* managed2 = nullptr;
  CORPUS_CHECK(cudaMallocManaged(&managed2, kBytes));
  for (int i = 0; i < kN; ++i) managed2[i] = 400 + i;
  void* ranges[] = {managed, managed2};
  size_t range_sizes[] = {kBytes, kBytes};
  cudaMemLocation to_device[] = {Device0()};
  size_t loc_idx[] = {0};
  corpus::Rc("cudaMemPrefetchBatchAsync -> device",
             cudaMemPrefetchBatchAsync(ranges, range_sizes, 2, to_device,
                                       loc_idx, 1, 0, stream));
  CUdeviceptr dranges[] = {reinterpret_cast<CUdeviceptr>(managed),
                           reinterpret_cast<CUdeviceptr>(managed2)};
  CUmemLocation to_host[1] = {};
  to_host[0].type = CU_MEM_LOCATION_TYPE_HOST;
  corpus::Rc("cuMemPrefetchBatchAsync -> host",
             cuMemPrefetchBatchAsync(dranges, range_sizes, 2, to_host, loc_idx,
                                     1, 0, reinterpret_cast<CUstream>(stream)));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = CountWrong(managed, kN, 300) + CountWrong(managed2, kN, 400);
  std::printf("after prefetch batches: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "prefetch batches");

  // Discards: the contents are gone until written again.
  corpus::Rc("cudaMemDiscardBatchAsync",
             cudaMemDiscardBatchAsync(ranges, range_sizes, 2, 0, stream));
  cudaGetLastError();
  Fill<<<kN / 256, 256, 0, stream>>>(managed, kN, 500);
  Fill<<<kN / 256, 256, 0, stream>>>(managed2, kN, 600);
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong = CountWrong(managed, kN, 500) + CountWrong(managed2, kN, 600);
  corpus::Rc("cuMemDiscardBatchAsync",
             cuMemDiscardBatchAsync(dranges, range_sizes, 2, 0,
                                    reinterpret_cast<CUstream>(stream)));
  Fill<<<kN / 256, 256, 0, stream>>>(managed, kN, 700);
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong += CountWrong(managed, kN, 700);
  corpus::Rc("cudaMemDiscardAndPrefetchBatchAsync -> device",
             cudaMemDiscardAndPrefetchBatchAsync(
                 ranges, range_sizes, 2, to_device, loc_idx, 1, 0, stream));
  cudaGetLastError();
  Fill<<<kN / 256, 256, 0, stream>>>(managed, kN, 800);
  Fill<<<kN / 256, 256, 0, stream>>>(managed2, kN, 900);
  CORPUS_CHECK(cudaGetLastError());
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  wrong += CountWrong(managed, kN, 800) + CountWrong(managed2, kN, 900);
  std::printf("rewritten after discards: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "after discards");

  CORPUS_CHECK(cudaFreeArray(array));
  CORPUS_CHECK(cudaFree(managed2));
  CORPUS_CHECK(cudaFree(managed));
  CORPUS_CHECK(cudaFreeHost(pinned));
  CORPUS_CHECK(cudaFree(c));
  CORPUS_CHECK(cudaFree(b));
  CORPUS_CHECK(cudaFree(a));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
