// Launch paths beyond <<<>>>, as performance code uses them on Hopper: a
// cooperative launch sized by the occupancy API whose kernel synchronizes the
// whole grid (a two-phase reduction), cudaLaunchKernelEx with a thread-block
// cluster attribute and cluster-wide distributed shared memory, and
// cudaLaunchKernel with an argument array.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace cg = cooperative_groups;

namespace {

__global__ void GridSum(const int* in, int n, long long* partial,
                        long long* total) {
  cg::grid_group grid = cg::this_grid();
  __shared__ long long block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  long long local = 0;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) local += in[i];
  atomicAdd(reinterpret_cast<unsigned long long*>(&block_sum),
            static_cast<unsigned long long>(local));
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;
  grid.sync();
  if (grid.thread_rank() == 0) {
    long long s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += partial[b];
    *total = s;
  }
}

// Each block of a 4-block cluster publishes its rank in shared memory; block
// 0 of the cluster reads all four through distributed shared memory.
__global__ void ClusterRanks(int* out) {
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ int rank;
  if (threadIdx.x == 0) rank = static_cast<int>(cluster.block_rank()) + 1;
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x == 0) {
    int sum = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r)
      sum += *cluster.map_shared_rank(&rank, r);
    out[blockIdx.x / cluster.num_blocks()] = sum;
  }
  cluster.sync();
}

__global__ void Saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

int main() {
  corpus::ProgramName() = "cooperative_launch";
  CORPUS_CHECK(cudaSetDevice(0));
  int coop = 0, sms = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
  CORPUS_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("cooperative launch: %d\n", coop);

  constexpr int kN = 3 << 20;
  std::vector<int> host(kN);
  long long want = 0;
  for (int i = 0; i < kN; ++i) {
    host[i] = i % 1001 - 500;
    want += host[i];
  }
  int* in = nullptr;
  CORPUS_CHECK(cudaMalloc(&in, kN * sizeof(int)));
  CORPUS_CHECK(
      cudaMemcpy(in, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  int per_sm = 0;
  CORPUS_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, GridSum, 256, 0));
  int blocks = per_sm * sms;
  long long *partial, *total;
  CORPUS_CHECK(cudaMalloc(&partial, blocks * sizeof(long long)));
  CORPUS_CHECK(cudaMalloc(&total, sizeof(long long)));
  int n = kN;
  void* args[] = {&in, &n, &partial, &total};
  corpus::Rc(
      "cudaLaunchCooperativeKernel (full occupancy)",
      cudaLaunchCooperativeKernel(reinterpret_cast<void*>(GridSum),
                                  dim3(blocks), dim3(256), args, 0, nullptr));
  long long got = 0;
  CORPUS_CHECK(cudaMemcpy(&got, total, sizeof got, cudaMemcpyDeviceToHost));
  std::printf("grid-synchronized sum: %lld (%s)\n", got,
              got == want ? "right" : "WRONG");
  corpus::Expect(got == want, "grid sum");
  corpus::Rc("cudaLaunchCooperativeKernel (too many blocks)",
             cudaLaunchCooperativeKernel(reinterpret_cast<void*>(GridSum),
                                         dim3(blocks * 4), dim3(256), args, 0,
                                         nullptr));
  corpus::Rc("  cudaGetLastError", cudaGetLastError());

  // Clusters of 4 blocks.
  constexpr int kClusters = 64;
  int* ranks = nullptr;
  CORPUS_CHECK(cudaMalloc(&ranks, kClusters * sizeof(int)));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(4 * kClusters);
  config.blockDim = dim3(128);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 4;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  int max_clusters = 0;
  corpus::Rc(
      "cudaOccupancyMaxActiveClusters",
      cudaOccupancyMaxActiveClusters(&max_clusters, ClusterRanks, &config));
  std::printf("clusters of 4 can be active: %s\n",
              max_clusters > 0 ? "yes" : "no");
  corpus::Rc("cudaLaunchKernelEx (cluster 4)",
             cudaLaunchKernelEx(&config, ClusterRanks, ranks));
  std::vector<int> host_ranks(kClusters);
  CORPUS_CHECK(cudaMemcpy(host_ranks.data(), ranks, kClusters * sizeof(int),
                          cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int v : host_ranks)
    if (v != 1 + 2 + 3 + 4) ++wrong;
  std::printf("cluster sums: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "clusters");

  // cudaLaunchKernel with an argument array.
  constexpr int kM = 10000;
  float *x, *y;
  CORPUS_CHECK(cudaMalloc(&x, kM * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&y, kM * sizeof(float)));
  std::vector<float> fx(kM, 2.0f), fy(kM, 1.0f);
  CORPUS_CHECK(
      cudaMemcpy(x, fx.data(), kM * sizeof(float), cudaMemcpyHostToDevice));
  CORPUS_CHECK(
      cudaMemcpy(y, fy.data(), kM * sizeof(float), cudaMemcpyHostToDevice));
  float a = 4.0f;
  int m = kM;
  void* saxpy_args[] = {&a, &x, &y, &m};
  corpus::Rc(
      "cudaLaunchKernel saxpy",
      cudaLaunchKernel(reinterpret_cast<void*>(Saxpy), dim3((kM + 255) / 256),
                       dim3(256), saxpy_args, 0, nullptr));
  CORPUS_CHECK(
      cudaMemcpy(fy.data(), y, kM * sizeof(float), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (float v : fy)
    if (v != 9.0f) ++wrong;
  std::printf("saxpy through cudaLaunchKernel: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "saxpy");

  for (void* p : {static_cast<void*>(in), static_cast<void*>(partial),
                  static_cast<void*>(total), static_cast<void*>(ranks),
                  static_cast<void*>(x), static_cast<void*>(y)})
    CORPUS_CHECK(cudaFree(p));
  return corpus::Finish();
}
