// A growable device vector on the VMM API (the pattern of NVIDIA's "Introducing
// Low-Level GPU Virtual Memory Management" post): reserve address space,
// map physical chunks at its end as the vector grows, and when the
// reservation is full first try to extend it in place (a reservation at the
// address right after it) and otherwise reserve a larger range and remap
// every chunk there. The contents must survive each growth.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

namespace {

__global__ void Stamp(unsigned* p, size_t from, size_t to) {
  size_t i = from + blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < to) p[i] = static_cast<unsigned>(i * 2246822519u);
}

__global__ void CountWrong(const unsigned* p, size_t n,
                           unsigned long long* wrong) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    if (p[i] != static_cast<unsigned>(i * 2246822519u)) atomicAdd(wrong, 1ull);
}

class GrowableBuffer {
 public:
  explicit GrowableBuffer(int device) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    access_.location = prop_.location;
    access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CORPUS_CHECK(cuMemGetAllocationGranularity(
        &gran_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }

  ~GrowableBuffer() {
    CUdeviceptr at = base_;
    for (const Chunk& c : chunks_) {
      CORPUS_CHECK(cuMemUnmap(at, c.size));
      at += c.size;
    }
    for (Chunk& c : chunks_) CORPUS_CHECK(cuMemRelease(c.handle));
    for (Range& r : ranges_) CORPUS_CHECK(cuMemAddressFree(r.base, r.size));
  }

  size_t granularity() const { return gran_; }
  size_t capacity() const { return mapped_; }
  int remaps() const { return remaps_; }
  int in_place() const { return in_place_; }
  CUdeviceptr data() const { return base_; }

  // Grows the mapped size to at least `bytes`.
  CUresult Reserve(size_t bytes) {
    if (bytes <= mapped_) return CUDA_SUCCESS;
    size_t grow = ((bytes - mapped_ + gran_ - 1) / gran_) * gran_;
    size_t reserved = 0;
    for (const Range& r : ranges_) reserved += r.size;
    if (mapped_ + grow > reserved) {
      CUresult rc = GrowReservation(mapped_ + grow - reserved);
      if (rc != CUDA_SUCCESS) return rc;
    }
    CUmemGenericAllocationHandle h;
    CUresult rc = cuMemCreate(&h, grow, &prop_, 0);
    if (rc != CUDA_SUCCESS) return rc;
    rc = cuMemMap(base_ + mapped_, grow, 0, h, 0);
    if (rc == CUDA_SUCCESS)
      rc = cuMemSetAccess(base_ + mapped_, grow, &access_, 1);
    if (rc != CUDA_SUCCESS) {
      cuMemRelease(h);
      return rc;
    }
    chunks_.push_back({h, grow});
    mapped_ += grow;
    return CUDA_SUCCESS;
  }

 private:
  struct Chunk {
    CUmemGenericAllocationHandle handle;
    size_t size;
  };
  struct Range {
    CUdeviceptr base;
    size_t size;
  };

  CUresult GrowReservation(size_t more) {
    // Reserve generously: twice what is needed.
    size_t want = 2 * more;
    if (!ranges_.empty()) {
      CUdeviceptr end = ranges_.back().base + ranges_.back().size;
      CUdeviceptr got = 0;
      CUresult rc = cuMemAddressReserve(&got, want, 0, end, 0);
      if (rc == CUDA_SUCCESS && got == end) {
        ranges_.push_back({got, want});
        ++in_place_;
        return CUDA_SUCCESS;
      }
      if (rc == CUDA_SUCCESS) CORPUS_CHECK(cuMemAddressFree(got, want));
    }
    // A new, larger range: remap every chunk there, free the old ranges.
    size_t total = want;
    for (const Range& r : ranges_) total += r.size;
    CUdeviceptr fresh = 0;
    CUresult rc = cuMemAddressReserve(&fresh, total, 0, 0, 0);
    if (rc != CUDA_SUCCESS) return rc;
    CUdeviceptr at = fresh;
    for (const Chunk& c : chunks_) {
      rc = cuMemMap(at, c.size, 0, c.handle, 0);
      if (rc != CUDA_SUCCESS) return rc;
      at += c.size;
    }
    if (mapped_ > 0) {
      rc = cuMemSetAccess(fresh, mapped_, &access_, 1);
      if (rc != CUDA_SUCCESS) return rc;
      // Unmap chunk by chunk: each was mapped on its own.
      CUdeviceptr old = base_;
      for (const Chunk& c : chunks_) {
        rc = cuMemUnmap(old, c.size);
        if (rc != CUDA_SUCCESS) return rc;
        old += c.size;
      }
    }
    for (const Range& r : ranges_)
      CORPUS_CHECK(cuMemAddressFree(r.base, r.size));
    ranges_.assign(1, Range{fresh, total});
    base_ = fresh;
    ++remaps_;
    return CUDA_SUCCESS;
  }

  CUmemAllocationProp prop_{};
  CUmemAccessDesc access_{};
  size_t gran_ = 0;
  CUdeviceptr base_ = 0;
  size_t mapped_ = 0;
  std::vector<Chunk> chunks_;
  std::vector<Range> ranges_;
  int remaps_ = 0;
  int in_place_ = 0;
};

}  // namespace

int main() {
  corpus::ProgramName() = "vmm_growable";
  CORPUS_CHECK(cudaSetDevice(0));
  CORPUS_CHECK(cudaFree(nullptr));
  CORPUS_CHECK(cuInit(0));
  unsigned long long* wrong = nullptr;
  CORPUS_CHECK(cudaMalloc(&wrong, sizeof *wrong));
  {
    GrowableBuffer buf(0);
    size_t gran = buf.granularity();
    size_t words = 0;
    const size_t steps[] = {1, 3, 4, 9, 10, 25, 26, 60};
    for (size_t step : steps) {
      size_t bytes = step * gran - 100;  // never exactly on a chunk edge
      CUresult rc = buf.Reserve(bytes);
      if (rc != CUDA_SUCCESS) {
        corpus::Rc("grow failed", rc);
        corpus::Expect(false, "growing to %zu granules failed", step);
        break;
      }
      size_t new_words = bytes / sizeof(unsigned);
      unsigned* p = reinterpret_cast<unsigned*>(buf.data());
      Stamp<<<static_cast<unsigned>((new_words - words + 255) / 256), 256>>>(
          p, words, new_words);
      words = new_words;
      CORPUS_CHECK(cudaMemset(wrong, 0, sizeof *wrong));
      CountWrong<<<264, 256>>>(p, words, wrong);
      CORPUS_CHECK(cudaGetLastError());
      unsigned long long host_wrong = 1;
      CORPUS_CHECK(cudaMemcpy(&host_wrong, wrong, sizeof host_wrong,
                              cudaMemcpyDeviceToHost));
      std::printf("grown to %zu granules (capacity %zu granules): %s\n", step,
                  buf.capacity() / gran,
                  host_wrong == 0 ? "contents intact" : "CONTENTS LOST");
      corpus::Expect(host_wrong == 0, "%llu words lost after growing",
                     host_wrong);
    }
    // How often the reservation moved depends on the address space the
    // driver hands out; informational only.
    std::printf(
        "~ reservation extended in place %d time(s), moved %d time(s)\n",
        buf.in_place(), buf.remaps());
    // A copy of the whole vector back to the host.
    std::vector<unsigned> host(words);
    CORPUS_CHECK(cudaMemcpy(host.data(), reinterpret_cast<void*>(buf.data()),
                            words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < words; ++i)
      if (host[i] != static_cast<unsigned>(i * 2246822519u)) ++bad;
    std::printf("host copy of %zu words: %zu wrong\n", words, bad);
    corpus::Expect(bad == 0, "host copy wrong");
  }
  CORPUS_CHECK(cudaFree(wrong));
  return corpus::Finish();
}
