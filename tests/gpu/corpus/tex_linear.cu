// 1-D textures over linear memory (tex1Dfetch), the way a sparse-matrix or
// particle code reads its read-only arrays through the texture path: over a
// whole cudaMalloc buffer, over a slice starting at an offset that respects
// cudaDevAttrTextureAlignment, over stream-ordered memory, with an int4 element
// type, and a slice at a misaligned offset (refused).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Gather(cudaTextureObject_t tex, const int* index, float* out,
                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, index[i]);
}

__global__ void SumInt4(cudaTextureObject_t tex, int n, long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int4 v = tex1Dfetch<int4>(tex, i);
    atomicAdd(reinterpret_cast<unsigned long long*>(out),
              static_cast<unsigned long long>(v.x + v.y + v.z + v.w));
  }
}

cudaTextureObject_t Linear(void* ptr, size_t bytes, cudaChannelFormatDesc desc,
                           const char* what) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = ptr;
  res.res.linear.desc = desc;
  res.res.linear.sizeInBytes = bytes;
  cudaTextureDesc tex{};
  tex.readMode = cudaReadModeElementType;
  cudaTextureObject_t obj = 0;
  corpus::Rc(what, cudaCreateTextureObject(&obj, &res, &tex, nullptr));
  return obj;
}

// Wrong values gathered through `tex`; -1 when the texture was not created
// (no kernel runs on a null texture object).
int CheckGather(cudaTextureObject_t tex, const int* d_index, float* d_out,
                int n, const std::vector<float>& source, int base,
                const std::vector<int>& index) {
  if (tex == 0) return -1;
  Gather<<<(n + 255) / 256, 256>>>(tex, d_index, d_out, n);
  CORPUS_CHECK(cudaGetLastError());
  std::vector<float> out(n);
  CORPUS_CHECK(
      cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    if (out[i] != source[base + index[i]]) ++wrong;
  return wrong;
}

}  // namespace

int main() {
  corpus::ProgramName() = "tex_linear";
  CORPUS_CHECK(cudaSetDevice(0));
  int align = 0;
  CORPUS_CHECK(cudaDeviceGetAttribute(&align, cudaDevAttrTextureAlignment, 0));
  std::printf("texture alignment %d\n", align);

  constexpr int kN = 1 << 20;
  constexpr int kGathers = 1 << 16;
  std::vector<float> source(kN);
  for (int i = 0; i < kN; ++i) source[i] = static_cast<float>(i % 4093) * 0.25f;
  std::vector<int> index(kGathers);
  for (int i = 0; i < kGathers; ++i) index[i] = (i * 7919) % (kN / 2);

  float* values = nullptr;
  CORPUS_CHECK(cudaMalloc(&values, kN * sizeof(float)));
  CORPUS_CHECK(cudaMemcpy(values, source.data(), kN * sizeof(float),
                          cudaMemcpyHostToDevice));
  int* d_index = nullptr;
  float* d_out = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_index, kGathers * sizeof(int)));
  CORPUS_CHECK(cudaMalloc(&d_out, kGathers * sizeof(float)));
  CORPUS_CHECK(cudaMemcpy(d_index, index.data(), kGathers * sizeof(int),
                          cudaMemcpyHostToDevice));
  std::printf("buffer aligned to the texture alignment: %s\n",
              reinterpret_cast<uintptr_t>(values) % align == 0 ? "yes" : "no");

  cudaTextureObject_t whole =
      Linear(values, kN * sizeof(float), cudaCreateChannelDesc<float>(),
             "texture over the buffer");
  int wrong = CheckGather(whole, d_index, d_out, kGathers, source, 0, index);
  std::printf("gather through the whole buffer: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "whole-buffer gather");

  // The upper half: an offset that is a multiple of the alignment.
  int half = kN / 2;
  cudaTextureObject_t upper =
      Linear(values + half, half * sizeof(float),
             cudaCreateChannelDesc<float>(), "texture over the upper half");
  wrong = CheckGather(upper, d_index, d_out, kGathers, source, half, index);
  std::printf("gather through the upper half: %d wrong\n", wrong);
  corpus::Expect(wrong == 0, "upper-half gather");

  cudaTextureObject_t misaligned =
      Linear(values + 1, 4096, cudaCreateChannelDesc<float>(),
             "texture at buffer + 4 bytes");
  corpus::Rc("  cudaGetLastError", cudaGetLastError());
  if (misaligned != 0) CORPUS_CHECK(cudaDestroyTextureObject(misaligned));

  // Stream-ordered memory behind a texture, where its alignment allows.
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreate(&stream));
  float* async_values = nullptr;
  CORPUS_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&async_values),
                               kN * sizeof(float), stream));
  CORPUS_CHECK(cudaMemcpyAsync(async_values, source.data(), kN * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  const bool async_aligned =
      reinterpret_cast<uintptr_t>(async_values) % align == 0;
  std::printf("stream-ordered buffer aligned to the texture alignment: %s\n",
              async_aligned ? "yes" : "no");
  cudaTextureObject_t async_tex = 0;
  if (async_aligned) {
    async_tex =
        Linear(async_values, kN * sizeof(float), cudaCreateChannelDesc<float>(),
               "texture over cudaMallocAsync memory");
    wrong = CheckGather(async_tex, d_index, d_out, kGathers, source, 0, index);
    std::printf("gather through stream-ordered memory: %d wrong\n", wrong);
    corpus::Expect(wrong == 0, "stream-ordered gather");
  }

  // int4 elements.
  constexpr int kVec = 100000;
  std::vector<int4> vec(kVec);
  long long want = 0;
  for (int i = 0; i < kVec; ++i) {
    vec[i] = make_int4(i, 2 * i, -i, i % 7);
    want += i + 2 * i - i + i % 7;
  }
  int4* d_vec = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_vec, kVec * sizeof(int4)));
  CORPUS_CHECK(cudaMemcpy(d_vec, vec.data(), kVec * sizeof(int4),
                          cudaMemcpyHostToDevice));
  cudaTextureObject_t vec_tex =
      Linear(d_vec, kVec * sizeof(int4), cudaCreateChannelDesc<int4>(),
             "int4 texture");
  long long* d_sum = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_sum, sizeof *d_sum));
  CORPUS_CHECK(cudaMemset(d_sum, 0, sizeof *d_sum));
  SumInt4<<<(kVec + 255) / 256, 256>>>(vec_tex, kVec, d_sum);
  CORPUS_CHECK(cudaGetLastError());
  long long got = 0;
  CORPUS_CHECK(cudaMemcpy(&got, d_sum, sizeof got, cudaMemcpyDeviceToHost));
  std::printf("int4 sum %lld (expected %lld)\n", got, want);
  corpus::Expect(got == want, "int4 sum");

  for (cudaTextureObject_t tex : {vec_tex, async_tex, upper, whole})
    if (tex != 0) CORPUS_CHECK(cudaDestroyTextureObject(tex));
  CORPUS_CHECK(cudaFree(d_sum));
  CORPUS_CHECK(cudaFree(d_vec));
  CORPUS_CHECK(cudaFreeAsync(async_values, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  CORPUS_CHECK(cudaFree(d_out));
  CORPUS_CHECK(cudaFree(d_index));
  CORPUS_CHECK(cudaFree(values));
  return corpus::Finish();
}
