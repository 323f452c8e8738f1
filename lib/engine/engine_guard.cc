// Engine members for guard zones: thin glue between the front ends and the
// GuardManager, plus the reports of what it finds.
#include <atomic>
#include <limits>

#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/engine/engine.h"
#include "lib/engine/error_reports.h"
#include "lib/guard/guard_layout.h"
#include "lib/stacks/python_frames.h"
#include "lib/stacks/stack_capture.h"

namespace gmt {

std::optional<GuardLayout> Engine::PlanGuard(Api api, uint64_t bytes,
                                             uint64_t stream) {
  // Size 0 gives a null pointer in CUDA; absurd sizes fail there unchanged.
  if (!guard_.Guards(api) || bytes == 0 || bytes > (uint64_t{1} << 52)) {
    return std::nullopt;
  }
  if (FamilyOf(api) == GuardFamily::kAsync &&
      guard_.ops()->StreamCapturing(stream == 0 ? 1 : stream)) {
    // Canaries cannot be written into a graph being captured.
    guard_.NoteUnguardedCapture();
    return std::nullopt;
  }
  return PlanLinear(guard_.policy(), bytes);
}

GuardedAllocation Engine::AllocateLinear(Api api, uint64_t bytes,
                                         uint64_t stream, RawLinearAlloc alloc,
                                         bool may_guard, uint64_t context) {
  std::optional<GuardLayout> layout;
  if (may_guard) {
    layout = PlanGuard(api, bytes, stream);
  } else if (guard_.Guards(api) && bytes > 0) {
    guard_.NoteUnguardedShareable();
  }
  // The current pool's allocation, not captured (PlanGuard said so), in a
  // context with no sticky error seen: a block of the same size whose
  // zones were checked intact after its free completed is what CUDA's pool
  // could have handed out too.
  if (layout && context != 0 &&
      (api == Api::kCudaMallocAsync || api == Api::kCuMemAllocAsync) &&
      !ContextLost()) {
    if (std::optional<uint64_t> raw =
            guard_.TakeReusable(context, bytes, *layout, stream)) {
      GuardedAllocation a;
      a.raw = *raw;
      a.user = *raw + layout->front;
      a.raw_bytes = layout->raw_bytes;
      a.guarded = true;
      return a;
    }
  }
  // A cudaMalloc / cuMemAlloc: a checked block it fits, which the program
  // cannot tell from CUDA's (its free synchronized; its buffer id is its
  // own: ReusedBufferId).
  if (layout && context != 0 && FamilyOf(api) == GuardFamily::kDevice &&
      !ContextLost()) {
    if (std::optional<GuardManager::ReusedBlock> reused =
            guard_.TakeDeviceReusable(context, *layout)) {
      GuardedAllocation a;
      a.raw = reused->raw;
      a.user = reused->raw + layout->front;
      a.raw_bytes = reused->raw_bytes;
      a.guarded = true;
      return a;
    }
  }
  GuardedAllocation a = gmt::AllocateLinear(
      layout, bytes, alloc, [this] { return ReleaseQuarantine(); });
  if (a.enlarged_error != 0) guard_.NoteUnguarded(a.enlarged_error);
  return a;
}

GuardedAllocation Engine::AllocateRows(Api api, uint64_t rows,
                                       uint64_t least_row_bytes,
                                       RawRowsAlloc alloc) {
  uint64_t extra = 0;
  if (guard_.Guards(api) && rows > 0 && least_row_bytes > 0) {
    extra = PlanExtraRows(guard_.policy(), least_row_bytes, rows);
  }
  GuardedAllocation a =
      gmt::AllocateRows(guard_.policy(), rows, extra, alloc,
                        [this] { return ReleaseQuarantine(); });
  if (a.enlarged_error != 0) guard_.NoteUnguarded(a.enlarged_error);
  return a;
}

bool Engine::ReleaseQuarantine() {
  std::vector<GuardFinding> findings;
  uint64_t released = guard_.ReleaseQuarantine(&findings);
  ReportFindings(findings);
  return released > 0;
}

void Engine::ReleaseHeldPoolBlocks(uint64_t pool) {
  std::vector<GuardFinding> findings;
  guard_.ReleaseHeldOrdered(pool, &findings);
  ReportFindings(findings);
}

void Engine::NoteBlockShared(uint64_t address) {
  if (guard_.ops() == nullptr) return;
  std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  if (r && r->guarded()) guard_.NoteShared(r->context, r->raw_address);
}

std::optional<uint64_t> Engine::ReusedBufferId(const BlockView& block) const {
  if (!block.guarded) return std::nullopt;
  return guard_.ReusedBufferId(block.context, block.raw_address);
}

std::optional<BlockView> Engine::FindBlock(uint64_t address) const {
  std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  if (!r) return std::nullopt;
  BlockView v;
  v.user_address = r->address;
  v.user_bytes = r->bytes;
  v.guarded = r->guarded();
  v.raw_address = v.guarded ? r->raw_address : r->address;
  v.raw_bytes = v.guarded ? r->raw_bytes : r->bytes;
  v.api = r->api;
  v.kind = r->kind;
  v.device = r->device;
  v.context = r->context;
  return v;
}

AccessVerdict Engine::CheckAccess(absl::string_view call, uint64_t address,
                                  uint64_t bytes) {
  if (bytes == 0 || !tracking()) return AccessVerdict::kForward;
  std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  // Host memory and untracked pointers: CUDA decides.
  if (!r ||
      (r->kind != MemoryKind::kDevice && r->kind != MemoryKind::kManaged)) {
    // A pool's NVTX region there still has its bounds. One
    // relaxed load when no region is registered.
    if (nvtx_mem_.HasRegions()) {
      CheckNvtxRegionAccess(call, address, bytes, false, false);
    }
    return AccessVerdict::kForward;
  }
  const uint64_t end = address + bytes;
  if (end >= address && address >= r->address && end <= r->address + r->bytes) {
    if (nvtx_mem_.HasRegions()) {  // Inside the pool's block
      CheckNvtxRegionAccess(call, address, bytes, false, false);
    }
    return AccessVerdict::kForward;
  }
  // Without redzones CUDA rejects any range that leaves the allocation
  // (measured: invalid-value for a single byte past the end). With them the
  // range may fit the raw block, so the tool answers for CUDA.
  const bool rejected = r->guarded();
  // Starting in a pool's NVTX region, the report names the
  // region (the code that asked the pool), not the pool's block.
  if (!nvtx_mem_.HasRegions() ||
      !CheckNvtxRegionAccess(call, address, bytes, true, rejected)) {
    ReportApiBounds(*this, call, address, bytes, *r, rejected,
                    CaptureCallStack());
  }
  return rejected ? AccessVerdict::kReject : AccessVerdict::kForward;
}

AccessVerdict Engine::CheckExportRange(absl::string_view call, uint64_t address,
                                       uint64_t bytes) {
  if (bytes != 0 && tracking()) {
    const std::optional<AllocationRecord> r = pointers_.FindContaining(address);
    // Guarded or not: a range on those pages is no error either way.
    if (r && FamilyOf(r->api) == GuardFamily::kDevice &&
        address >= r->address) {
      // Without the tool the block starts on its first mapped page (the
      // guard layout keeps a large block's start on a host page), so the
      // pages CUDA would export lie at the same offsets from its start.
      const uint64_t mapped = CudaMallocMappedBytes(r->bytes);
      const uint64_t offset = address - r->address;
      if (offset < mapped && bytes <= mapped - offset) {
        return AccessVerdict::kForward;
      }
    }
  }
  return CheckAccess(call, address, bytes);
}

void Engine::NoteExportRefused(uint64_t address) {
  if (!tracking()) return;
  const std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  if (r && r->guarded() && FamilyOf(r->api) == GuardFamily::kAsync &&
      address == r->address) {
    pool_export_starts_refused_.fetch_add(1, std::memory_order_relaxed);
  }
}

uint32_t Engine::InternKernel(absl::string_view name) {
  return kernel_names_.Intern(name);
}

std::string Engine::KernelName(uint32_t id) const {
  return kernel_names_.Name(id);
}

void Engine::BeforeLaunch(uint64_t context, uint64_t stream) {
  // The previous kernel's check goes in before this kernel, so a
  // zone it finds changed is still this one's predecessor's doing.
  SettleOwedChecks();
  guard_.BeforeLaunch(context, stream);
}

void Engine::SayArgsUnread(const LaunchArgs* args, uint32_t kernel,
                           bool layout_first) {
  if (args == nullptr) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      LogNote(1,
              "check=kernel: %s has no arguments the tool can read (a graph "
              "launch); its checks cover every zone",
              KernelName(kernel).c_str());
    }
    return;
  }
  if (layout_first || args->params == nullptr) {
    LogNote(1,
            "check=kernel: the parameter layout of %s is unknown (a driver "
            "older than CUDA 12.4?); its checks cover every zone",
            KernelName(kernel).c_str());
  }
}

RecentLaunches::Entry Engine::RecordLaunch(
    uint64_t context, uint64_t stream, uint32_t kernel, const LaunchArgs* args,
    std::vector<ArgWord>* words, bool* layout_first, bool capture_site) {
  RecentLaunches::Entry e;
  e.kernel = kernel;
  e.stream = stream;
  e.context = context;
  e.time_ns = NowNs();
  if (args != nullptr) {
    std::copy(args->dims.grid, args->dims.grid + 3, e.grid);
    std::copy(args->dims.block, args->dims.block + 3, e.block);
    // The parameter layout is asked once per function and cached (only
    // `kernelParams` needs it: `extra` carries the packed buffer and its
    // size); the words are what a report at a sticky error resolves to
    // blocks, and what a per-kernel check follows.
    const ParamLayout* layout =
        args->params == nullptr
            ? nullptr
            : param_layouts_.Get(GetParamLayoutSource(), args->kind,
                                 args->function, layout_first);
    // The record keeps the first few; only a per-kernel check (check=kernel,
    // or a suspect's) follows them all (a PyTorch kernel's parameters run
    // to a kilobyte).
    const bool follows_all =
        guard_.MayCheckKernel(kernel) && guard_.HasGuardedBlocks();
    e.args_read = ReadArgWords(*args, layout, words,
                               follows_all ? std::numeric_limits<size_t>::max()
                                           : RecentLaunches::kArgWords);
    for (const ArgWord& w : *words) {
      if (e.word_count == RecentLaunches::kArgWords) break;
      e.word_params[e.word_count] = w.param;
      e.words[e.word_count++] = w.value;
    }
  }
  // Where the program launched it, for the report at a sticky error: the
  // innermost frames only (a launch is hot; the full stack is not needed to
  // name the line). Not inside CUPTI callbacks (AfterLaunchDeferred): the
  // driver's frames sit above the program's there.
  if (capture_site && options_.stack_depth > 0) {
    int n = CaptureStack(e.site, RecentLaunches::kNativeSiteFrames);
    if (options_.python_stacks && n > 0) {
      n = SplicePythonFrames(e.site, n, RecentLaunches::kSiteFrames,
                             RecentLaunches::kPythonSiteFrames);
    }
    e.site_count = n > 0 ? static_cast<uint32_t>(n) : 0;
  }
  recent_launches_.Record(e);
  return e;
}

const std::vector<ArgWord>* Engine::ReachWords(
    const RecentLaunches::Entry& launch, const LaunchArgs* args,
    uint32_t kernel, std::vector<ArgWord>* words, bool layout_first) {
  // No guarded block yet, or no check for this kernel: an empty reach, so
  // the check costs nothing (not even the manager's lock).
  static const std::vector<ArgWord> kNone;
  if (!guard_.MayCheckKernel(kernel) || !guard_.HasGuardedBlocks()) {
    return &kNone;
  }
  if (launch.args_read) return words;
  SayArgsUnread(args, kernel, layout_first);
  return nullptr;  // the check covers every zone
}

void Engine::AfterLaunch(uint64_t context, uint64_t stream, uint32_t kernel,
                         const LaunchArgs* args) {
  SettleOwedChecks();
  // Reused across launches on this thread: no allocation per launch.
  thread_local std::vector<ArgWord> words;
  words.clear();
  bool layout_first = false;
  const RecentLaunches::Entry launch =
      RecordLaunch(context, stream, kernel, args, &words, &layout_first, true);
  std::vector<GuardFinding> findings;
  guard_.AfterLaunch(context, stream, kernel,
                     ReachWords(launch, args, kernel, &words, layout_first),
                     &findings);
  ReportFindings(findings);
}

// Inside a CUPTI exit callback the program's launch call is still in
// progress in the driver, and the tool makes no CUDA call there (check=kernel
// under injection alone hung on the H200 when it did): bookkeeping only.
void Engine::AfterLaunchDeferred(uint64_t context, uint64_t stream,
                                 uint32_t kernel, const LaunchArgs* args) {
  std::vector<ArgWord> words;
  bool layout_first = false;
  const RecentLaunches::Entry launch =
      RecordLaunch(context, stream, kernel, args, &words, &layout_first, false);
  guard_.NoteLaunchDeferred(
      context, stream, kernel,
      ReachWords(launch, args, kernel, &words, layout_first));
}

void Engine::SettleOwedChecks() {
  std::vector<GuardFinding> findings;
  guard_.SettleOwedChecks(&findings);
  ReportFindings(findings);
}

void Engine::OnSynchronized(uint64_t context) {
  SettleOwedChecks();
  // Frees seen inside CUPTI callbacks wait for a flush of
  // the activity records; a synchronization outside them is a safe place.
  if (suspect_count_.load(std::memory_order_acquire) != 0) {
    ReconcileActivity(/*flush=*/true);
  }
  std::vector<GuardFinding> findings;
  guard_.OnSynchronized(context, 0, /*device_wide=*/true, &findings);
  ReportFindings(findings);
  MaybeSampleGrowth();
}

void Engine::OnStreamSynchronized(uint64_t context, uint64_t stream) {
  SettleOwedChecks();
  std::vector<GuardFinding> findings;
  guard_.OnSynchronized(context, stream, /*device_wide=*/false, &findings);
  ReportFindings(findings);
  MaybeSampleGrowth();
}

void Engine::BeforeStreamDestroy(uint64_t stream) {
  std::vector<GuardFinding> findings;
  guard_.ReleaseHeldOnStream(stream, &findings);
  ReportFindings(findings);
}

void Engine::CheckAllZones(absl::string_view reason) {
  // After a sticky CUDA error the context is lost; the crash
  // report says the zones went unchecked.
  if (ContextLost()) return;
  SettleOwedChecks();
  std::vector<GuardFinding> findings;
  guard_.CheckAll(reason, &findings);
  ReportFindings(findings);
}

std::optional<uint64_t> Engine::PrepareIpcExport(uint64_t address) {
  std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  if (!r || !r->guarded()) return address;
  // CUDA exports the whole allocation for any address inside it; one in a
  // redzone is in no allocation of the program's.
  if (address < r->address || address - r->address >= r->bytes) {
    return std::nullopt;
  }
  return guard_.PrepareIpcExport(*r);
}

uint64_t Engine::IpcUserAddress(uint64_t context, uint64_t raw_base,
                                uint64_t* user_bytes) {
  return guard_.IpcUserAddress(context, raw_base, user_bytes);
}

void Engine::BeforeContextTeardown(int device, uint64_t context) {
  if (exiting_.load(std::memory_order_acquire)) return;
  SettleOwedChecks();
  std::vector<GuardFinding> findings;
  guard_.BeforeTeardown(device, context, &findings);
  ReportFindings(findings);
}

}  // namespace gmt
