// Fake driver: libraries and kernel launches, for the guard-zone kernels only.
//
// cuLibraryLoadData accepts a fatbin (checked by its magic number) and hands
// out a library whose cuLibraryGetKernel knows the kernels of
// kernels/zone_abi.h (others: CUDA_ERROR_NOT_FOUND). cuLaunchKernel runs them
// on the host, at once, reading kernelParams in the order zone_abi.h gives;
// other function handles launch nothing, as fake_driver_launch_sync.cc
// describes. The emulation is stricter than the GPU: a zone,
// table or result range outside known memory is CUDA_ERROR_ILLEGAL_ADDRESS,
// and a table whose chunk_begin values are not the prefix sum zone_abi.h
// defines (or a total_chunks that does not match) is CUDA_ERROR_LAUNCH_FAILED,
// so host code that builds a wrong table fails its tests.
#include <cupti_driver_cbid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/zone_abi.h"
#include "tests/fake_cuda/fake_cupti_emit.h"
#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_sticky_error.h"
#include "tests/fake_cuda/fake_tool_faults.h"

namespace fake_cuda {
namespace {

// The first word of a fatbin (fatbinary.h's FATBIN_MAGIC).
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

// CUkernel (and, cast, CUfunction) values of the kernels: pointers to
// their NUL-terminated names, the double's convention for function handles
// (fake_driver_launch_sync.cc), so cuKernelGetName answers for them too.
constexpr char kFillName[] = GMT_FILL_KERNEL_NAME;
constexpr char kCheckName[] = GMT_CHECK_KERNEL_NAME;
constexpr char kInlineCheckName[] = GMT_INLINE_CHECK_KERNEL_NAME;
constexpr char kSmallCheckName[] = GMT_INLINE_SMALL_CHECK_KERNEL_NAME;
constexpr char kInlineFillName[] = GMT_INLINE_FILL_KERNEL_NAME;
constexpr char kCheckFillName[] = GMT_INLINE_CHECK_FILL_KERNEL_NAME;

struct Library {
  int unused = 0;
};

std::mutex g_mu;
std::set<const Library*>* g_libraries = new std::set<const Library*>();

bool IsLiveLibrary(CUlibrary library) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_libraries->count(reinterpret_cast<const Library*>(library)) != 0;
}

template <typename T>
T Param(void** params, int i) {
  T value;
  std::memcpy(&value, params[i], sizeof(T));
  return value;
}

// The table, if it lies in device memory and its chunk_begin values are the
// prefix sum ending at total_chunks.
CUresult ReadTable(CUdeviceptr address, uint64_t count, uint64_t total_chunks,
                   const GmtZone** zones) {
  if (count == 0) {
    *zones = nullptr;
    return total_chunks == 0 ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
  }
  if (CheckMemoryRange(address, count * sizeof(GmtZone), true) !=
      CUDA_SUCCESS) {
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  *zones = reinterpret_cast<const GmtZone*>(address);
  uint64_t chunks = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const GmtZone& z = (*zones)[i];
    if (z.chunk_begin != chunks) return CUDA_ERROR_LAUNCH_FAILED;
    chunks += (z.bytes + GMT_ZONE_CHUNK_BYTES - 1) / GMT_ZONE_CHUNK_BYTES;
    if (z.bytes != 0 &&
        CheckMemoryRange(z.address, z.bytes, true) != CUDA_SUCCESS) {
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  return chunks == total_chunks ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

// gmt_fill_zones(const GmtZone* zones, uint64_t zone_count,
//                uint64_t total_chunks)
CUresult RunFill(void** params) {
  const GmtZone* zones = nullptr;
  const uint64_t count = Param<uint64_t>(params, 1);
  CUresult r = ReadTable(Param<CUdeviceptr>(params, 0), count,
                         Param<uint64_t>(params, 2), &zones);
  if (r != CUDA_SUCCESS) return r;
  for (uint64_t i = 0; i < count; ++i) {
    std::memset(reinterpret_cast<void*>(zones[i].address),
                static_cast<int>(zones[i].pattern & 0xff), zones[i].bytes);
  }
  return CUDA_SUCCESS;
}

// gmt_fill_zones_inline(GmtInlineFill fill): the zones by value, their
// chunk_begin the prefix sum ending at total_chunks (else
// CUDA_ERROR_LAUNCH_FAILED, as for a table).
CUresult ValidateInlineFill(const GmtInlineFill& fill) {
  if (fill.zone_count > GMT_INLINE_MAX_ZONES) return CUDA_ERROR_LAUNCH_FAILED;
  uint64_t chunks = 0;
  for (uint64_t i = 0; i < fill.zone_count; ++i) {
    const GmtZone& z = fill.zones[i];
    if (z.chunk_begin != chunks) return CUDA_ERROR_LAUNCH_FAILED;
    chunks += (z.bytes + GMT_ZONE_CHUNK_BYTES - 1) / GMT_ZONE_CHUNK_BYTES;
    if (z.bytes != 0 &&
        CheckMemoryRange(z.address, z.bytes, true) != CUDA_SUCCESS) {
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  return chunks == fill.total_chunks ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

void RunInlineFill(const GmtInlineFill& fill) {
  for (uint64_t i = 0; i < fill.zone_count; ++i) {
    std::memset(reinterpret_cast<void*>(fill.zones[i].address),
                static_cast<int>(fill.zones[i].pattern & 0xff),
                fill.zones[i].bytes);
  }
}

// gmt_check_zones(const GmtZone* zones, uint64_t zone_count,
//                 uint64_t total_chunks, GmtZoneResult* results,
//                 GmtCheckSummary* summary)
// Adds to what is in results and summary, as the kernel's atomics do.
CUresult RunCheck(void** params) {
  const GmtZone* zones = nullptr;
  const uint64_t count = Param<uint64_t>(params, 1);
  CUresult r = ReadTable(Param<CUdeviceptr>(params, 0), count,
                         Param<uint64_t>(params, 2), &zones);
  if (r != CUDA_SUCCESS) return r;
  const auto results_address = Param<CUdeviceptr>(params, 3);
  const auto summary_address = Param<CUdeviceptr>(params, 4);
  if ((count > 0 &&
       CheckMemoryRange(results_address, count * sizeof(GmtZoneResult), true) !=
           CUDA_SUCCESS) ||
      CheckMemoryRange(summary_address, sizeof(GmtCheckSummary), true) !=
          CUDA_SUCCESS) {
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  auto* results = reinterpret_cast<GmtZoneResult*>(results_address);
  auto* summary = reinterpret_cast<GmtCheckSummary*>(summary_address);
  for (uint64_t i = 0; i < count; ++i) {
    const auto* bytes =
        reinterpret_cast<const unsigned char*>(zones[i].address);
    const auto pattern = static_cast<unsigned char>(zones[i].pattern & 0xff);
    unsigned long long changed = 0, first = 0, last = 0;
    for (uint64_t off = 0; off < zones[i].bytes; ++off) {
      if (bytes[off] == pattern) continue;
      if (changed == 0) first = off;
      last = off;
      ++changed;
    }
    if (changed == 0) continue;
    GmtZoneResult& out = results[i];
    if (out.changed_bytes == 0) ++summary->zones_changed;
    out.changed_bytes += changed;
    if (~first > out.first_inverted) out.first_inverted = ~first;
    if (last + 1 > out.last_plus1) out.last_plus1 = last + 1;
    summary->bytes_changed += changed;
  }
  return CUDA_SUCCESS;
}

// gmt_check_zones_inline(GmtInlineCheck check) in `blocks` blocks: the zones
// by value, the answer in the context's GmtCheckReport (pinned memory mapped
// into the device), one per block. Validated at launch as the GPU would
// fault on it: a zone count over GMT_INLINE_MAX_ZONES or more than
// GMT_INLINE_MAX_BYTES per block in all is CUDA_ERROR_LAUNCH_FAILED, memory
// outside known blocks (the report included) CUDA_ERROR_ILLEGAL_ADDRESS.
struct InlineLaunch {
  GmtInlineCheck check;
  uint64_t blocks;
};

CUresult ValidateInline(const GmtInlineCheck& check, uint64_t blocks) {
  if (check.zone_count > GMT_INLINE_MAX_ZONES || check.check_id == 0) {
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < check.zone_count; ++i) {
    const GmtZone& z = check.zones[i];
    bytes += z.bytes;
    if (z.bytes != 0 &&
        CheckMemoryRange(z.address, z.bytes, true) != CUDA_SUCCESS) {
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  if (bytes > GMT_INLINE_MAX_BYTES * blocks) return CUDA_ERROR_LAUNCH_FAILED;
  return CheckMemoryRange(check.report, sizeof(GmtCheckReport), true) ==
                 CUDA_SUCCESS
             ? CUDA_SUCCESS
             : CUDA_ERROR_ILLEGAL_ADDRESS;
}

// What the kernel does once it runs: each block's findings into its region
// of the ring, then its completion, in the kernel's order. A block's share is
// the kernel's: the zones taken as one run of 16-byte aligned granules, zone
// after zone, interleaved over the grid's threads (block b takes granule g of
// the run when g % (blocks * threads) falls in its threads), so a zone's
// changed bytes may be split among blocks and the host must merge them.
void RunInline(const InlineLaunch& launch) {
  const GmtInlineCheck& check = launch.check;
  auto* report = reinterpret_cast<GmtCheckReport*>(check.report);
  const uint64_t threads = GMT_INLINE_CHECK_THREADS;
  for (uint64_t block = 0; block < launch.blocks; ++block) {
    const uint64_t id = check.check_id + block;
    GmtFinding* region =
        &report->ring[(id % GMT_REPORT_RING_CHECKS) * GMT_INLINE_MAX_ZONES];
    unsigned long long findings = 0;
    uint64_t run = 0;  // the run's granules before zone i
    for (uint64_t i = 0; i < check.zone_count; ++i) {
      const GmtZone& z = check.zones[i];
      const auto* bytes = reinterpret_cast<const unsigned char*>(z.address);
      const auto pattern = static_cast<unsigned char>(z.pattern & 0xff);
      const uint64_t first_granule = z.address / 16;
      unsigned long long changed = 0, first = 0, last = 0;
      for (uint64_t off = 0; off < z.bytes; ++off) {
        if (bytes[off] == pattern) continue;
        const uint64_t g = run + (z.address + off) / 16 - first_granule;
        if (g % (launch.blocks * threads) / threads != block) continue;
        if (changed == 0) first = off;
        last = off;
        ++changed;
      }
      if (z.bytes != 0) run += (z.address + z.bytes + 15) / 16 - first_granule;
      if (changed == 0) continue;
      GmtFinding& f = region[findings++];
      __atomic_store_n(&f.check_id, 0, __ATOMIC_RELEASE);
      f.zone = i;
      f.changed_bytes = changed;
      f.first_last = first | (last << 32);
      __atomic_store_n(&f.check_id, id, __ATOMIC_RELEASE);
    }
    GmtCheckDone& done = report->done[id % GMT_REPORT_DONE_SLOTS];
    __atomic_store_n(&done.word, (id << GMT_DONE_FINDINGS_BITS) | findings,
                     __ATOMIC_RELEASE);
  }
}

std::mutex g_deferred_mu;
bool g_defer_inline = [] {
  const char* value = std::getenv("FAKE_CUDA_DEFER_INLINE_CHECKS");
  return value != nullptr && value[0] == '1';
}();
std::deque<InlineLaunch>* g_deferred = new std::deque<InlineLaunch>();
std::atomic<unsigned long long> g_inline_launches{0};
std::atomic<unsigned long long> g_small_launches{0};
std::atomic<unsigned long long> g_inline_fill_launches{0};

CUresult LaunchInline(void** params, uint64_t blocks, bool small,
                      const void* caller) {
  InlineLaunch launch;
  std::memcpy(&launch.check, params[0], sizeof(launch.check));
  launch.blocks = blocks;
  if (CUresult r = ValidateInline(launch.check, blocks); r != CUDA_SUCCESS) {
    return r;
  }
  // The small check's every block scans everything and answers as block 0
  // (it reads no block index): ids after check_id never answer.
  if (small) {
    launch.blocks = 1;
    g_small_launches.fetch_add(1);
  }
  g_inline_launches.fetch_add(1);
  if (ClaimToolWaitHold(caller)) {
    // FAKE_CUDA_HOLD_TOOL_WAIT: a check the GPU takes long over; the tool
    // waits for its answer in host memory meanwhile.
    std::thread([launch] {
      WaitForToolWaitRelease();
      RunInline(launch);
    }).detach();
    return CUDA_SUCCESS;
  }
  {
    std::lock_guard<std::mutex> lock(g_deferred_mu);
    if (g_defer_inline) {
      g_deferred->push_back(launch);
      return CUDA_SUCCESS;
    }
  }
  RunInline(launch);
  return CUDA_SUCCESS;
}

std::atomic<unsigned long long> g_check_fill_launches{0};

// gmt_check_fill_zones_inline(GmtInlineCheck check, GmtInlineFill fill,
// uint64_t check_blocks) on a grid of `grid` blocks: the fill at once, the
// check as gmt_check_zones_inline's in check_blocks blocks. Refused as the
// GPU would go wrong on it: no block left for the fill, or zones of the
// check that overlap zones of the fill (CUDA_ERROR_LAUNCH_FAILED: the
// kernel would race with itself).
CUresult LaunchCheckFill(void** params, uint64_t grid, const void* caller) {
  GmtInlineCheck check;
  GmtInlineFill fill;
  std::memcpy(&check, params[0], sizeof(check));
  std::memcpy(&fill, params[1], sizeof(fill));
  const auto check_blocks = Param<uint64_t>(params, 2);
  if (check_blocks == 0 || check_blocks >= grid ||
      check_blocks > GMT_INLINE_MAX_BLOCKS) {
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  if (CUresult r = ValidateInline(check, check_blocks); r != CUDA_SUCCESS) {
    return r;
  }
  if (CUresult r = ValidateInlineFill(fill); r != CUDA_SUCCESS) return r;
  for (uint64_t i = 0; i < check.zone_count; ++i) {
    const GmtZone& c = check.zones[i];
    for (uint64_t k = 0; k < fill.zone_count; ++k) {
      const GmtZone& f = fill.zones[k];
      if (c.bytes != 0 && f.bytes != 0 && c.address < f.address + f.bytes &&
          f.address < c.address + c.bytes) {
        return CUDA_ERROR_LAUNCH_FAILED;
      }
    }
  }
  g_check_fill_launches.fetch_add(1);
  RunInlineFill(fill);
  void* check_params[] = {&check};
  return LaunchInline(check_params, check_blocks, /*small=*/false, caller);
}

}  // namespace

void RunDeferredChecks() {
  std::deque<InlineLaunch> queued;
  {
    std::lock_guard<std::mutex> lock(g_deferred_mu);
    queued.swap(*g_deferred);
  }
  // In launch order, as one GPU queue would run them.
  for (const InlineLaunch& launch : queued) RunInline(launch);
}

}  // namespace fake_cuda

void FakeCudaDeferInlineChecks(int defer) {
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_deferred_mu);
    fake_cuda::g_defer_inline = defer != 0;
  }
  if (defer == 0) fake_cuda::RunDeferredChecks();
}

void FakeCudaRunDeferredChecks() { fake_cuda::RunDeferredChecks(); }

unsigned long long FakeCudaInlineCheckLaunches() {
  return fake_cuda::g_inline_launches.load();
}

unsigned long long FakeCudaSmallCheckLaunches() {
  return fake_cuda::g_small_launches.load();
}

unsigned long long FakeCudaInlineFillLaunches() {
  return fake_cuda::g_inline_fill_launches.load();
}

unsigned long long FakeCudaCheckFillLaunches() {
  return fake_cuda::g_check_fill_launches.load();
}

FAKE_CU_API(cuLibraryLoadData,
            (CUlibrary * library, const void* code, CUjit_option* jit_options,
             void** jit_option_values, unsigned int jit_option_count,
             CUlibraryOption* library_options, void** library_option_values,
             unsigned int library_option_count)) {
  (void)jit_options;
  (void)jit_option_values;
  (void)library_options;
  (void)library_option_values;
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (library == nullptr || code == nullptr ||
      (jit_option_count > 0 && jit_options == nullptr) ||
      (library_option_count > 0 && library_options == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint32_t magic = 0;
  std::memcpy(&magic, code, sizeof(magic));
  if (magic != fake_cuda::kFatbinMagic) return CUDA_ERROR_INVALID_IMAGE;
  // Reliability tests: FAKE_CUDA_FAIL_LIBRARY_LOAD (fake_tool_faults.h).
  if (CUresult r = fake_cuda::InjectToolFailure(
          fake_cuda::ToolCall::kLibraryLoad, __builtin_return_address(0));
      r != CUDA_SUCCESS) {
    return r;
  }
  auto* lib = new fake_cuda::Library();
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
    fake_cuda::g_libraries->insert(lib);
  }
  *library = reinterpret_cast<CUlibrary>(lib);
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuLibraryUnload, (CUlibrary library)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* lib = reinterpret_cast<fake_cuda::Library*>(library);
  {
    std::lock_guard<std::mutex> lock(fake_cuda::g_mu);
    if (fake_cuda::g_libraries->erase(lib) == 0) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  delete lib;
  return CUDA_SUCCESS;
}

FAKE_CU_API(cuLibraryGetKernel,
            (CUkernel * kernel, CUlibrary library, const char* name)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (kernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::IsLiveLibrary(library)) return CUDA_ERROR_INVALID_HANDLE;
  for (const char* known :
       {fake_cuda::kFillName, fake_cuda::kCheckName,
        fake_cuda::kInlineCheckName, fake_cuda::kSmallCheckName,
        fake_cuda::kInlineFillName, fake_cuda::kCheckFillName}) {
    if (std::strcmp(known, name) == 0) {
      *kernel = reinterpret_cast<CUkernel>(const_cast<char*>(known));
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

// The function of a kernel in the current context: the double's kernels are
// their own functions (a CUkernel may be cast to CUfunction since 12.0).
FAKE_CU_API(cuKernelGetFunction, (CUfunction * function, CUkernel kernel)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (function == nullptr || kernel == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *function = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

// Loading a function onto the device (lazy loading's first launch, ahead of
// time): nothing to do here but refuse what is not a function.
FAKE_CU_API(cuFuncLoad, (CUfunction function)) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return function == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

// A CUkernel cast to CUfunction, as CUDA >= 12.0 allows; runs in the current
// context. Any other non-null handle is a kernel the double does not run
// (fake_driver_launch_sync.cc): the launch is checked and does nothing.
FAKE_CU_API(cuLaunchKernel,
            (CUfunction f, unsigned int grid_x, unsigned int grid_y,
             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
             unsigned int block_z, unsigned int shared_bytes, CUstream stream,
             void** params, void** extra)) {
  (void)shared_bytes;
  fake_cuda::CheckCallFromLaunchCallback("cuLaunchKernel");
  (void)extra;
  fake_cuda::Context* ctx = nullptr;
  if (CUresult r = fake_cuda::RequireContext(&ctx); r != CUDA_SUCCESS) return r;
  if (f == nullptr || !fake_cuda::IsValidStream(stream)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || block_x == 0 ||
      block_y == 0 || block_z == 0 ||
      uint64_t{block_x} * block_y * block_z > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // A planted fault (fake_sticky_error.h) fails every later launch.
  if (CUresult r = fake_cuda::StickyError(); r != CUDA_SUCCESS) return r;
  const auto* name = reinterpret_cast<const char*>(f);
  const bool fill = name == fake_cuda::kFillName;
  // The small check answers as the inline one does, in its one block.
  const bool small_check = name == fake_cuda::kSmallCheckName;
  const bool inline_check = name == fake_cuda::kInlineCheckName || small_check;
  const bool inline_fill = name == fake_cuda::kInlineFillName;
  const bool check_fill = name == fake_cuda::kCheckFillName;
  const bool guard_kernel = fill || inline_check || inline_fill || check_fill ||
                            name == fake_cuda::kCheckName;
  // CUPTI sees every launch, the tool's own guard kernels included, as the
  // real driver shows it (the tool must tell its own launches from
  // the program's; on the H200 it once took its exit-time check kernel for a
  // program kernel and deadlocked on its own lock).
  const struct {
    CUfunction f;
    unsigned int grid[3], block[3], shared_bytes;
    CUstream stream;
    void** params;
    void** extra;
  } cupti_params{f,
                 {grid_x, grid_y, grid_z},
                 {block_x, block_y, block_z},
                 shared_bytes,
                 stream,
                 params,
                 extra};
  if (!guard_kernel) {
    fake_cuda::NoteLaunchForStickyError(f);
    // A program's kernel: nothing runs.
    return fake_cuda::WithCuptiCallbacks(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                         "cuLaunchKernel", &cupti_params, name,
                                         [] { return CUDA_SUCCESS; });
  }
  // The guard kernels take their arguments in kernelParams only.
  if (params == nullptr || extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The inline check is built for blocks of at most GMT_INLINE_CHECK_THREADS
  // threads (__launch_bounds__): CUDA refuses larger blocks. Its blocks
  // answer as consecutive ids along x; a grid in y or z would publish the
  // same ids twice.
  if (inline_check || check_fill) {
    if (uint64_t{block_x} * block_y * block_z > GMT_INLINE_CHECK_THREADS) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if ((inline_check && grid_x > GMT_INLINE_MAX_BLOCKS) || grid_y != 1 ||
        grid_z != 1 || block_x != GMT_INLINE_CHECK_THREADS) {
      return CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  const void* caller = __builtin_return_address(0);  // of this entry point
  return fake_cuda::WithCuptiCallbacks(
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &cupti_params,
      name,
      [fill, inline_check, small_check, inline_fill, check_fill, params, caller,
       grid_x] {
        // Reliability tests: FAKE_CUDA_FAIL_LAUNCH (fake_tool_faults.h); a
        // check riding on a fill fails with either.
        if (CUresult r = fake_cuda::InjectToolFailure(
                fill || inline_fill || check_fill
                    ? fake_cuda::ToolCall::kFillLaunch
                    : fake_cuda::ToolCall::kCheckLaunch,
                caller);
            r != CUDA_SUCCESS) {
          return r;
        }
        if (check_fill) {
          if (CUresult r = fake_cuda::InjectToolFailure(
                  fake_cuda::ToolCall::kCheckLaunch, caller);
              r != CUDA_SUCCESS) {
            return r;
          }
        }
        if (fill || inline_fill || check_fill) fake_cuda::HoldFillIfAsked();
        if (check_fill) {
          return fake_cuda::LaunchCheckFill(params, grid_x, caller);
        }
        if (inline_check) {
          return fake_cuda::LaunchInline(params, grid_x, small_check, caller);
        }
        if (inline_fill) {
          fake_cuda::g_inline_fill_launches.fetch_add(1);
          GmtInlineFill inline_zones;
          std::memcpy(&inline_zones, params[0], sizeof(inline_zones));
          if (CUresult r = fake_cuda::ValidateInlineFill(inline_zones);
              r != CUDA_SUCCESS) {
            return r;
          }
          fake_cuda::RunInlineFill(inline_zones);
          return CUDA_SUCCESS;
        }
        return fill ? fake_cuda::RunFill(params) : fake_cuda::RunCheck(params);
      });
}
