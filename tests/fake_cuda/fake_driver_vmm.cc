// Fake driver: virtual memory management (cuMemCreate, cuMemAddressReserve,
// cuMemMap, ...).
//
// Physical memory (a cuMemCreate handle) is a memfd of the requested size; a
// reservation is a PROT_NONE anonymous mapping aligned to 2 MiB; cuMemMap maps
// the memfd over part of a reservation (MAP_SHARED | MAP_FIXED), so two
// mappings of one handle see the same bytes, and cuMemUnmap puts PROT_NONE
// back. As in the real driver, physical memory is gone only once the handle is
// released AND its last mapping is unmapped.
//
// Lock order: fake_driver_memory.cc's table lock may be held while this file's
// lock is taken (CheckVmmRange), never the reverse, so ChargeDevice and
// UnchargeDevice are called here without vmm_mu held.
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <vector>

#include "tests/fake_cuda/fake_driver.h"

namespace fake_cuda {
namespace {

struct Physical {
  size_t bytes = 0;
  int device = 0;
  int fd = -1;
  int map_count = 0;
  bool released = false;
};

struct Reservation {
  size_t bytes = 0;
  void* mmap_base = nullptr;  // what munmap needs (before alignment)
  size_t mmap_bytes = 0;
};

struct Mapping {
  size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct Vmm {
  std::mutex mu;
  CUmemGenericAllocationHandle next_handle = 1;
  std::map<CUmemGenericAllocationHandle, Physical> physical;
  std::map<uintptr_t, Reservation> reservations;
  std::map<uintptr_t, Mapping> mappings;
};

Vmm& V() {
  static Vmm* const vmm = new Vmm();  // leaked: used from exit paths
  return *vmm;
}

template <typename Map>
typename Map::iterator Containing(Map& map, uintptr_t address) {
  auto it = map.upper_bound(address);
  if (it == map.begin()) return map.end();
  --it;
  return address - it->first < it->second.bytes ? it : map.end();
}

// Removes a handle that is released and unmapped; returns what to uncharge.
// Requires V().mu.
void DestroyIfDoneLocked(
    std::map<CUmemGenericAllocationHandle, Physical>::iterator it,
    std::vector<Physical>* done) {
  if (!it->second.released || it->second.map_count > 0) return;
  close(it->second.fd);
  done->push_back(it->second);
  V().physical.erase(it);
}

void Uncharge(const std::vector<Physical>& done) {
  for (const Physical& p : done) UnchargeDevice(p.device, p.bytes);
}

bool Granular(size_t bytes) {
  return bytes != 0 && bytes % kVmmGranularity == 0;
}

}  // namespace

VmmRange CheckVmmRange(uintptr_t address, size_t bytes, uintptr_t* base,
                       size_t* size) {
  Vmm& v = V();
  std::lock_guard<std::mutex> lock(v.mu);
  if (Containing(v.reservations, address) == v.reservations.end()) {
    return VmmRange::kNotVmm;
  }
  auto it = Containing(v.mappings, address);
  if (it == v.mappings.end() ||
      address + bytes > it->first + it->second.bytes) {
    return VmmRange::kUnmapped;
  }
  *base = it->first;
  *size = it->second.bytes;
  return VmmRange::kMapped;
}

}  // namespace fake_cuda

using fake_cuda::Granular;
using fake_cuda::Initialized;
using fake_cuda::kVmmGranularity;
using fake_cuda::V;

FAKE_CU_API(cuMemGetAllocationGranularity,
            (size_t * granularity, const CUmemAllocationProp* prop,
             CUmemAllocationGranularity_flags /*option*/)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (granularity == nullptr || prop == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemCreate,
            (CUmemGenericAllocationHandle * handle, size_t size,
             const CUmemAllocationProp* prop, unsigned long long flags)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr || prop == nullptr || flags != 0 || !Granular(size) ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int device = prop->location.id;
  if (device < 0 || device >= fake_cuda::kDeviceCount) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  if (fake_cuda::InjectAllocationFailure()) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!fake_cuda::ChargeDevice(device, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd = memfd_create("fake_cuda_vmm", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    fake_cuda::UnchargeDevice(device, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard<std::mutex> lock(V().mu);
  CUmemGenericAllocationHandle h = V().next_handle++;
  V().physical[h] = fake_cuda::Physical{size, device, fd, 0, false};
  *handle = h;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemRelease, (CUmemGenericAllocationHandle handle)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<fake_cuda::Physical> done;
  {
    std::lock_guard<std::mutex> lock(V().mu);
    auto it = V().physical.find(handle);
    if (it == V().physical.end() || it->second.released) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    it->second.released = true;
    fake_cuda::DestroyIfDoneLocked(it, &done);
  }
  fake_cuda::Uncharge(done);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemAddressReserve,
            (CUdeviceptr * ptr, size_t size, size_t alignment,
             CUdeviceptr /*addr*/, unsigned long long flags)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ptr == nullptr || flags != 0 || !Granular(size) ||
      (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (alignment < kVmmGranularity) alignment = kVmmGranularity;
  size_t mmap_bytes = size + alignment;
  void* base = mmap(nullptr, mmap_bytes, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t va =
      fake_cuda::RoundUp(reinterpret_cast<uintptr_t>(base), alignment);
  std::lock_guard<std::mutex> lock(V().mu);
  V().reservations[va] = fake_cuda::Reservation{size, base, mmap_bytes};
  *ptr = static_cast<CUdeviceptr>(va);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemAddressFree, (CUdeviceptr ptr, size_t size)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  fake_cuda::Reservation r;
  {
    std::lock_guard<std::mutex> lock(V().mu);
    auto it = V().reservations.find(static_cast<uintptr_t>(ptr));
    if (it == V().reservations.end() || it->second.bytes != size) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    auto m = V().mappings.lower_bound(it->first);
    if (m != V().mappings.end() && m->first < it->first + size) {
      return CUDA_ERROR_INVALID_VALUE;  // still mapped: unmap first
    }
    r = it->second;
    V().reservations.erase(it);
  }
  munmap(r.mmap_base, r.mmap_bytes);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuMemMap,
            (CUdeviceptr ptr, size_t size, size_t offset,
             CUmemGenericAllocationHandle handle, unsigned long long flags)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto va = static_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(V().mu);
  auto phys = V().physical.find(handle);
  if (flags != 0 || offset != 0 || !Granular(size) ||
      phys == V().physical.end() || phys->second.released ||
      size > phys->second.bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto res = fake_cuda::Containing(V().reservations, va);
  if (res == V().reservations.end() ||
      va + size > res->first + res->second.bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto next = V().mappings.lower_bound(va);
  if ((next != V().mappings.end() && next->first < va + size) ||
      fake_cuda::Containing(V().mappings, va) != V().mappings.end()) {
    return CUDA_ERROR_INVALID_VALUE;  // overlaps a mapping
  }
  if (mmap(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED, phys->second.fd, 0) == MAP_FAILED) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  V().mappings[va] = fake_cuda::Mapping{size, handle};
  ++phys->second.map_count;
  return CUDA_SUCCESS;
}

// Unmaps every mapping in [ptr, ptr + size); the range must cover whole
// mappings and at least one.
FAKE_CU_API(cuMemUnmap, (CUdeviceptr ptr, size_t size)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto va = static_cast<uintptr_t>(ptr);
  std::vector<fake_cuda::Physical> done;
  {
    std::lock_guard<std::mutex> lock(V().mu);
    if (size == 0 ||
        fake_cuda::Containing(V().reservations, va) == V().reservations.end()) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    auto first = V().mappings.lower_bound(va);
    auto last = V().mappings.lower_bound(va + size);
    auto holder = fake_cuda::Containing(V().mappings, va);
    if (first == last ||
        (holder != V().mappings.end() && holder->first != va)) {
      return CUDA_ERROR_INVALID_VALUE;  // nothing mapped, or splits a mapping
    }
    for (auto it = first; it != last; ++it) {
      if (it->first + it->second.bytes > va + size) {
        return CUDA_ERROR_INVALID_VALUE;  // would split a mapping
      }
    }
    for (auto it = first; it != last;) {
      mmap(reinterpret_cast<void*>(it->first), it->second.bytes, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      auto phys = V().physical.find(it->second.handle);
      --phys->second.map_count;
      fake_cuda::DestroyIfDoneLocked(phys, &done);
      it = V().mappings.erase(it);
    }
  }
  fake_cuda::Uncharge(done);
  return CUDA_SUCCESS;
}

// The fake maps read-write at once; this only checks that the range lies in
// one mapping.
FAKE_CU_API(cuMemSetAccess, (CUdeviceptr ptr, size_t size,
                             const CUmemAccessDesc* desc, size_t count)) {
  if (!Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t base = 0;
  size_t bytes = 0;
  return fake_cuda::CheckVmmRange(static_cast<uintptr_t>(ptr), size, &base,
                                  &bytes) == fake_cuda::VmmRange::kMapped
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}
