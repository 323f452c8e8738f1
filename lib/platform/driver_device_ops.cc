#include "lib/platform/driver_device_ops.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "absl/container/btree_set.h"
#include "absl/strings/match.h"
#include "kernels/zone_abi.h"
#include "kernels/zone_kernels_image.h"
#include "lib/core/api.h"
#include "lib/core/log.h"
#include "lib/core/tool_time.h"

namespace gmt {
namespace {

// zone_kernels.cu is built with __launch_bounds__(256).
constexpr unsigned kBlockThreads = 256;
// Resident blocks per SM the grid asks for: with 4 loads in flight per
// thread, enough to saturate memory; more would only add scheduling.
constexpr unsigned kBlocksPerSm = 4;
// Used when the SM count cannot be asked.
constexpr unsigned kFallbackGrid = 4 * 132;

// Slot layout, device and host alike:
//   [GmtCheckSummary, padded to 64 | results: capacity x 32 | table: capacity
//   x 32]
constexpr uint64_t kHeaderBytes = 64;
static_assert(sizeof(GmtCheckSummary) <= kHeaderBytes);
static_assert(sizeof(GmtZone) == 32 && sizeof(GmtZoneResult) == 32,
              "zone_abi.h: every field is 8 bytes");
constexpr uint64_t kMinSlotZones = 256;
// Slots a context may have in flight before a new use waits for the oldest
// (slots held by async-check tickets do not count).
constexpr size_t kMaxInFlightSlots = 8;
// A fill of at most this many zones on a program's stream (the canaries and
// freed patterns of stream-ordered blocks, flushed at a launch there) never
// takes a zone table: a table needs a staging slot, and with every slot
// queued behind the program's own work the next fill waited for the GPU (in
// torch mode every tensor is such a block, and those waits made a CNN's step
// 5x slower on the H200). Such a fill is one launch of the inline fill
// kernel, the zones in its parameters, or memsets (kMemsetFillZones).
constexpr size_t kInlineFillZones = GMT_INLINE_MAX_ZONES;
// A fill of at most this many zones on a program's stream is one
// cuMemsetD8Async a zone instead of a launch: on the H200 three memsets cost
// the program's thread 2.4-3.3 us and the GPU ~3.1 us, one launch of the fill
// kernel for the same three zones 3.9-4.5 us and ~2.1 us
// (docs/measurements.md, `fill_us`). Tensor mode's fills are made in a
// host-bound loop at almost every launch, and the common one holds three
// zones: the new output tensor's two canaries and the bytes of the input
// freed since the last launch. From the fourth zone on the launch costs the
// host no more than the memsets and the GPU less.
constexpr size_t kMemsetFillZones = 3;
// ... unless a zone is larger than this: a memset past a few KiB costs the
// host as much as a launch of the fill kernel (H100, driver 580, one zone:
// 4 KiB 1.2 us, 256 KiB to 32 MiB 3.8-3.9 us; the kernel 3.8-4.4 us at
// any size: docs/measurements.md, `freed_fill_us`), so a fill holding one
// (a freed activation, a block's 1 MiB tail) is one launch for all its zones.
constexpr uint64_t kMemsetFillMaxBytes = uint64_t{64} << 10;

// zone_abi.h's sizes (32-bit products there, shared with the kernels), as
// the host's 64-bit arithmetic uses them.
// NOLINTBEGIN(bugprone-implicit-widening-of-multiplication-result)
constexpr uint64_t kChunkBytes = uint64_t{GMT_ZONE_CHUNK_BYTES};
constexpr uint64_t kInlineMaxBytes = uint64_t{GMT_INLINE_MAX_BYTES};
// NOLINTEND(bugprone-implicit-widening-of-multiplication-result)

// Copies `zones` into the staging `table` with chunk_begin recomputed (the
// prefix sum of zone_abi.h), so a caller's stale value cannot send the kernel
// out of bounds. Returns the total number of chunks.
uint64_t StageTable(absl::Span<const GmtZone> zones, GmtZone* table) {
  uint64_t chunks = 0;
  for (size_t i = 0; i < zones.size(); ++i) {
    table[i] = zones[i];
    table[i].chunk_begin = chunks;
    chunks += (zones[i].bytes + kChunkBytes - 1) / kChunkBytes;
  }
  return chunks;
}

// The blocks of an inline check of `zones`: one per GMT_INLINE_MAX_BYTES;
// 0 when they are too many or too large for one launch (kernels/zone_abi.h),
// or hold no byte (the table path answers those at once, with no launch).
uint64_t InlineBlocks(absl::Span<const GmtZone> zones) {
  if (zones.empty() || zones.size() > GMT_INLINE_MAX_ZONES) return 0;
  uint64_t bytes = 0;
  for (const GmtZone& z : zones) bytes += z.bytes;
  if (bytes == 0) return 0;
  const uint64_t blocks = (bytes + kInlineMaxBytes - 1) / kInlineMaxBytes;
  return blocks <= GMT_INLINE_MAX_BLOCKS ? blocks : 0;
}

// The 16-byte granules holding the zones' bytes, as the inline checks read
// them (a zone's unaligned edges whole).
uint64_t InlineGranules(absl::Span<const GmtZone> zones) {
  uint64_t granules = 0;
  for (const GmtZone& z : zones) {
    if (z.bytes == 0) continue;
    granules += (((z.address + z.bytes + 15) & ~uint64_t{15}) -
                 (z.address & ~uint64_t{15})) /
                16;
  }
  return granules;
}

// The inline fill kernel's parameter for `zones` (at most
// GMT_INLINE_MAX_ZONES): the zones with a byte, chunk_begin their prefix
// sum (zone_abi.h).
GmtInlineFill InlineFillOf(absl::Span<const GmtZone> zones) {
  GmtInlineFill fill{};
  uint64_t chunks = 0;
  uint64_t n = 0;
  for (const GmtZone& z : zones) {
    if (z.bytes == 0) continue;
    fill.zones[n] = z;
    fill.zones[n].chunk_begin = chunks;
    chunks += (z.bytes + kChunkBytes - 1) / kChunkBytes;
    ++n;
  }
  fill.zone_count = n;
  fill.total_chunks = chunks;
  return fill;
}

// Results the driver gives for an image it cannot run on this GPU or parse.
bool IsImageError(CUresult r) {
  return r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE ||
         r == CUDA_ERROR_INVALID_PTX ||
         r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

}  // namespace

struct DriverDeviceOps::Slot {
  CUdeviceptr device = 0;
  unsigned char* host = nullptr;  // pinned
  uint64_t capacity = 0;          // zones
  CUevent done = nullptr;         // recorded after the slot's last use
  bool held = false;              // by an async-check ticket
  uint64_t last_use = 0;

  uint64_t table_offset() const {
    return kHeaderBytes + capacity * sizeof(GmtZoneResult);
  }
  GmtZone* host_table() {
    return reinterpret_cast<GmtZone*>(host + table_offset());
  }
};

struct DriverDeviceOps::ContextState {
  CUstream stream = nullptr;    // the tool's, non-blocking
  CUevent fill_done = nullptr;  // recorded after each Fill on `stream`
  bool fill_recorded = false;
  // Fills recorded on `stream`, and how many of them are known to have
  // completed: when the two agree, a program stream needs no wait for them
  // (the steady state of a training loop: no new block, no cuStreamWaitEvent
  // per check).
  uint64_t fills_enqueued = 0;
  uint64_t fills_known_done = 0;
  unsigned max_grid = kFallbackGrid;
  uint64_t use_clock = 0;
  std::vector<std::unique_ptr<Slot>> slots;
  // The inline checks' report (host view and device address); null when it
  // could not be made (then every check takes the slots).
  GmtCheckReport* report = nullptr;
  CUdeviceptr report_device = 0;
  bool report_tried = false;
  uint64_t next_check_id = 1;
  // Inline checks not answered yet, by id: the oldest bounds the next id, so
  // a completion slot is never reused while its check may be unread.
  absl::btree_set<uint64_t> inline_in_flight;
};

// What a guard-zone fill or check works with: the driver and the context made
// current for the work and, when there are zones, the context's state, the
// stream to work on and a slot with the zones staged in it.
struct DriverDeviceOps::ZoneWork {
  const ToolDriver* driver = nullptr;
  std::optional<ToolContextScope> scope;
  ContextState* state = nullptr;
  CUstream stream = nullptr;
  Slot* slot = nullptr;
  uint64_t total_chunks = 0;  // 0: no zone has a byte, nothing to launch
};

DriverDeviceOps::DriverDeviceOps() = default;
DriverDeviceOps::~DriverDeviceOps() = default;

void DriverDeviceOps::Prepare(uint64_t context) {
  absl::MutexLock lock(&mu_);
  const ToolDriver* d = Driver();
  if (d == nullptr || !EnsureKernels(*d)) return;
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) return;
  // No staging slot yet: its device memory would count against the
  // program's before it needs one.
  if (State(*d, scope.context()) == nullptr) return;
  // With lazy loading (CUDA's default) a kernel reaches the device at its
  // first launch; load both here (cuFuncLoad: drivers of CUDA 12.4 on).
  if (d->kernel_get_function == nullptr || d->func_load == nullptr) return;
  for (CUkernel kernel :
       {fill_kernel_, check_kernel_, inline_check_kernel_, small_check_kernel_,
        inline_fill_kernel_, check_fill_kernel_}) {
    if (kernel == nullptr) continue;
    CUfunction function = nullptr;
    if (d->kernel_get_function(&function, kernel) == CUDA_SUCCESS) {
      d->func_load(function);
    }
  }
}

bool DriverDeviceOps::Fill(uint64_t context, uint64_t stream,
                           absl::Span<const GmtZone> zones) {
  SampledGpuWork timed(ToolGpuWork::kFill);
  absl::MutexLock lock(&mu_);
  if (zones.empty()) return true;
  if (stream != 0 && zones.size() <= kInlineFillZones) {
    return FillInline(context, stream, zones);
  }
  ZoneWork work;
  if (!BeginZoneWork(context, stream, zones, &work)) return false;
  if (work.total_chunks == 0) return true;  // only empty zones
  const ToolDriver& d = *work.driver;
  ContextState* state = work.state;
  Slot* slot = work.slot;
  const CUstream s = work.stream;

  const uint64_t n = zones.size();
  const uint64_t table = slot->table_offset();
  CUresult r = d.memcpy_htod_async(slot->device + table, slot->host + table,
                                   n * sizeof(GmtZone), s);
  if (r == CUDA_SUCCESS) {
    CUdeviceptr zones_arg = slot->device + table;
    uint64_t count_arg = n;
    uint64_t chunks_arg = work.total_chunks;
    void* params[] = {&zones_arg, &count_arg, &chunks_arg};
    r = Launch(d, state, fill_kernel_, work.total_chunks, s, params);
  }
  if (!FinishSlot(d, state, slot, s)) return false;
  if (r != CUDA_SUCCESS) return Failed(&d, "guard-zone fill", r);
  if (s == state->stream) {
    r = d.event_record(state->fill_done, s);
    if (r != CUDA_SUCCESS) return Failed(&d, "cuEventRecord", r);
    state->fill_recorded = true;
    ++state->fills_enqueued;
  }
  return true;
}

bool DriverDeviceOps::FillInline(uint64_t context, uint64_t stream,
                                 absl::Span<const GmtZone> zones) {
  ZoneWork work;
  if (!BeginZoneWork(context, stream, zones, &work, /*stage_table=*/false)) {
    return false;
  }
  size_t filled_zones = 0;
  bool large_zone = false;
  for (const GmtZone& z : zones) {
    filled_zones += z.bytes != 0 ? 1 : 0;
    large_zone = large_zone || z.bytes > kMemsetFillMaxBytes;
  }
  const bool by_kernel = inline_fill_kernel_ != nullptr &&
                         (filled_zones > kMemsetFillZones || large_zone);
  CountProgramStreamFill(filled_zones, by_kernel);
  if (by_kernel) {
    GmtInlineFill fill = InlineFillOf(zones);
    if (fill.zone_count == 0) return true;
    void* params[] = {&fill};
    const CUresult r = Launch(*work.driver, work.state, inline_fill_kernel_,
                              fill.total_chunks, work.stream, params);
    return r == CUDA_SUCCESS || Failed(work.driver, "guard-zone fill", r);
  }
  for (const GmtZone& z : zones) {
    if (z.bytes == 0) continue;
    const CUresult r = work.driver->memset_d8_async(
        z.address, static_cast<unsigned char>(z.pattern), z.bytes, work.stream);
    if (r != CUDA_SUCCESS) {
      return Failed(work.driver, "guard-zone fill (memset)", r);
    }
  }
  return true;
}

bool DriverDeviceOps::OrderAfterFills(uint64_t context, uint64_t stream) {
  SampledGpuWork timed(ToolGpuWork::kOrder);
  absl::MutexLock lock(&mu_);
  if (stream == 0) return true;  // the tool's stream is in order already
  const ToolDriver* d = Driver();
  if (d == nullptr) return false;
  CUcontext key = reinterpret_cast<CUcontext>(context);
  if (key == nullptr && d->ctx_get_current(&key) != CUDA_SUCCESS) return false;
  auto it = contexts_.find(key);
  if (it == contexts_.end() || !it->second->fill_recorded) return true;
  ToolContextScope scope(*d, reinterpret_cast<uint64_t>(key));
  if (scope.result() != CUDA_SUCCESS) {
    return Failed(d, "making the context current", scope.result());
  }
  CUstream s = nullptr;
  return WorkStream(*d, it->second.get(), stream, &s);
}

bool DriverDeviceOps::Check(uint64_t context, uint64_t stream,
                            absl::Span<const GmtZone> zones,
                            std::vector<GmtZoneResult>* results) {
  SampledGpuWork timed(ToolGpuWork::kCheck);
  absl::MutexLock lock(&mu_);
  if (zones.empty()) {
    results->clear();
    return true;
  }
  ZoneWork work;
  if (!BeginZoneWork(context, stream, zones, &work)) return false;
  if (work.total_chunks == 0) {
    results->assign(zones.size(), GmtZoneResult{});
    return true;
  }
  const ToolDriver& d = *work.driver;
  if (!EnqueueCheck(d, work.state, work.stream, work.slot, zones.size(),
                    work.total_chunks)) {
    return false;
  }
  // The slot is held across the wait, made without the lock (see the
  // header): no other thread reuses it meanwhile.
  work.slot->held = true;
  const CUevent done = work.slot->done;
  mu_.Unlock();
  const CUresult r = d.event_synchronize(done);
  mu_.Lock();
  auto state_it = contexts_.find(work.scope->context());
  if (state_it == contexts_.end() || state_it->second.get() != work.state) {
    return false;  // the context was forgotten meanwhile
  }
  work.slot->held = false;
  if (r != CUDA_SUCCESS) {
    DropSlot(work.state, work.slot);
    return Failed(&d, "waiting for a guard-zone check", r);
  }
  return ReadResults(d, work.state, work.slot, zones.size(), results);
}

uint64_t DriverDeviceOps::CheckAsync(uint64_t context, uint64_t stream,
                                     absl::Span<const GmtZone> zones) {
  SampledGpuWork timed(ToolGpuWork::kCheck);
  absl::MutexLock lock(&mu_);
  // A few zones: one launch that answers in host memory, where the table
  // path takes five driver calls (clear, upload, launch, copy back, event).
  if (std::optional<uint64_t> ticket = InlineCheckLocked(
          context, stream, zones, /*context_current=*/false)) {
    return *ticket;
  }
  ZoneWork work;
  if (!BeginZoneWork(context, stream, zones, &work)) return 0;
  Ticket ticket{work.scope->context(), nullptr, zones.size()};
  if (work.total_chunks > 0) {
    if (!EnqueueCheck(*work.driver, work.state, work.stream, work.slot,
                      zones.size(), work.total_chunks)) {
      return 0;
    }
    work.slot->held = true;
    ticket.slot = work.slot;
  }
  // A ticket without a slot had only empty zones: it is clean at once.
  const uint64_t id = next_ticket_++;
  tickets_[id] = ticket;
  return id;
}

uint64_t DriverDeviceOps::CheckAfterKernel(uint64_t context, uint64_t stream,
                                           absl::Span<const GmtZone> zones,
                                           bool context_current) {
  SampledGpuWork timed(ToolGpuWork::kCheck);
  if (stream != 0) {
    absl::MutexLock lock(&mu_);
    if (std::optional<uint64_t> ticket =
            InlineCheckLocked(context, stream, zones, context_current)) {
      return *ticket;
    }
  }
  return CheckAsync(context, stream, zones);
}

uint64_t DriverDeviceOps::CheckAndFill(uint64_t context, uint64_t stream,
                                       absl::Span<const GmtZone> check,
                                       absl::Span<const GmtZone> fill,
                                       bool* filled) {
  // Timed as the fill it rides on: both are due at the program's launch.
  SampledGpuWork timed(ToolGpuWork::kFill);
  const uint64_t check_blocks = InlineBlocks(check);
  if (stream != 0 && check_blocks > 0 && fill.size() <= kInlineFillZones) {
    const GmtInlineFill zones = InlineFillOf(fill);
    if (zones.zone_count > 0) {
      absl::MutexLock lock(&mu_);
      uint64_t ticket = 0;
      switch (EnqueueInlineCheck(context, stream, check, check_blocks,
                                 /*context_current=*/false, &ticket, &zones)) {
        case InlineOutcome::kEnqueued:
          CountProgramStreamFill(zones.zone_count, /*kernel=*/true,
                                 /*with_check=*/true);
          *filled = true;
          return ticket;
        case InlineOutcome::kFailed:
          *filled = false;
          return 0;
        case InlineOutcome::kNotApplicable:
          break;
      }
    }
  }
  return DeviceOps::CheckAndFill(context, stream, check, fill, filled);
}

std::optional<uint64_t> DriverDeviceOps::InlineCheckLocked(
    uint64_t context, uint64_t stream, absl::Span<const GmtZone> zones,
    bool context_current) {
  const uint64_t blocks = InlineBlocks(zones);
  if (blocks == 0) return std::nullopt;
  uint64_t ticket = 0;
  switch (EnqueueInlineCheck(context, stream, zones, blocks, context_current,
                             &ticket)) {
    case InlineOutcome::kEnqueued:
      return ticket;
    case InlineOutcome::kFailed:
      return 0;
    case InlineOutcome::kNotApplicable:
      break;
  }
  return std::nullopt;
}

DeviceOps::Poll DriverDeviceOps::PollCheck(
    uint64_t ticket, bool wait, std::vector<GmtZoneResult>* results) {
  SampledGpuWork timed(ToolGpuWork::kPoll);
  absl::MutexLock lock(&mu_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return Poll::kFailed;
  const Ticket t = it->second;
  if (t.check_id != 0) {
    // An inline check: its answer is in host memory. A wait sleeps on it
    // without the lock, and now and then asks the context whether it has
    // faulted (then the check will never run). The report is read only under
    // the lock with the context's state still known: ForgetContext drops
    // the state before the context (and with it the report) goes.
    const ToolDriver* d = Driver();
    auto state_it = contexts_.find(t.context);
    Poll answer = Poll::kFailed;
    for (int round = 0; state_it != contexts_.end(); ++round) {
      answer = ReadInlineAnswer(*state_it->second, t, results);
      if (answer != Poll::kPending || !wait) break;
      if (round % 64 == 1 && d != nullptr) {
        const CUresult r = d->event_query(state_it->second->fill_done);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
          Failed(d, "waiting for a guard-zone check", r);
          answer = Poll::kFailed;
          break;
        }
        // The query may have let the work finish (the test double runs
        // queued work when it is polled): read again before sleeping.
        continue;
      }
      mu_.Unlock();
      if (round < 16) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::min(1000, 10 << std::min(round - 16, 7))));
      }
      mu_.Lock();
      state_it = contexts_.find(t.context);
      answer = Poll::kFailed;  // forgotten meanwhile
    }
    if (answer == Poll::kPending) return answer;
    tickets_.erase(ticket);
    if (state_it != contexts_.end()) {
      state_it->second->inline_in_flight.erase(t.check_id);
    }
    return answer;
  }
  if (t.slot == nullptr) {
    tickets_.erase(it);
    results->assign(t.zone_count, GmtZoneResult{});
    return Poll::kDone;
  }
  const ToolDriver* d = Driver();
  auto state_it = contexts_.find(t.context);
  if (d == nullptr || state_it == contexts_.end()) {
    tickets_.erase(it);
    return Poll::kFailed;
  }
  // Events belong to their context: no need to make it current to wait.
  // A wait is made without the lock, the ticket out of the table meanwhile
  // (its slot stays held, so nothing reuses it).
  CUresult r = CUDA_SUCCESS;
  if (wait) {
    tickets_.erase(it);
    const CUevent done = t.slot->done;
    mu_.Unlock();
    r = d->event_synchronize(done);
    mu_.Lock();
    state_it = contexts_.find(t.context);
    if (state_it == contexts_.end()) return Poll::kFailed;  // forgotten
  } else {
    r = d->event_query(t.slot->done);
    if (r == CUDA_ERROR_NOT_READY) return Poll::kPending;
    tickets_.erase(it);
  }
  ContextState* state = state_it->second.get();
  if (r != CUDA_SUCCESS) {
    DropSlot(state, t.slot);
    Failed(d, "waiting for a guard-zone check", r);
    return Poll::kFailed;
  }
  t.slot->held = false;
  ToolContextScope scope(*d, reinterpret_cast<uint64_t>(t.context));
  if (scope.result() != CUDA_SUCCESS) {
    Failed(d, "making the context current", scope.result());
    return Poll::kFailed;
  }
  return ReadResults(*d, state, t.slot, t.zone_count, results) ? Poll::kDone
                                                               : Poll::kFailed;
}

int DriverDeviceOps::SynchronizeContext(uint64_t context) {
  SampledGpuWork timed(ToolGpuWork::kSync);
  const ToolDriver* d = nullptr;
  {
    absl::MutexLock lock(&mu_);
    d = Driver();
  }
  // The wait itself without the lock: other threads' fills go on.
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) return scope.result();
  return d->ctx_synchronize();
}

int DriverDeviceOps::Release(Api alloc_api, uint64_t context,
                             uint64_t raw_address) {
  SampledGpuWork timed(ToolGpuWork::kRelease);
  const ToolDriver* d = nullptr;
  {
    absl::MutexLock lock(&mu_);
    d = Driver();
  }
  // CUDA's free synchronizes the device: without the lock.
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) return scope.result();
  void* p = reinterpret_cast<void*>(raw_address);
  const bool pinned = ApiMemoryKind(alloc_api) == MemoryKind::kPinnedHost;
  // The runtime's own free where it can be had, so the runtime's view of its
  // blocks stays right; its driver call underneath is the same release.
  if (absl::StartsWith(ApiName(alloc_api), "cuda")) {
    if (auto free_fn = pinned ? d->cuda_free_host : d->cuda_free) {
      return free_fn(p);
    }
  }
  return pinned ? d->mem_free_host(p) : d->mem_free(raw_address);
}

int DriverDeviceOps::ReleaseOrdered(uint64_t context, uint64_t raw_address,
                                    uint64_t stream) {
  SampledGpuWork timed(ToolGpuWork::kRelease);
  const ToolDriver* d = nullptr;
  {
    absl::MutexLock lock(&mu_);
    d = Driver();
  }
  if (d == nullptr || d->mem_free_async == nullptr) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  // The legacy stream (and a stream-ordered free's device) is the current
  // context's: make the block's context current for the call.
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) return scope.result();
  CUstream on = reinterpret_cast<CUstream>(stream);
  if (stream == 0) {
    // The tool's stream: it waits for no work of the program's.
    absl::MutexLock lock(&mu_);
    ContextState* state = State(*d, scope.context());
    if (state == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
    on = state->stream;
  }
  return d->mem_free_async(raw_address, on);
}

uint64_t DriverDeviceOps::PoolOf(uint64_t context, uint64_t address) {
  const ToolDriver* d = nullptr;
  {
    absl::MutexLock lock(&mu_);
    d = Driver();
  }
  if (d == nullptr || d->pointer_get_attribute == nullptr) return 0;
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) return 0;
  CUmemoryPool pool = nullptr;
  if (d->pointer_get_attribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                               address) != CUDA_SUCCESS) {
    return 0;
  }
  return reinterpret_cast<uint64_t>(pool);
}

bool DriverDeviceOps::Read(uint64_t context, uint64_t address, void* out,
                           uint64_t bytes) {
  return CopyOnToolStream(context, bytes, "reading device memory",
                          [&](const ToolDriver& d, CUstream stream) {
                            return d.memcpy_dtoh_async(out, address, bytes,
                                                       stream);
                          });
}

bool DriverDeviceOps::Write(uint64_t context, uint64_t address,
                            const void* data, uint64_t bytes) {
  return CopyOnToolStream(context, bytes, "writing device memory",
                          [&](const ToolDriver& d, CUstream stream) {
                            return d.memcpy_htod_async(address, data, bytes,
                                                       stream);
                          });
}

bool DriverDeviceOps::StreamCapturing(uint64_t stream) {
  SampledGpuWork timed(ToolGpuWork::kCapture);
  if (stream == 0) return false;  // the tool's stream is never captured
  // No lock: the question reads nothing of this object's, and the driver's
  // table does not change once found. It is asked at every stream-ordered
  // allocation, free and fill flush, on the program's thread.
  const ToolDriver* d = GetToolDriver();
  if (d == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r =
      d->stream_is_capturing(reinterpret_cast<CUstream>(stream), &status);
  // An error answers "capturing": the legacy stream, for one, answers
  // CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while another stream captures in
  // global mode, and adding work to it then is exactly what must not happen.
  if (r != CUDA_SUCCESS) return true;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void DriverDeviceOps::ForgetContext(uint64_t context) {
  absl::MutexLock lock(&mu_);
  CUcontext key = reinterpret_cast<CUcontext>(context);
  // Its streams, events and buffers die with the context: dropped unfreed.
  contexts_.erase(key);
  absl::erase_if(tickets_, [key](const auto& entry) {
    return entry.second.context == key;
  });
}

// ---- Private
// ------------------------------------------------------------------

bool DriverDeviceOps::BeginZoneWork(uint64_t context, uint64_t stream,
                                    absl::Span<const GmtZone> zones,
                                    ZoneWork* work, bool stage_table) {
  work->driver = Driver();
  if (work->driver == nullptr || !EnsureKernels(*work->driver)) return false;
  const ToolDriver& d = *work->driver;
  work->scope.emplace(d, context);
  if (work->scope->result() != CUDA_SUCCESS) {
    return Failed(&d, "making the context current", work->scope->result());
  }
  if (zones.empty()) return true;
  work->state = State(d, work->scope->context());
  if (work->state == nullptr) return false;
  if (!WorkStream(d, work->state, stream, &work->stream)) return false;
  if (!stage_table) return true;
  work->slot = AcquireSlot(d, work->state, zones.size());
  if (work->slot == nullptr) return false;
  work->total_chunks = StageTable(zones, work->slot->host_table());
  return true;
}

DriverDeviceOps::InlineOutcome DriverDeviceOps::EnqueueInlineCheck(
    uint64_t context, uint64_t stream, absl::Span<const GmtZone> zones,
    uint64_t blocks, bool context_current, uint64_t* ticket,
    const GmtInlineFill* fill) {
  const ToolDriver* d = Driver();
  if (d == nullptr || !EnsureKernels(*d) || inline_check_kernel_ == nullptr ||
      (fill != nullptr && check_fill_kernel_ == nullptr)) {
    return InlineOutcome::kNotApplicable;
  }
  // The tool's own call, whatever the thread's context: CUPTI and the shims
  // must not take the check kernel for the program's.
  InterceptLevel tool_calls;
  CUcontext key = reinterpret_cast<CUcontext>(context);
  std::optional<ToolContextScope> scope;
  if (!context_current || key == nullptr) {
    // Made current only when the caller cannot vouch for it (a check owed
    // from a CUPTI callback, settled on another thread).
    scope.emplace(*d, context);
    if (scope->result() != CUDA_SUCCESS) {
      Failed(d, "making the context current", scope->result());
      return InlineOutcome::kFailed;
    }
    key = scope->context();
  }
  ContextState* state = State(*d, key);
  if (state == nullptr) return InlineOutcome::kFailed;
  if (state->report == nullptr && !state->report_tried) {
    // The report is made at the context's first per-kernel check, like the
    // slots at their first use: a program that never runs one (check=sync)
    // never pays for it, and no allocation of the tool's lands among the
    // program's first ones (where the test double's injected allocation
    // failures showed it taking one of the program's).
    state->report_tried = true;
    void* report = nullptr;
    CUdeviceptr report_device = 0;
    // Portable: mapped in every context, so a kernel of any context that
    // somehow reaches it never faults.
    CUresult r =
        d->mem_host_alloc(&report, sizeof(GmtCheckReport),
                          CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_SUCCESS) {
      std::memset(report, 0, sizeof(GmtCheckReport));
      r = d->mem_host_get_device_pointer(&report_device, report, 0);
      if (r != CUDA_SUCCESS) d->mem_free_host(report);
    }
    if (r == CUDA_SUCCESS) {
      state->report = static_cast<GmtCheckReport*>(report);
      state->report_device = report_device;
    } else {
      LogNote(1,
              "guard zones: no mapped host memory for per-kernel checks "
              "(%s); they use the zone-table path",
              ToolResultName(*d, r));
    }
  }
  if (state->report == nullptr) return InlineOutcome::kNotApplicable;
  const uint64_t id = state->next_check_id;
  if (!state->inline_in_flight.empty() &&
      id + blocks - 1 - *state->inline_in_flight.begin() >=
          GMT_REPORT_DONE_SLOTS) {
    return InlineOutcome::kNotApplicable;  // its completion slots are taken
  }
  CUstream s = nullptr;
  if (!WorkStream(*d, state, stream, &s)) return InlineOutcome::kFailed;
  GmtInlineCheck check;
  std::copy(zones.begin(), zones.end(), check.zones);
  check.zone_count = zones.size();
  check.check_id = id;
  check.report = state->report_device;
  void* params[] = {&check};
  // A kernel's reach (a few KiB) takes the compact kernel, whose code an SM
  // fetches faster than it would the large one's.
  const bool small = fill == nullptr && blocks == 1 &&
                     small_check_kernel_ != nullptr &&
                     InlineGranules(zones) <= GMT_INLINE_SMALL_GRANULES;
  CUkernel kernel = small ? small_check_kernel_ : inline_check_kernel_;
  uint64_t grid = blocks;
  // With a fill: its blocks after the check's, as many as its chunks (the
  // fill kernel's own grid), within the context's bound.
  GmtInlineFill fill_param{};
  uint64_t check_blocks = blocks;
  void* check_fill_params[] = {&check, &fill_param, &check_blocks};
  if (fill != nullptr) {
    fill_param = *fill;
    kernel = check_fill_kernel_;
    grid =
        blocks + std::clamp<uint64_t>(fill->total_chunks, 1, state->max_grid);
  }
  const CUresult r = d->launch_kernel(
      reinterpret_cast<CUfunction>(kernel), static_cast<unsigned>(grid), 1, 1,
      GMT_INLINE_CHECK_THREADS, 1, 1, 0, s,
      fill != nullptr ? check_fill_params : params, nullptr);
  if (r != CUDA_SUCCESS) {
    if (IsImageError(r)) {
      // This kernel cannot run here; the others may still.
      (fill != nullptr ? check_fill_kernel_
       : small         ? small_check_kernel_
                       : inline_check_kernel_) = nullptr;
      return InlineOutcome::kNotApplicable;
    }
    Failed(d,
           fill != nullptr ? "guard-zone fill and check" : "guard-zone check",
           r);
    return InlineOutcome::kFailed;
  }
  state->next_check_id += blocks;
  state->inline_in_flight.insert(id);
  *ticket = next_ticket_++;
  tickets_[*ticket] = Ticket{key, nullptr, zones.size(), id, blocks};
  return InlineOutcome::kEnqueued;
}

DeviceOps::Poll DriverDeviceOps::ReadInlineAnswer(
    const ContextState& state, const Ticket& ticket,
    std::vector<GmtZoneResult>* results) {
  // Every block's completion first: the answer is whole or pending.
  for (uint64_t b = 0; b < ticket.blocks; ++b) {
    const uint64_t id = ticket.check_id + b;
    const GmtCheckDone& done = state.report->done[id % GMT_REPORT_DONE_SLOTS];
    // The device wrote its records before the word (fenced), and the word
    // in one store.
    if (__atomic_load_n(&done.word, __ATOMIC_ACQUIRE) >>
            GMT_DONE_FINDINGS_BITS !=
        id) {
      return Poll::kPending;
    }
  }
  results->assign(ticket.zone_count, GmtZoneResult{});
  bool lost = false;
  for (uint64_t b = 0; b < ticket.blocks; ++b) {
    const uint64_t id = ticket.check_id + b;
    const GmtCheckDone& done = state.report->done[id % GMT_REPORT_DONE_SLOTS];
    const uint64_t findings = __atomic_load_n(&done.word, __ATOMIC_RELAXED) &
                              ((uint64_t{1} << GMT_DONE_FINDINGS_BITS) - 1);
    if (findings == 0) continue;
    const GmtFinding* region =
        &state.report
             ->ring[(id % GMT_REPORT_RING_CHECKS) * GMT_INLINE_MAX_ZONES];
    uint64_t read = 0;
    for (uint64_t k = 0; k < findings && k < GMT_INLINE_MAX_ZONES; ++k) {
      const GmtFinding& f = region[k];
      // A record is the block's only if it carries its id before and after
      // its fields are read: a later check reusing the region zeroes the id
      // first.
      if (__atomic_load_n(&f.check_id, __ATOMIC_ACQUIRE) != id) continue;
      const uint64_t zone = __atomic_load_n(&f.zone, __ATOMIC_RELAXED);
      const uint64_t changed =
          __atomic_load_n(&f.changed_bytes, __ATOMIC_RELAXED);
      const uint64_t first_last =
          __atomic_load_n(&f.first_last, __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&f.check_id, __ATOMIC_RELAXED) != id) continue;
      if (zone >= ticket.zone_count) continue;
      // Blocks share a zone's bytes: their counts add up, the first offset
      // is the least and the last the greatest any block saw.
      GmtZoneResult& out = (*results)[zone];
      const uint64_t first = first_last & 0xffffffffull;
      const uint64_t last_plus1 = (first_last >> 32) + 1;
      if (out.changed_bytes == 0 || first < ~out.first_inverted) {
        out.first_inverted = ~first;
      }
      out.last_plus1 = std::max<uint64_t>(out.last_plus1, last_plus1);
      out.changed_bytes += changed;
      ++read;
    }
    lost |= read != findings;
  }
  return lost ? Poll::kLost : Poll::kDone;
}

bool DriverDeviceOps::CopyOnToolStream(
    uint64_t context, uint64_t bytes, const char* what,
    absl::FunctionRef<CUresult(const ToolDriver&, CUstream)> enqueue) {
  absl::MutexLock lock(&mu_);
  if (bytes == 0) return true;
  const ToolDriver* d = Driver();
  if (d == nullptr) return false;
  ToolContextScope scope(*d, context);
  if (scope.result() != CUDA_SUCCESS) {
    return Failed(d, "making the context current", scope.result());
  }
  ContextState* state = State(*d, scope.context());
  if (state == nullptr) return false;
  // On the tool's stream: the copy sees every Fill before it (the legacy
  // stream does not wait for a non-blocking stream), so a fill enqueued
  // earlier never overwrites what is written now, and it does not wait for
  // the program's own work.
  CUresult r = enqueue(*d, state->stream);
  if (r == CUDA_SUCCESS) {
    // The wait without the lock; the tool's stream lives as long as the
    // context.
    const CUstream stream = state->stream;
    mu_.Unlock();
    r = d->stream_synchronize(stream);
    mu_.Lock();
  }
  return r == CUDA_SUCCESS || Failed(d, what, r);
}

const ToolDriver* DriverDeviceOps::Driver() {
  const char* missing = nullptr;
  const ToolDriver* d = GetToolDriver(&missing);
  if (d == nullptr && !driver_missing_logged_) {
    driver_missing_logged_ = true;
    LogNote(1, "guard zones: no usable CUDA driver yet (%s not found)",
            missing != nullptr ? missing : "libcuda");
  }
  return d;
}

bool DriverDeviceOps::EnsureKernels(const ToolDriver& d) {
  if (image_state_ != ImageState::kNotLoaded) {
    return image_state_ == ImageState::kLoaded;
  }
  if (d.library_load_data == nullptr || d.library_get_kernel == nullptr) {
    image_state_ = ImageState::kFailed;
    LogError(
        "guard zones are off: the CUDA driver is older than 12.0 "
        "(no cuLibraryLoadData)");
    return false;
  }
  CUlibrary library = nullptr;
  CUresult r = d.library_load_data(&library, gmt_zone_kernels_fatbin, nullptr,
                                   nullptr, 0, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS && !IsImageError(r)) {
    // Not the image's fault (no memory, driver not initialized): try again
    // at the next call.
    return Failed(&d, "loading the guard kernels", r);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&fill_kernel_, library, GMT_FILL_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS) {
    r = d.library_get_kernel(&check_kernel_, library, GMT_CHECK_KERNEL_NAME);
  }
  if (r == CUDA_SUCCESS &&
      d.library_get_kernel(&inline_check_kernel_, library,
                           GMT_INLINE_CHECK_KERNEL_NAME) != CUDA_SUCCESS) {
    inline_check_kernel_ = nullptr;  // per-kernel checks take the slots
  }
  if (r == CUDA_SUCCESS && inline_check_kernel_ != nullptr &&
      d.library_get_kernel(&small_check_kernel_, library,
                           GMT_INLINE_SMALL_CHECK_KERNEL_NAME) !=
          CUDA_SUCCESS) {
    small_check_kernel_ = nullptr;  // small checks take the large kernel
  }
  if (r == CUDA_SUCCESS &&
      d.library_get_kernel(&inline_fill_kernel_, library,
                           GMT_INLINE_FILL_KERNEL_NAME) != CUDA_SUCCESS) {
    inline_fill_kernel_ = nullptr;  // fills on program streams are memsets
  }
  if (r == CUDA_SUCCESS && inline_check_kernel_ != nullptr &&
      inline_fill_kernel_ != nullptr &&
      d.library_get_kernel(&check_fill_kernel_, library,
                           GMT_INLINE_CHECK_FILL_KERNEL_NAME) != CUDA_SUCCESS) {
    check_fill_kernel_ = nullptr;  // a fill, then a check of its own
  }
  if (r != CUDA_SUCCESS) {
    image_state_ = ImageState::kFailed;
    LogError(
        "guard zones are off: the guard kernels could not be loaded (%s); "
        "the driver or the GPU does not support the embedded image",
        ToolResultName(d, r));
    return false;
  }
  library_ = library;
  image_state_ = ImageState::kLoaded;
  LogNote(1, "guard kernels loaded (%zu-byte image)",
          static_cast<size_t>(gmt_zone_kernels_fatbin_size));
  return true;
}

DriverDeviceOps::ContextState* DriverDeviceOps::State(const ToolDriver& d,
                                                      CUcontext context) {
  auto it = contexts_.find(context);
  if (it != contexts_.end()) return it->second.get();
  auto state = std::make_unique<ContextState>();
  CUresult r = d.stream_create(&state->stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    Failed(&d, "cuStreamCreate", r);
    return nullptr;
  }
  r = d.event_create(&state->fill_done, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    Failed(&d, "cuEventCreate", r);  // the stream stays with the context
    return nullptr;
  }
  CUdevice device = 0;
  int sms = 0;
  if (d.ctx_get_device(&device) == CUDA_SUCCESS &&
      d.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             device) == CUDA_SUCCESS &&
      sms > 0) {
    state->max_grid = static_cast<unsigned>(sms) * kBlocksPerSm;
  }
  ContextState* raw = state.get();
  contexts_[context] = std::move(state);
  return raw;
}

DriverDeviceOps::Slot* DriverDeviceOps::AcquireSlot(const ToolDriver& d,
                                                    ContextState* state,
                                                    uint64_t zones) {
  Slot* idle = nullptr;     // finished, any size
  Slot* fitting = nullptr;  // finished and large enough
  Slot* oldest = nullptr;   // not held, least recently used
  size_t in_flight = 0;
  for (const auto& owned : state->slots) {
    Slot* slot = owned.get();
    if (slot->held) continue;
    if (oldest == nullptr || slot->last_use < oldest->last_use) oldest = slot;
    const CUresult r = d.event_query(slot->done);
    if (r == CUDA_ERROR_NOT_READY) {
      ++in_flight;
      continue;
    }
    if (r != CUDA_SUCCESS) {
      Failed(&d, "cuEventQuery", r);
      return nullptr;
    }
    if (idle == nullptr) idle = slot;
    if (fitting == nullptr && slot->capacity >= zones) fitting = slot;
  }
  Slot* slot = fitting != nullptr ? fitting : idle;
  if (slot == nullptr && in_flight >= kMaxInFlightSlots) {
    // Enough buffers in flight: wait for the oldest rather than add more.
    const CUresult r = d.event_synchronize(oldest->done);
    if (r != CUDA_SUCCESS) {
      Failed(&d, "cuEventSynchronize", r);
      return nullptr;
    }
    slot = oldest;
  }
  if (slot == nullptr) {
    auto fresh = std::make_unique<Slot>();
    const CUresult r = d.event_create(&fresh->done, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
      Failed(&d, "cuEventCreate", r);
      return nullptr;
    }
    slot = fresh.get();
    state->slots.push_back(std::move(fresh));
  }
  if (slot->capacity < zones && !GrowSlot(d, slot, zones)) return nullptr;
  slot->last_use = ++state->use_clock;
  return slot;
}

bool DriverDeviceOps::GrowSlot(const ToolDriver& d, Slot* slot,
                               uint64_t zones) {
  uint64_t capacity = std::max(kMinSlotZones, slot->capacity * 2);
  while (capacity < zones) capacity *= 2;
  // The slot's last use has completed (AcquireSlot): its buffers are free.
  if (slot->device != 0) d.mem_free(slot->device);
  if (slot->host != nullptr) d.mem_free_host(slot->host);
  slot->device = 0;
  slot->host = nullptr;
  slot->capacity = 0;
  const size_t bytes =
      kHeaderBytes + capacity * (sizeof(GmtZoneResult) + sizeof(GmtZone));
  CUdeviceptr device = 0;
  CUresult r = d.mem_alloc(&device, bytes);
  if (r != CUDA_SUCCESS) return Failed(&d, "cuMemAlloc (zone table)", r);
  void* host = nullptr;
  r = d.mem_host_alloc(&host, bytes, 0);
  if (r != CUDA_SUCCESS) {
    d.mem_free(device);
    return Failed(&d, "cuMemHostAlloc (zone table)", r);
  }
  slot->device = device;
  slot->host = static_cast<unsigned char*>(host);
  slot->capacity = capacity;
  return true;
}

bool DriverDeviceOps::WorkStream(const ToolDriver& d, ContextState* state,
                                 uint64_t stream, CUstream* out) {
  if (stream == 0) {
    *out = state->stream;
    return true;
  }
  *out = reinterpret_cast<CUstream>(stream);
  if (!state->fill_recorded ||
      state->fills_known_done == state->fills_enqueued) {
    return true;
  }
  // Fills were enqueued since they were last seen done: done by now, or
  // waited for on the program's stream.
  CUresult r = d.event_query(state->fill_done);
  if (r == CUDA_SUCCESS) {
    state->fills_known_done = state->fills_enqueued;
    return true;
  }
  if (r != CUDA_ERROR_NOT_READY) return Failed(&d, "cuEventQuery", r);
  r = d.stream_wait_event(*out, state->fill_done, 0);
  return r == CUDA_SUCCESS || Failed(&d, "cuStreamWaitEvent", r);
}

bool DriverDeviceOps::EnqueueCheck(const ToolDriver& d, ContextState* state,
                                   CUstream stream, Slot* slot,
                                   uint64_t zone_count, uint64_t total_chunks) {
  const uint64_t table = slot->table_offset();
  CUresult r = d.memset_d8_async(
      slot->device, 0, kHeaderBytes + zone_count * sizeof(GmtZoneResult),
      stream);
  if (r == CUDA_SUCCESS) {
    r = d.memcpy_htod_async(slot->device + table, slot->host + table,
                            zone_count * sizeof(GmtZone), stream);
  }
  if (r == CUDA_SUCCESS) {
    CUdeviceptr zones_arg = slot->device + table;
    uint64_t count_arg = zone_count;
    uint64_t chunks_arg = total_chunks;
    CUdeviceptr results_arg = slot->device + kHeaderBytes;
    CUdeviceptr summary_arg = slot->device;
    void* params[] = {&zones_arg, &count_arg, &chunks_arg, &results_arg,
                      &summary_arg};
    r = Launch(d, state, check_kernel_, total_chunks, stream, params);
  }
  if (r == CUDA_SUCCESS) {
    r = d.memcpy_dtoh_async(slot->host, slot->device, sizeof(GmtCheckSummary),
                            stream);
  }
  if (!FinishSlot(d, state, slot, stream)) return false;
  return r == CUDA_SUCCESS || Failed(&d, "guard-zone check", r);
}

bool DriverDeviceOps::ReadResults(const ToolDriver& d, ContextState* state,
                                  Slot* slot, uint64_t zone_count,
                                  std::vector<GmtZoneResult>* results) {
  GmtCheckSummary summary;
  std::memcpy(&summary, slot->host, sizeof(summary));
  if (summary.zones_changed == 0) {
    results->assign(zone_count, GmtZoneResult{});
    return true;
  }
  // Rare: something was overwritten. The per-zone results come back through
  // the tool's stream (the program's may be gone by now).
  CUresult r = d.memcpy_dtoh_async(
      slot->host + kHeaderBytes, slot->device + kHeaderBytes,
      zone_count * sizeof(GmtZoneResult), state->stream);
  if (!FinishSlot(d, state, slot, state->stream)) return false;
  if (r == CUDA_SUCCESS) r = d.event_synchronize(slot->done);
  if (r != CUDA_SUCCESS) {
    DropSlot(state, slot);
    return Failed(&d, "reading guard-zone results", r);
  }
  const auto* first =
      reinterpret_cast<const GmtZoneResult*>(slot->host + kHeaderBytes);
  results->assign(first, first + zone_count);
  return true;
}

bool DriverDeviceOps::FinishSlot(const ToolDriver& d, ContextState* state,
                                 Slot* slot, CUstream stream) {
  const CUresult r = d.event_record(slot->done, stream);
  if (r == CUDA_SUCCESS) return true;
  // Work that uses the slot may still be queued, and nothing tells when it
  // ends: the slot must never be reused.
  DropSlot(state, slot);
  return Failed(&d, "cuEventRecord", r);
}

void DriverDeviceOps::DropSlot(ContextState* state, Slot* slot) {
  // Leaks the slot's buffers and event on purpose: they may still be in use.
  auto it =
      std::find_if(state->slots.begin(), state->slots.end(),
                   [slot](const auto& owned) { return owned.get() == slot; });
  if (it != state->slots.end()) state->slots.erase(it);
}

CUresult DriverDeviceOps::Launch(const ToolDriver& d, ContextState* state,
                                 CUkernel kernel, uint64_t total_chunks,
                                 CUstream stream, void** params) {
  const unsigned grid = static_cast<unsigned>(
      std::clamp<uint64_t>(total_chunks, 1, state->max_grid));
  // A CUkernel is a valid CUfunction for cuLaunchKernel (CUDA >= 12.0): it
  // runs in the current context, loading the kernel there on first use.
  const CUresult r =
      d.launch_kernel(reinterpret_cast<CUfunction>(kernel), grid, 1, 1,
                      kBlockThreads, 1, 1, 0, stream, params, nullptr);
  if (IsImageError(r) && image_state_ == ImageState::kLoaded) {
    image_state_ = ImageState::kFailed;
    LogError(
        "guard zones are off: the guard kernels cannot run on this GPU (%s)",
        ToolResultName(d, r));
  }
  return r;
}

bool DriverDeviceOps::Failed(const ToolDriver* d, const char* what,
                             CUresult result) {
  const char* name = d != nullptr ? ToolResultName(*d, result) : "?";
  if (!failure_logged_) {
    failure_logged_ = true;
    LogError("guard zones: %s failed (%s); that guard-zone work was skipped",
             what, name);
  } else {
    LogNote(2, "guard zones: %s failed (%s)", what, name);
  }
  return false;
}

void InstallDriverDeviceOps() {
  static DriverDeviceOps* const ops = new DriverDeviceOps();
  SetDeviceOps(ops);
}

}  // namespace gmt
