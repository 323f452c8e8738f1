#include "lib/engine/engine.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "lib/core/clock.h"
#include "lib/core/driver_callback.h"
#include "lib/core/log.h"
#include "lib/core/sticky_errors.h"
#include "lib/core/tool_time.h"
#include "lib/engine/crash_handler.h"
#include "lib/engine/error_reports.h"
#include "lib/guard/guard_layout.h"
#include "lib/health/xid_watch.h"
#include "lib/registry/nvtx_ranges.h"
#include "lib/report/report_assembly.h"
#include "lib/report/report_output.h"
#include "lib/stacks/python_frames.h"
#include "lib/stacks/stack_capture.h"

namespace gmt {
namespace {

std::atomic<Engine*> g_engine{nullptr};

}  // namespace

std::vector<std::string> ProgramArgv() {
  std::vector<std::string> argv;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  return argv;
}

Engine& Engine::Get() {
  static Engine* const engine = [] {
    ScopedToolTime timed(ToolPhase::kEngine);
    NowNs();
    SinceStartNs(0);  // pins the start time
    // Debian's Abseil is built with its mutex deadlock detector on: a global
    // lock and a graph walk on every lock/unlock, a third of a tracked call.
    // Our lock order is documented and simple (no nesting but fifo -> none).
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    WarmUpStackCapture();
    auto* e = new Engine(GlobalOptions());
    g_engine.store(e, std::memory_order_release);
    InstallCrashHandlers(e->options());
    // The child of a fork keeps none of the tool's work: see tracking().
    pthread_atfork(nullptr, nullptr, [] {
      if (Engine* engine = IfCreated()) {
        engine->forked_child_.store(true, std::memory_order_relaxed);
      }
    });

    LogNote(1, "tracking CUDA allocations (stack_depth=%lld)",
            static_cast<long long>(e->options().stack_depth));
    return e;
  }();
  return *engine;
}

Engine* Engine::IfCreated() { return g_engine.load(std::memory_order_acquire); }

Engine::Engine(const Options& options, DeviceOps* ops)
    : options_(options),
      owner_pid_(getpid()),
      pointers_(static_cast<size_t>(options.freed_history)),
      vmm_handles_(
          static_cast<size_t>(std::min<int64_t>(options.freed_history, 4096))),
      guard_(options, options.enabled ? ops : nullptr),
      timeline_(TimelineCapacity(options)),
      growth_(GrowthTracker::Config{
          static_cast<uint32_t>(options.growth_samples),
          static_cast<uint64_t>(options.growth_min_bytes)}) {
  // Suppressions: a bad file is said once, and then no rule applies.
  if (!options_.suppressions.empty() &&
      !Suppressions::Load(options_.suppressions, &suppressions_,
                          &suppressions_error_)) {
    LogError("%s; no suppressions apply", suppressions_error_.c_str());
  }
}

void Engine::ReportFindings(const std::vector<GuardFinding>& findings) {
  for (const GuardFinding& f : findings) ReportGuardFinding(*this, f);
}

StackId Engine::CaptureCallStack() {
  if (options_.stack_depth <= 0) return kNoStack;
  uintptr_t frames[kMaxStackFrames];
  const int depth = static_cast<int>(options_.stack_depth);
  // One capture in kStackSampleEvery per thread is timed by part
  // (verbosity=1 logs the averages at exit).
  const bool timed = StackCaptureSampled();
  const int64_t start = timed ? PreciseNowNs() : 0;
  int n = CaptureStack(frames, depth);
  const int64_t unwound = timed ? PreciseNowNs() : 0;
  if (options_.python_stacks) {
    // The script's frames after the framework's, up to `depth` of them.
    n = SplicePythonFrames(frames, n, std::min(n + depth, kMaxStackFrames));
  }
  const int64_t spliced = timed ? PreciseNowNs() : 0;
  const StackId id = depot_.Put(frames, n);
  if (timed) {
    AddStackCaptureSample(unwound - start, spliced - unwound,
                          PreciseNowNs() - spliced);
  }
  return id;
}

void Engine::HideToolModule(const void* address) {
  uintptr_t begin = 0, end = 0;
  if (ModuleTextRange(address, &begin, &end)) SetToolTextRange(begin, end);
}

void Engine::HideCallbackModule(const void* address) {
  HideModuleFrames(address);
}

int Engine::NvtxRangePush(absl::string_view name) { return NvtxPush(name); }

int Engine::NvtxRangePop() { return NvtxPop(); }

uint64_t Engine::HiddenDeviceBytes(int device) const {
  return usage_.RedzoneBytes(device) + guard_.HeldBytes(device);
}

Registry& Engine::RegistryFor(MemoryKind kind) {
  return kind == MemoryKind::kVmmPhysical ? vmm_handles_ : pointers_;
}

namespace {

// The device memory the tool added around `record`: its redzones, as they
// show in the device's free memory.
int64_t RedzoneBytes(const AllocationRecord& record) {
  return record.guarded() ? static_cast<int64_t>(AddedFootprint(
                                record.api, record.bytes, record.raw_bytes))
                          : 0;
}

}  // namespace

void Engine::AccountFree(const AllocationRecord& record) {
  if (CountsTowardsUsage(record.kind)) usage_.Sub(record.device, record.bytes);
  if (record.guarded()) {
    usage_.AddRedzones(record.device, -RedzoneBytes(record));
  }
  RecordTimeline(TimelineKind::kFree, record);
  EndNvtxMemIn(record);  // A pool's heaps and regions in it
}

void Engine::OnAlloc(const AllocEvent& event) {
  // cudaMalloc(&p, 0) succeeds with p == nullptr: no block.
  if (event.address == 0) return;
  // Made on a stream being captured, it is a graph memory
  // node; its block appears when the graph is launched (engine_graph.cc).
  if (DivertCapturedAlloc(event)) return;
  // The first allocation has returned, so the CUDA runtime has initialized and
  // registered its exit handler: ours, registered now, runs before it.
  static const bool exit_hook_registered = [] {
    std::atexit([] {
      // A fatal signal being reported by another thread ends the process
      // as it would without the tool, not this exit.
      WaitForCrashReportOfAnotherThread();
      if (Engine* engine = IfCreated(); engine && !engine->forked_child()) {
        engine->MarkExiting();
        // The Xid watcher leaves its wait while the checks and the scan
        // below run; the report then does not wait for it.
        RequestXidWatchStop();
        // Allocations only CUPTI's activity records saw,
        // while CUPTI still answers (its own exit handlers run after this).
        engine->ReconcileActivity(/*flush=*/true);
        // The last check while the runtime still answers: its own exit
        // handler, registered before ours, runs after this one.
        engine->CheckAllZones("exit");
        // Before the static destructors of libraries loaded before
        // CUDA was first used (PyTorch's caching allocator) run.
        engine->ScanReachability();
      }
    });
    return true;
  }();
  (void)exit_hook_registered;
  AllocationRecord record;
  record.address = event.address;
  record.bytes = event.bytes;
  record.raw_address = event.raw_address;
  record.raw_bytes = event.raw_bytes;
  record.stream = event.stream;
  record.context = event.context;
  record.time_ns = NowNs();
  record.stack = event.stack;
  record.thread = CurrentThreadIndex();
  record.device = event.device;
  record.api = event.api;
  record.kind = ApiMemoryKind(event.api);
  if (options_.torch) {  // counted for the report's tensor-mode note only
    switch (FamilyOf(event.api)) {
      case GuardFamily::kAsync:
        stream_ordered_allocations_.fetch_add(1, std::memory_order_relaxed);
        break;
      case GuardFamily::kDevice:
        device_allocations_.fetch_add(1, std::memory_order_relaxed);
        break;
      default:
        break;
    }
  }
  record.nvtx_range = options_.nvtx ? NvtxCurrentRange() : kNoNvtxRange;
  if (record.nvtx_range != kNoNvtxRange) {
    NvtxCountAlloc(record.nvtx_range, record.bytes);
  }
  if (CountsTowardsUsage(record.kind)) usage_.Add(record.device, record.bytes);
  if (record.guarded()) usage_.AddRedzones(record.device, RedzoneBytes(record));
  RecordTimeline(TimelineKind::kAlloc, record);
  std::optional<AllocationRecord> replaced =
      RegistryFor(record.kind).Insert(record);
  if (replaced) {
    // CUDA handed out an address we still thought live: its free went unseen
    // (a path we do not intercept). Count it freed rather than leak it.
    AccountFree(*replaced);
    untracked_frees_.fetch_add(1, std::memory_order_relaxed);
    LogNote(1, "0x%llx reused before a free was seen",
            static_cast<unsigned long long>(record.address));
  }
  if (record.guarded()) guard_.Arm(record);
}

FreeTicket Engine::BeginFree(Api api, uint64_t address, StackId stack,
                             uint64_t stream) {
  FreeTicket ticket;
  ticket.api = api;
  ticket.address = address;
  ticket.real_address = address;
  ticket.stack = stack;
  if (address == 0) return ticket;  // freeing null is a no-op in CUDA
  // A stream-ordered free captured into a graph is a free
  // node; the graph's launch applies it (engine_graph.cc).
  if (IsCapturedGraphFree(api, address, stream)) return ticket;
  const uint32_t releasable = ApiReleasableKinds(api);
  Registry& registry = releasable == KindBit(MemoryKind::kVmmPhysical)
                           ? vmm_handles_
                           : pointers_;
  // Removed and remembered as freed in one step, before the real free, so the
  // address cannot be handed out and inserted again in between. If CUDA then
  // refuses, EndFree puts the block back (the stale history entry is harmless:
  // history is only consulted for blocks that are not live).
  FreedRecord freed;
  freed.free_stack = stack;
  freed.free_thread = CurrentThreadIndex();
  freed.free_time_ns = NowNs();
  freed.free_api = api;
  Registry::TakeResult taken = registry.Take(address, releasable, freed);
  // Nothing live there, but CUPTI's activity records may know
  // an allocation no hook saw; it is added, and this free is an ordinary one.
  if (taken.outcome == Registry::TakeResult::Outcome::kAbsent &&
      &registry == &pointers_ &&
      ExplainUnknownFree(address, /*flush=*/!InDriverCallback())) {
    taken = registry.Take(address, releasable, freed);
  }
  switch (taken.outcome) {
    case Registry::TakeResult::Outcome::kTaken:
      ticket.state = FreeTicket::State::kRemoved;
      break;
    case Registry::TakeResult::Outcome::kWrongKind:
      ticket.state = FreeTicket::State::kMismatch;
      break;
    case Registry::TakeResult::Outcome::kAbsent:
      ticket.state = FreeTicket::State::kUnknown;
      break;
  }
  ticket.record = taken.record;
  if (ticket.state == FreeTicket::State::kUnknown && guard_.ops() != nullptr) {
    // See FreeTicket::rejected.
    std::optional<AllocationRecord> live = pointers_.FindContaining(address);
    if ((live && live->guarded() && live->raw_address == address) ||
        guard_.HoldsRaw(address)) {
      ticket.rejected = true;
    }
  }
  if (ticket.state == FreeTicket::State::kRemoved && ticket.record.guarded()) {
    ticket.real_address = ticket.record.raw_address;
    std::vector<GuardFinding> findings;
    const bool synchronous_free =
        api == Api::kCudaFree || api == Api::kCuMemFree;
    const bool stream_ordered_free =
        api == Api::kCudaFreeAsync || api == Api::kCuMemFreeAsync;
    if ((synchronous_free && guard_.TryHold(ticket.record, freed, &findings)) ||
        (stream_ordered_free &&
         guard_.TryHoldOrdered(ticket.record, freed, stream))) {
      ticket.held = true;
    } else {
      if (synchronous_free) guard_.NoteSynchronousPoolFree(ticket.record);
      guard_.BeforeRealFree(ticket.record, stream, &findings);
    }
    ReportFindings(findings);
  }
  return ticket;
}

void Engine::EndFree(const FreeTicket& ticket, bool succeeded, int cuda_result,
                     const char* cuda_result_name) {
  // A free is a common place for a sticky error to surface.
  if (IsStickyCudaError(cuda_result)) {
    const bool runtime = absl::StartsWith(ApiName(ticket.api), "cuda");
    OnStickyError(ApiName(ticket.api), cuda_result,
                  runtime ? StickyRuntimeErrorName(cuda_result)
                          : StickyDriverErrorName(cuda_result));
  }
  switch (ticket.state) {
    case FreeTicket::State::kIgnored:
      return;
    case FreeTicket::State::kRemoved: {
      Registry& registry = RegistryFor(ticket.record.kind);
      if (ticket.held) {
        // In quarantine: freed for the program; CUDA gets it back later.
        AccountFree(ticket.record);
        std::vector<GuardFinding> findings;
        guard_.EvictOverBudget(&findings);
        ReportFindings(findings);
        return;
      }
      if (ticket.record.guarded()) {
        guard_.AfterRealFree(ticket.record, succeeded);
      }
      if (!succeeded) {
        // CUDA kept the block (e.g. an error from an earlier async launch
        // surfaced here): so do we.
        registry.Insert(ticket.record);
        return;
      }
      if (ticket.record.kind == MemoryKind::kVmmPhysical) {
        absl::MutexLock lock(&vmm_mu_);
        if (vmm_map_count_[ticket.address] > 0) {
          // Released while still mapped: the memory lives until the last
          // unmap. Keep counting it (and listing it as held) until then; the
          // handle itself is dead, so a second release is a double free.
          vmm_released_[ticket.address] = ticket.record;
          return;
        }
        vmm_map_count_.erase(ticket.address);
      }
      AccountFree(ticket.record);
      return;
    }
    case FreeTicket::State::kMismatch: {
      ReportApiMismatch(*this, ticket.api, ticket.stack, ticket.record,
                        cuda_result, cuda_result_name);
      if (succeeded) {
        // CUDA accepted it anyway: the block is gone, and a later free of it
        // is a double free.
        FreedRecord freed;
        freed.free_stack = ticket.stack;
        freed.free_thread = CurrentThreadIndex();
        freed.free_time_ns = NowNs();
        freed.free_api = ticket.api;
        Registry::TakeResult taken =
            RegistryFor(ticket.record.kind)
                .Take(ticket.address, KindBit(ticket.record.kind), freed);
        if (taken.outcome == Registry::TakeResult::Outcome::kTaken) {
          AccountFree(taken.record);
        }
      }
      return;
    }
    case FreeTicket::State::kUnknown: {
      Registry& registry =
          ApiReleasableKinds(ticket.api) == KindBit(MemoryKind::kVmmPhysical)
              ? vmm_handles_
              : pointers_;
      // CUDA accepting a synchronous free means it knew a live block there:
      // the address came back through a path we do not see (graph memory
      // nodes, a call made before the tool loaded). Not the program's error.
      // Stream-ordered frees are checked later by CUDA, so their success
      // proves nothing.
      const bool async_free = ticket.api == Api::kCudaFreeAsync ||
                              ticket.api == Api::kCuMemFreeAsync;
      // Graph memory whose launch the tool did not see (or
      // saw freed by an earlier launch's free node). CUDA's verdict stands
      // for a synchronous free; a stream-ordered one is not an error of the
      // program's that the tool can prove.
      if (graph_memory_.IsGraphAddress(ticket.address) &&
          (succeeded || async_free)) {
        untracked_frees_.fetch_add(1, std::memory_order_relaxed);
        LogNote(1, "%s of graph memory 0x%llx the tool did not see allocated",
                std::string(ApiName(ticket.api)).c_str(),
                static_cast<unsigned long long>(ticket.address));
        return;
      }
      // Inside a CUPTI callback, CUPTI's record of an
      // allocation no hook saw may not be handed over yet; the verdict waits
      // for the next reconciliation, which flushes (engine_activity.cc).
      if (!(succeeded && !async_free) &&
          DeferUnknownFree(ticket, succeeded, cuda_result, cuda_result_name)) {
        return;
      }
      if (succeeded && !async_free) {
        untracked_frees_.fetch_add(1, std::memory_order_relaxed);
        LogNote(1, "%s of untracked 0x%llx",
                std::string(ApiName(ticket.api)).c_str(),
                static_cast<unsigned long long>(ticket.address));
        return;
      }
      if (std::optional<FreedRecord> previous =
              registry.FindFreed(ticket.address)) {
        ReportDoubleFree(*this, ticket.api, ticket.address, ticket.stack,
                         *previous, cuda_result, cuda_result_name);
        return;
      }
      std::optional<AllocationRecord> containing =
          registry.FindContaining(ticket.address);
      if (containing) {
        ReportInvalidFree(*this, ticket.api, ticket.address, ticket.stack,
                          &*containing, cuda_result, cuda_result_name);
        return;
      }
      if (succeeded) {
        untracked_frees_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      ReportInvalidFree(*this, ticket.api, ticket.address, ticket.stack,
                        nullptr, cuda_result, cuda_result_name);
      return;
    }
  }
}

void Engine::OnVmmMap(uint64_t va, uint64_t bytes, uint64_t handle) {
  absl::MutexLock lock(&vmm_mu_);
  vmm_mappings_[va] = VmmMapping{bytes, handle};
  ++vmm_map_count_[handle];
}

void Engine::FreeVmmHandleIfDone(uint64_t handle) {
  auto count = vmm_map_count_.find(handle);
  if (count != vmm_map_count_.end() && count->second > 0) return;
  auto released = vmm_released_.find(handle);
  if (released == vmm_released_.end()) return;
  AccountFree(released->second);
  vmm_released_.erase(released);
  vmm_map_count_.erase(handle);
}

void Engine::OnVmmUnmap(uint64_t va, uint64_t bytes) {
  absl::MutexLock lock(&vmm_mu_);
  std::vector<uint64_t> touched;
  for (auto it = vmm_mappings_.begin(); it != vmm_mappings_.end();) {
    if (it->first >= va && it->first < va + bytes) {
      uint64_t handle = it->second.handle;
      if (--vmm_map_count_[handle] <= 0) touched.push_back(handle);
      vmm_mappings_.erase(it++);
    } else {
      ++it;
    }
  }
  for (uint64_t handle : touched) FreeVmmHandleIfDone(handle);
}

void Engine::OnContextTeardown(int device, uint64_t context,
                               absl::string_view reason) {
  // During exit the runtime may drop its contexts itself: that is not the
  // program resetting a device, and what is live then is plainly leaked.
  if (exiting_.load(std::memory_order_acquire)) return;
  // Contexts to drop: the one named, or every context seen on the device (so
  // that its pinned host blocks, which carry device -1, go too).
  absl::flat_hash_map<uint64_t, bool> contexts;
  if (context != 0) {
    contexts[context] = true;
  } else {
    for (const AllocationRecord& r : pointers_.Live()) {
      if (r.device == device && r.context != 0) contexts[r.context] = true;
    }
  }
  std::vector<AllocationRecord> dropped =
      pointers_.EraseIf([&](const AllocationRecord& r) {
        // Address reservations (and physical handles, kept apart) belong to
        // the process, not to a context: they outlive its destruction and
        // the program still frees them with cuMemAddressFree.
        if (r.kind == MemoryKind::kVmmReservation) return false;
        if (r.kind == MemoryKind::kRegisteredHost) {
          // The user's own memory: only its registration ends.
          return r.context != 0 && contexts.contains(r.context);
        }
        if (r.context != 0) return contexts.contains(r.context);
        return context == 0 && r.device == device;
      });
  if (dropped.empty()) return;
  absl::MutexLock lock(&released_mu_);
  for (const AllocationRecord& r : dropped) {
    // Not a free by the program: usage drops, the free count does not.
    if (CountsTowardsUsage(r.kind)) usage_.Release(r.device, r.bytes);
    if (r.guarded()) usage_.AddRedzones(r.device, -RedzoneBytes(r));
    RecordTimeline(TimelineKind::kFree, r);
    EndNvtxMemIn(r);  // a pool's NVTX heaps and regions in it
    released_.push_back(ReleasedBlock{r, std::string(reason)});
  }
  LogNote(1, "%s released %zu blocks", std::string(reason).c_str(),
          dropped.size());
}

bool Engine::DeviceKnown(int device) const {
  absl::MutexLock lock(&devices_mu_);
  return devices_.contains(device);
}

void Engine::NoteDevice(int device, absl::string_view name,
                        uint64_t total_bytes) {
  absl::MutexLock lock(&devices_mu_);
  devices_.try_emplace(device, DeviceInfo{std::string(name), total_bytes});
}

void Engine::RecordError(ErrorRecord error) {
  constexpr size_t kMaxStoredErrors = 10000;
  std::string text;
  bool suppressed = false;
  {
    absl::MutexLock lock(&errors_mu_);
    // A suppressed error is stored (the report counts it as suppressed) but
    // neither printed nor halting.
    const bool check_rules = !suppressions_.empty();
    if (options_.print_errors || check_rules) {
      std::vector<StackId> ids = {error.stack};
      if (error.allocation) ids.push_back(error.allocation->stack);
      if (error.previous_free) ids.push_back(error.previous_free->free_stack);
      if (error.oom) {  // The holders' call sites
        for (const auto& h : error.oom->holders) ids.push_back(h.stack);
      }
      SymbolizeInto(ids, &printed_stacks_);
      suppressed =
          check_rules && suppressions_.MatchError(error, printed_stacks_) >= 0;
    }
    if (options_.print_errors && !suppressed) {
      error.suppression = SuggestSuppression(error, printed_stacks_);
      text = RenderErrorText(error, printed_stacks_, getpid());
    }
    if (errors_.size() < kMaxStoredErrors) {
      errors_.push_back(std::move(error));
    } else {
      ++errors_dropped_;
    }
  }
  if (!text.empty()) WriteStderr(text.data(), text.size());
  if (options_.halt_on_error && !suppressed) {
    LogError("halt_on_error=1: writing the report and aborting");
    FinalReport();
    std::abort();
  }
}

uint64_t Engine::ErrorCount() const {
  absl::MutexLock lock(&errors_mu_);
  return errors_.size() + errors_dropped_;
}

std::vector<AllocationRecord> Engine::LiveAllocations() const {
  std::vector<AllocationRecord> live = pointers_.Live();
  std::vector<AllocationRecord> handles = vmm_handles_.Live();
  live.insert(live.end(), handles.begin(), handles.end());
  absl::MutexLock lock(&vmm_mu_);
  for (const auto& [handle, record] : vmm_released_) live.push_back(record);
  return live;
}

void Engine::SymbolizeInto(const std::vector<StackId>& ids, StackTable* table) {
  for (StackId id : ids) {
    if (id == kNoStack || table->contains(id)) continue;
    (*table)[id] = SymbolizeStack(id);
  }
}

std::vector<SymbolizedFrame> Engine::SymbolizeStack(StackId id) {
  if (options_.symbolize) return symbolizer_.SymbolizeStack(depot_.Get(id));
  std::vector<SymbolizedFrame> frames;
  for (uintptr_t pc : depot_.Get(id)) frames.push_back({pc, "", "", 0, ""});
  return frames;
}

std::string Engine::SiteName(StackId id) {
  if (id == kNoStack) return "";
  for (const SymbolizedFrame& f : SymbolizeStack(id)) {
    if (!f.function.empty()) return FrameSiteText(f);
  }
  return "";
}

ReportData Engine::BuildReport(absl::string_view reason) {
  return AssembleReport(TakeReportState(reason),
                        [this](StackId id) { return SymbolizeStack(id); });
}

ReportState Engine::TakeReportState(absl::string_view reason) {
  ReportState state;
  state.version = GMT_VERSION;
  // The traced process, also in the child that writes a crash report.
  state.pid = owner_pid_;
  state.argv = ProgramArgv();
  state.reason = std::string(reason);
  state.leak_check = options_.leak_check;
  state.reachability_max_ms = options_.reachability_max_ms;
  state.reachability_max_bytes = options_.reachability_max_bytes;
  state.timeline_events = options_.timeline_events;
  // The blocks live now: the torch snapshot's segments, the HTML's call
  // sites. Cheap, so kept even with timeline_events=0.
  state.wants_live_blocks = options_.report.Has(ReportFormat::kHtml) ||
                            options_.report.Has(ReportFormat::kTrace) ||
                            options_.report.Has(ReportFormat::kTorch);
  state.stack_depth = options_.stack_depth;
  state.symbolize = options_.symbolize;
  state.fast_unwinder = FastUnwinderLoaded();
  state.torch_mode = options_.torch;
  state.stream_ordered_allocations =
      stream_ordered_allocations_.load(std::memory_order_relaxed);
  state.segment_allocations =
      device_allocations_.load(std::memory_order_relaxed);
  // Asked only when stacks are symbolized: the answer loads libdw.
  state.line_info = options_.stack_depth <= 0 || !options_.symbolize ||
                    symbolizer_.HasLineInfo();
  {
    absl::MutexLock lock(&devices_mu_);
    absl::flat_hash_map<int, const DeviceInfo*> noted;
    for (const auto& [index, info] : devices_) noted[index] = &info;
    for (int d = 0; d < Usage::kMaxDevices; ++d) {
      if (usage_.Used(d) && !noted.contains(d)) noted[d] = nullptr;
    }
    for (const auto& [index, info] : noted) {
      ReportState::Device device;
      device.index = index;
      if (info != nullptr) {
        device.name = info->name;
        device.total_bytes = info->total_bytes;
      }
      device.usage = usage_.Get(index);
      state.devices.push_back(std::move(device));
    }
  }
  state.host = usage_.Get(kHostDevice);
  state.untracked_frees = untracked_frees_.load(std::memory_order_relaxed);
  state.live = LiveAllocations();
  {
    absl::MutexLock lock(&released_mu_);
    state.released = released_;
  }
  {
    absl::MutexLock lock(&errors_mu_);
    state.errors = errors_;
    state.errors_dropped = errors_dropped_;
  }
  const GuardStats g = guard_.Stats();
  ReportData::Guard& guard = state.guard;
  guard.enabled = guard_.ops() != nullptr;
  guard.check = std::string(OptionValueText(options_.check));
  guard.guarded = g.guarded;
  guard.unguarded_oom = g.unguarded_oom;
  guard.unguarded_capture = g.unguarded_capture;
  guard.unguarded_refused = g.unguarded_refused;
  guard.unguarded_shareable = g.unguarded_shareable;
  guard.checks = g.checks;
  guard.check_failures = g.check_failures;
  guard.fill_failures = g.fill_failures;
  guard.bytes_checked = g.bytes_checked;
  guard.quarantine_bytes = g.held_bytes;
  guard.evicted = g.evicted;
  guard.reused = g.reused;
  guard.reused_in_flight = g.reused_in_flight;
  TakeLeakAnalysisState(&state);  // reachability, growth (engine_leaks.cc)
  // After the live blocks: the range names cover the ids they carry.
  state.nvtx_seen = NvtxSeen();
  state.nvtx_ranges = NvtxTotals();
  TakeNvtxMemState(&state);   // pool allocators' regions (engine_nvtx_mem.cc)
  TakeCrashState(&state);     // try-locks (engine_crash.cc)
  TakeTimelineState(&state);  // memory over time (engine_timeline.cc)
  TakeHealthState(reason, &state);  // NVML, never at a crash (engine_oom.cc)
  state.suppressions = suppressions_;
  state.suppressions_error = suppressions_error_;
  state.activity_stopped_at_pool_import =
      activity_stopped_.load(std::memory_order_acquire);
  state.pool_export_starts_refused =
      pool_export_starts_refused_.load(std::memory_order_relaxed);
  return state;
}

ReportData::Summary Engine::WriteReport(absl::string_view reason) {
  absl::MutexLock lock(&report_mu_);
  ReportData data = BuildReport(reason);
  data.earlier_printed = earlier_printed_;
  WriteReportOutputs(data, options_);
  // The report at a CUDA error is the process's report: printed in full on
  // stderr, later ones refer to it rather than print it all again.
  if (reason == "cuda-error" && TextReportToStderr(options_)) {
    earlier_printed_.reason = std::string(reason);
    earlier_printed_.at_s = static_cast<double>(SinceStartNs(NowNs())) / 1e9;
    earlier_printed_.errors = data.summary.errors;
  }
  return data.summary;
}

void Engine::FinalReport() {
  if (final_done_.exchange(true)) return;
  // A fork()ed child inherits the parent's picture; CUDA does not work in it,
  // so an exit report there would repeat the parent's leaks as its own.
  if (getpid() != owner_pid_) {
    LogNote(1, "forked child %d: no exit report (the parent writes it)",
            getpid());
    return;
  }
  ScanReachability();  // No-op when the atexit hook ran it
  ReportData::Summary summary;
  {
    ScopedToolTime timed(ToolPhase::kExitReport);
    summary = WriteReport("exit");
  }
  LogNote(1, "tool time: %s", ToolTimeText().c_str());
  if (const std::string calls = ToolCallText(); !calls.empty()) {
    LogNote(1, "%s", calls.c_str());
  }
  if (const std::string work = ToolGpuWorkText(); !work.empty()) {
    LogNote(1, "%s", work.c_str());
  }
  if (guard_.ReusesBlocks() || guard_.ReusesDeviceBlocks()) {
    // Why allocations went to CUDA that a checked block could have served:
    // what decides how much of a step reuse can take off (the reasons are
    // looked for among stream-ordered allocations only).
    const GuardStats g = guard_.Stats();
    if (g.reused + g.reuse_misses > 0) {
      LogNote(1,
              "reuse of checked blocks: %llu allocations served (%llu on "
              "their check's stream before it answered), %llu not; "
              "of %llu of those looked at, %llu had no block of their size "
              "with the tool, %llu one in quarantine still, %llu one whose "
              "check had not answered",
              static_cast<unsigned long long>(g.reused),
              static_cast<unsigned long long>(g.reused_in_flight),
              static_cast<unsigned long long>(g.reuse_misses),
              static_cast<unsigned long long>(g.reuse_miss_none) +
                  g.reuse_miss_quarantine + g.reuse_miss_checking,
              static_cast<unsigned long long>(g.reuse_miss_none),
              static_cast<unsigned long long>(g.reuse_miss_quarantine),
              static_cast<unsigned long long>(g.reuse_miss_checking));
    }
  }
  if (const GuardStats g = guard_.Stats(); g.suspects > 0) {
    LogNote(1,
            "suspect checks: %llu kernels checked after each launch since a "
            "finding named them among others, %llu checks",
            static_cast<unsigned long long>(g.suspects),
            static_cast<unsigned long long>(g.suspect_checks));
  }
  if (const std::string stacks = StackCaptureText(); !stacks.empty()) {
    LogNote(1, "%s", stacks.c_str());
  }
  if (const std::string fills = ProgramStreamFillText(); !fills.empty()) {
    LogNote(1, "%s", fills.c_str());
  }
  if (options_.exitcode != 0 && (summary.errors > 0 || summary.leaks > 0)) {
    // _exit skips stdio's flush at the end of exit(): flush the program's
    // buffered output first (seen on the H200: oob_slack's one line, piped,
    // was lost under exitcode=9).
    std::fflush(nullptr);
    _exit(static_cast<int>(options_.exitcode));
  }
}

}  // namespace gmt
