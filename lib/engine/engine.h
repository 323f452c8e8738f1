// Engine: the one narrow internal API that front ends (interpose/ shims, later
// CUPTI injection) call. It knows nothing of how a call arrived.
//
// Free protocol (a block is removed *before* the real free, so its address
// cannot be handed out again and inserted by another thread in between, and put
// back if CUDA refuses the free):
//
//   FreeTicket t = engine.BeginFree(Api::kCudaFree, ptr, stack);
//   cudaError_t r = real_cudaFree(ptr);
//   engine.EndFree(t, r == cudaSuccess, r, "cudaErrorInvalidValue");
//
// Thread safety: every member is thread-safe.
#ifndef GMT_LIB_ENGINE_ENGINE_H_
#define GMT_LIB_ENGINE_ENGINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "lib/core/api.h"
#include "lib/core/options.h"
#include "lib/engine/crash_handler.h"
#include "lib/guard/guard_manager.h"
#include "lib/guard/guarded_alloc.h"
#include "lib/health/oom_diagnosis.h"
#include "lib/launch/launch_args.h"
#include "lib/launch/launch_reach.h"
#include "lib/launch/param_layout.h"
#include "lib/leaks/growth.h"
#include "lib/registry/graph_memory.h"
#include "lib/registry/mem_pools.h"
#include "lib/registry/memory_activity.h"
#include "lib/registry/nvtx_mem_regions.h"
#include "lib/registry/recent_launches.h"
#include "lib/registry/registry.h"
#include "lib/registry/timeline.h"
#include "lib/registry/usage.h"
#include "lib/report/errors.h"
#include "lib/report/report.h"
#include "lib/report/report_state.h"
#include "lib/report/suppressions.h"
#include "lib/stacks/kernel_names.h"
#include "lib/stacks/stack_depot.h"
#include "lib/stacks/symbolizer.h"

namespace gmt {

struct AllocEvent {
  Api api = Api::kUnknown;
  uint64_t address = 0;  // user pointer; the handle for arrays and cuMemCreate
  uint64_t bytes = 0;
  int32_t device = kHostDevice;
  uint64_t stream = 0;
  uint64_t context = 0;
  StackId stack = kNoStack;
  // Guarded: the raw block CUDA returned (address is the user's pointer).
  uint64_t raw_address = 0;
  uint64_t raw_bytes = 0;
};

// A live block as the program sees it, and the raw block behind it when the
// tool added redzones (raw_address == user_address, raw_bytes == user_bytes
// otherwise).
struct BlockView {
  uint64_t user_address = 0;
  uint64_t user_bytes = 0;
  uint64_t raw_address = 0;
  uint64_t raw_bytes = 0;
  bool guarded = false;
  Api api = Api::kUnknown;
  MemoryKind kind = MemoryKind::kDevice;
  int32_t device = kHostDevice;
  uint64_t context = 0;
};

// What a copy/set shim does after Engine::CheckAccess.
enum class AccessVerdict : uint8_t {
  kForward,  // call CUDA as the program asked
  kReject,   // return CUDA's invalid-value code without calling: the range
             // leaves the user's block but stays inside the tool's redzone,
             // where CUDA would wrongly accept it
};

struct FreeTicket {
  enum class State : uint8_t {
    kIgnored,   // null pointer, or tracking off: nothing to do
    kRemoved,   // a matching live block was removed; put back if CUDA refuses
    kMismatch,  // a live block of another kind (wrong free API); left in place
    kUnknown,   // no live block: double free or invalid free, decided at End
  };
  State state = State::kIgnored;
  Api api = Api::kUnknown;
  uint64_t address = 0;
  StackId stack = kNoStack;
  AllocationRecord record;  // the block, for kRemoved / kMismatch
  // The pointer to hand to CUDA's free: the raw block for a guarded one.
  uint64_t real_address = 0;
  // The tool keeps the block (quarantine): do not call CUDA; report success.
  bool held = false;
  // No live block starts at `address`, but it is the raw start of a
  // guarded block the tool still has (held in quarantine, or live with its
  // front redzone starting there). CUDA would accept it and free the tool's
  // block; without the tool that memory was freed already (or was never at
  // that address), so CUDA would refuse. Do not call CUDA; answer its
  // invalid-value code. (Seen with guard_front=0: a double cudaFree of a
  // quarantined block succeeded, went unreported, and the later eviction
  // freed the raw block a second time.)
  bool rejected = false;
};

// The traced program's command line (/proc/self/cmdline).
std::vector<std::string> ProgramArgv();

class Engine {
 public:
  // The process-wide engine, created on first use (the first intercepted CUDA
  // call) and never destroyed: reports run from destructors.
  static Engine& Get();
  // The engine if some call created it, else nullptr (no report noise for
  // programs that never touch CUDA).
  static Engine* IfCreated();

  // `ops`: the GPU side of guard zones (null: no redzones).
  explicit Engine(const Options& options, DeviceOps* ops = GetDeviceOps());
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Options& options() const { return options_; }
  // Whether calls are recorded: the option, and not in a fork()ed child. A
  // child's CUDA does not work and its picture is the parent's; its calls
  // are forwarded untouched, so it never waits on tool state that a thread
  // which did not survive the fork may have held.
  bool tracking() const {
    return options_.enabled && !forked_child_.load(std::memory_order_relaxed);
  }
  bool forked_child() const {
    return forked_child_.load(std::memory_order_relaxed);
  }

  // Captures the caller's stack (options().stack_depth frames) into the depot.
  StackId CaptureCallStack();

  // Frames of the module holding `address` (the tool's own, at load) are
  // dropped from the innermost end of every stack the tool captures.
  static void HideToolModule(const void* address);
  // The same for a module whose frames sit above the program's inside a
  // CUPTI callback (libcuda, libcupti).
  static void HideCallbackModule(const void* address);

  // explain_faults: arms the driver's GPU core dump at the library's load,
  // before the program's first CUDA call (lib/gpu_fault/gpu_dump_arming.h),
  // and removes the private folder it made at exit. The crash report at the
  // driver's SIGABRT reads the dump (ExplainGpuDump).
  static void ArmGpuDumpAtLoad();
  static void DisarmGpuDumpAtExit();

  // NVTX ranges (push/pop on the calling thread), for allocations' attribution
  // to the range open when they were made. Return the depth as NVTX does.
  static int NvtxRangePush(absl::string_view name);
  static int NvtxRangePop();

  // A successful allocation.
  void OnAlloc(const AllocEvent& event);

  // See the free protocol above. `cuda_result_name` may be null. `stream`:
  // for stream-ordered frees.
  FreeTicket BeginFree(Api api, uint64_t address, StackId stack,
                       uint64_t stream = 0);
  void EndFree(const FreeTicket& ticket, bool succeeded, int cuda_result,
               const char* cuda_result_name);

  // ---- Guard zones (lib/guard/guard_manager.h)
  // ------------------------------------------ The layout for a linear
  // allocation of `bytes` by `api` on `stream`, or nullopt when it is not
  // guarded (policy, size 0, stream capture).
  std::optional<GuardLayout> PlanGuard(Api api, uint64_t bytes,
                                       uint64_t stream = 0);
  // One linear allocation of `bytes` by `api` on `stream`, made through
  // `alloc` with redzones when PlanGuard says so, and retried (quarantine
  // given back, then unguarded) when CUDA refuses the bigger block
  // (lib/guard/guarded_alloc.h). The caller records a success (OnAlloc
  // with the raw block when guarded) and reports an out-of-memory failure.
  // `may_guard` false: the block must not get redzones (it may leave the
  // process: a shareable pool's, MemPools). `context`: the calling thread's
  // (0: unknown); a cudaMallocAsync there may be served, without `alloc`,
  // by a checked block the guard holds for reuse (GuardManager).
  GuardedAllocation AllocateLinear(Api api, uint64_t bytes, uint64_t stream,
                                   RawLinearAlloc alloc, bool may_guard = true,
                                   uint64_t context = 0);
  // The same for a pitched (2-D) or 3-D allocation of `rows` rows (slices)
  // of at least `least_row_bytes` each (0: never guarded).
  GuardedAllocation AllocateRows(Api api, uint64_t rows,
                                 uint64_t least_row_bytes, RawRowsAlloc alloc);
  // Out of memory with redzones: gives the quarantine back to CUDA. Returns
  // whether anything was released (a retry may succeed).
  bool ReleaseQuarantine();
  // Memory pool `pool` is about to be trimmed, or its USED_MEM_HIGH reset:
  // the stream-ordered blocks of that pool the guard holds go back to CUDA
  // (and their frees are waited for), so the trim releases, and the
  // watermark starts from, what it would without the tool. Other pools'
  // blocks stay held.
  void ReleaseHeldPoolBlocks(uint64_t pool);

  // Stream-ordered pools the program shares with other processes
  // (lib/registry/mem_pools.h): their blocks are never guarded.
  void OnMemPoolCreated(uint64_t pool, bool shareable) {
    mem_pools_.NoteCreated(pool, shareable);
  }
  void OnMemPoolDestroyed(uint64_t pool) { mem_pools_.NoteDestroyed(pool); }
  void OnDeviceMemPool(int device, uint64_t pool) {
    mem_pools_.NoteDevicePool(device, pool);
    guard_.NoteDevicePoolSet(device);
  }
  bool AnyShareablePool() const { return mem_pools_.AnyShareable(); }
  // `pool` 0: the pool `device` allocates from.
  bool PoolShareable(uint64_t pool, int device) const {
    return mem_pools_.Shareable(pool, device);
  }
  GuardManager& guard() { return guard_; }
  const GuardManager& guard() const { return guard_; }

  // The live block (device, managed or pinned) whose user range holds
  // `address`, or whose raw range does for a guarded block.
  std::optional<BlockView> FindBlock(uint64_t address) const;
  // The block holding `address` was shared outside the process (a dma-buf,
  // GPUDirect tokens) or given a pointer attribute that stays with its
  // memory: its block is never served to another allocation.
  void NoteBlockShared(uint64_t address);
  // The buffer id the program is told for `block` when the tool served it
  // a block an earlier allocation had (GuardManager::ReusedBufferId);
  // nullopt: CUDA's answer stands.
  std::optional<uint64_t> ReusedBufferId(const BlockView& block) const;

  // A copy or set through `call` (e.g. "cudaMemcpyAsync") touches
  // [address, address + bytes) of device/managed memory. Reports `api-bounds`
  // when the range leaves the block that holds `address`; see AccessVerdict.
  // Untracked addresses are kForward.
  AccessVerdict CheckAccess(absl::string_view call, uint64_t address,
                            uint64_t bytes);

  // A dma-buf export through `call` of [address, address + bytes): as
  // CheckAccess, except that CUDA exports any part of the pages it mapped
  // for a cudaMalloc / cuMemAlloc block (CudaMallocMappedBytes), past the
  // block's last byte too; such a range is CUDA's to judge, not an error.
  AccessVerdict CheckExportRange(absl::string_view call, uint64_t address,
                                 uint64_t bytes);
  // CUDA refused a dma-buf export at `address`. From a guarded
  // stream-ordered block's start it is counted for the report: CUDA
  // exports a pool block only from its own start, which the front redzone
  // moved (docs/transparency.md).
  void NoteExportRefused(uint64_t address);

  // Kernel names: an id per distinct demangled name (cheap to keep per launch).
  uint32_t InternKernel(absl::string_view name);
  std::string KernelName(uint32_t id) const;

  // Around every kernel launch on `stream` (0: the legacy stream) of
  // `context`: Before flushes pending canary fills; After logs the kernel for
  // attribution and, with check=kernel, enqueues a check on `stream` of the
  // blocks its arguments point into. `args`: the launch as the program made
  // it, valid during the call; null when its arguments are unknown (a graph
  // launch): the check then covers every zone.
  void BeforeLaunch(uint64_t context, uint64_t stream);
  void AfterLaunch(uint64_t context, uint64_t stream, uint32_t kernel,
                   const LaunchArgs* args = nullptr);
  // AfterLaunch for a launch seen from inside the driver's own call (a CUPTI
  // exit callback): no CUDA call is made there; with check=kernel its check
  // is owed (GuardManager::NoteLaunchDeferred), with the argument words
  // copied now.
  void AfterLaunchDeferred(uint64_t context, uint64_t stream, uint32_t kernel,
                           const LaunchArgs* args = nullptr);

  // A synchronizing call (cudaDeviceSynchronize, cudaStreamSynchronize,
  // cuCtxSynchronize, ...) returned success in `context`: with check=sync or
  // kernel, every zone of the context is checked.
  void OnSynchronized(uint64_t context);
  // The same after a call that waited for one stream (cudaStreamSynchronize,
  // cuStreamSynchronize): blocks filled on other streams wait for a wider
  // synchronization.
  void OnStreamSynchronized(uint64_t context, uint64_t stream);
  // The program is about to destroy `stream`: blocks freed on it that the
  // tool still holds leave the quarantine now, through it.
  void BeforeStreamDestroy(uint64_t stream);

  // Checks every zone now (snapshot, exit, teardown) and reports what
  // changed. `reason` names the check in reports ("snapshot", "exit", ...).
  void CheckAllZones(absl::string_view reason);

  // IPC: before cudaIpcGetMemHandle / cuIpcGetMemHandle of `address` (any
  // byte of a block, as CUDA takes it), writes a header into the block's
  // front redzone so that a traced peer can find the user's start. Returns
  // the address to pass to CUDA (the raw start of a guarded block), or
  // nullopt for an address in a redzone: CUDA would find no allocation there.
  std::optional<uint64_t> PrepareIpcExport(uint64_t address);
  // In the peer, after cudaIpcOpenMemHandle mapped `raw_base` in `context`:
  // the user's start if the exporter left a header, else raw_base.
  // `user_bytes` (may be null): the exporter's size of the block, 0 when the
  // exporter left no header.
  uint64_t IpcUserAddress(uint64_t context, uint64_t raw_base,
                          uint64_t* user_bytes = nullptr);

  // A context is about to be destroyed or reset (context 0: every context on
  // `device`): take the final picture of its zones while the driver still
  // answers, then forget its tool state.
  void BeforeContextTeardown(int device, uint64_t context);

  // Virtual memory management: physical memory (a cuMemCreate handle) is gone
  // only when it has been released and its last mapping unmapped.
  void OnVmmMap(uint64_t va, uint64_t bytes, uint64_t handle);
  void OnVmmUnmap(uint64_t va, uint64_t bytes);

  // A context was destroyed or a device reset: CUDA released every block made
  // in it. They leave the live set (their addresses may be reused) and are kept
  // as leaks "released by <reason>". `context` 0 means every context on
  // `device`.
  void OnContextTeardown(int device, uint64_t context,
                         absl::string_view reason);

  // exit() has begun: context teardown from here on is the runtime's own
  // shutdown, not the program's reset.
  void MarkExiting() { exiting_.store(true, std::memory_order_release); }

  // Device facts for reports, noted the first time a device is seen (early:
  // the driver may be gone at exit).
  bool DeviceKnown(int device) const;
  void NoteDevice(int device, absl::string_view name, uint64_t total_bytes);

  // Records an error, prints it (print_errors) and halts if asked. Used by the
  // report functions in error_reports.h.
  void RecordError(ErrorRecord error);

  // The current picture, symbolized. `reason` is "exit", "request", ...
  // The engine takes its state (TakeReportState); lib/report/ assembles the
  // report from it (lib/report/report_assembly.h).
  ReportData BuildReport(absl::string_view reason);
  // Renders BuildReport() to the destinations the options name; returns its
  // summary.
  ReportData::Summary WriteReport(absl::string_view reason);
  // The exit report, once; applies `exitcode`.
  void FinalReport();

  UsageFigures DeviceUsage(int device) const { return usage_.Get(device); }
  // Device memory of `device` the tool holds that the program never asked
  // for: the redzones of its live blocks and the quarantine. Added back to
  // free memory in the program's view (cudaMemGetInfo, cuMemGetInfo).
  uint64_t HiddenDeviceBytes(int device) const;
  // The guarded stream-ordered blocks a pool still counts as used, with the
  // bytes of each the program did not ask for (GuardManager). The shims of
  // the pool attribute queries find each block's pool and take those bytes
  // off USED_MEM_CURRENT / USED_MEM_HIGH.
  std::vector<GuardManager::PoolCharge> StreamOrderedCharges() const {
    return guard_.StreamOrderedCharges();
  }
  std::vector<AllocationRecord> LiveAllocations() const;
  uint64_t ErrorCount() const;
  StackDepot& depot() { return depot_; }
  Symbolizer& symbolizer() { return symbolizer_; }
  // Symbolizes `ids` into `table` (skipping those already there).
  void SymbolizeInto(const std::vector<StackId>& ids, StackTable* table);

  // ---- OOM diagnosis, GPU health (lib/engine/engine_oom.cc) ----
  // An allocation failed for lack of memory (cudaErrorMemoryAllocation /
  // CUDA_ERROR_OUT_OF_MEMORY) after any retry: reports `oom` with the
  // diagnosis, once per burst. The program still gets `cuda_result`.
  struct AllocFailure {
    Api api = Api::kUnknown;
    uint64_t bytes = 0;
    int device = 0;
    int cuda_result = 0;
    const char* cuda_result_name = nullptr;
    StackId stack = kNoStack;
    // cuMemGetInfo just after the failure; empty with the reason if unknown.
    std::optional<uint64_t> device_free;
    std::optional<uint64_t> device_total;
    std::string meminfo_status = "ok";
  };
  void OnAllocFailed(const AllocFailure& failure);
  // The program's CUDA versions, when a device is first seen; also starts
  // the Xid watcher (health=1, xid_events=1, NVML present).
  void OnCudaVersions(int runtime_version, int driver_version);

  // ---- Reachability at exit, growth while running
  // (lib/engine/engine_leaks.cc) ----
  // Scans the process for pointers to the live blocks
  // (lib/leaks/reachability.h), once: the first call at exit (the atexit hook,
  // before static destructors of what was built before CUDA), else the exit
  // report. Only with leak_check, reachability=1 and live blocks.
  void ScanReachability();
  // After a synchronizing call: at most once per growth_interval_ms, samples
  // the live bytes of every call site and flags the ones that keep rising.
  void MaybeSampleGrowth();

  // ---- The crash report (lib/engine/engine_crash.cc) ----
  // `call` ("cudaDeviceSynchronize") returned sticky CUDA error `code`
  // (lib/core/sticky_errors.h) named `code_name`. The first time: records a
  // cuda-error naming the call and the recent kernels, stops GPU work of the
  // tool (the context is lost) and writes the report (reason "cuda-error")
  // at once, before the program can exit. Later calls do nothing.
  void OnStickyError(absl::string_view call, int code, const char* code_name);
  // A fatal signal (lib/engine/crash_handler.h). From the handler, in this
  // order: NoteCrashSignal records the signal for
  // every later report (atomics only); WriteCrashSummary writes to `fd` what
  // can be said without allocating or waiting for a lock (live blocks, the
  // block at the fault address, the newest kernels); WriteCrashReportInChild
  // writes the full report, in a child process forked for it (the handler
  // waits for it, bounded by crash_timeout_s). A program that recovers from
  // the signal still gets its exit report, with the crash in it.
  void NoteCrashSignal(const CrashSignal& signal);
  void WriteCrashSummary(const CrashSignal& signal, int fd);
  void WriteCrashReportInChild();
  // A sticky CUDA error was seen: no more GPU work for the tool.
  bool ContextLost() const {
    return sticky_seen_.load(std::memory_order_acquire);
  }

  // ---- Graph memory nodes (lib/registry/graph_memory.h,
  // lib/engine/engine_graph.cc). Called by
  // interpose/shims/graph_memory_shims.cc and the CUPTI subscriber. An alloc
  // node was created at `address` by `api` (kGraphMemAllocNode or a captured
  // variant); `stack` is the creating call's.
  void OnGraphAllocNode(uint64_t address, uint64_t bytes, int device, Api api,
                        StackId stack);
  // `exec` was instantiated; `nodes` are its memory nodes.
  void OnGraphInstantiated(uint64_t exec, GraphMemory::ExecNodes nodes);
  void OnGraphExecDestroyed(uint64_t exec);
  // A launch of `exec` on `stream` of `context` succeeded: its alloc nodes'
  // blocks become live (stack: the node's creation, else `launch_stack()`,
  // asked only then), its free nodes free. Cheap when `exec` has no memory
  // nodes (one lookup; none at all before the first memory node).
  void OnGraphLaunched(uint64_t exec, uint64_t context, uint64_t stream,
                       absl::FunctionRef<StackId()> launch_stack);
  const GraphMemory& graph_memory() const { return graph_memory_; }

  // ---- CUPTI memory activity cross-check
  // (lib/registry/memory_activity.h, lib/engine/engine_activity.cc). With a
  // source installed (SetMemoryActivitySource), records of allocations no hook
  // saw are added as blocks of their own ("cupti-activity", or the graph node's
  // API), each counted once. `flush`: ask CUPTI for its incomplete buffers
  // first (never from inside a CUPTI callback). Returns how many blocks were
  // added.
  size_t ReconcileActivity(bool flush);
  // The program is about to import a pool from another process
  // (cuMemPoolImportFromShareableHandle): memory records stop for good, as
  // CUPTI 13.0 crashes freeing a pointer of an imported pool while they are
  // on. Idempotent; the report says when it happened.
  void BeforeMemPoolImport();

  // ---- NVTX memory regions, the sub-allocations of pool
  // allocators (lib/registry/nvtx_mem_regions.h,
  // lib/engine/engine_nvtx_mem.cc). Called by interpose/nvtx/nvtx_injection.cc
  // for the program's nvtxMem* calls; `stack` is the caller's, captured once
  // per call. nvtxMemHeapRegister of [address, address + bytes)
  // (VIRTUAL_ADDRESS, size > 0). Returns the handle the program gets: the
  // heap's address.
  uint64_t OnNvtxHeapRegister(uint64_t address, uint64_t bytes, uint32_t usage,
                              std::string name);
  // nvtxMemHeapReset (`unregister` false) / nvtxMemHeapUnregister: the heap's
  // regions end, and with `unregister` the heap.
  void OnNvtxHeapEnd(uint64_t heap, bool unregister);
  // One region of an nvtxMemRegionsRegister batch.
  void OnNvtxRegionRegister(uint64_t heap, uint64_t address, uint64_t bytes,
                            StackId stack);
  void OnNvtxRegionResize(uint64_t address, uint64_t bytes);
  void OnNvtxRegionUnregister(uint64_t address);
  void OnNvtxRegionName(uint64_t address, absl::string_view name);
  // Bad input in a call (counted; the first of each kind logged).
  void NoteNvtxMemProblem(NvtxMemProblem problem);
  const NvtxMemRegions& nvtx_mem() const { return nvtx_mem_; }

 private:
  struct DeviceInfo {
    std::string name;
    uint64_t total_bytes = 0;
  };
  struct VmmMapping {
    uint64_t bytes;
    uint64_t handle;
  };

  Registry& RegistryFor(MemoryKind kind);
  void ReportFindings(const std::vector<GuardFinding>& findings);
  void AccountFree(const AllocationRecord& record);
  void FreeVmmHandleIfDone(uint64_t handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(vmm_mu_);
  // The picture a report is assembled from (lib/report/report_state.h): every
  // module's state, read under its lock (try-locks for the crash state: this
  // runs in a signal handler for reason "crash"), and health through NVML
  // except at a crash.
  ReportState TakeReportState(absl::string_view reason);
  // The frames of stack `id`, symbolized when the options ask for it.
  std::vector<SymbolizedFrame> SymbolizeStack(StackId id);
  // Where stack `id` was taken, in one line: its first frame with a
  // function name, "main (app.cu:10)"; "" when there is none.
  std::string SiteName(StackId id);

  const Options options_;
  const int owner_pid_;  // the process that created the engine (not a fork)
  StackDepot depot_;
  Symbolizer symbolizer_;
  Usage usage_;
  Registry pointers_;     // device, managed, host, arrays: keyed by pointer
  Registry vmm_handles_;  // cuMemCreate handles: a different key space

  mutable absl::Mutex vmm_mu_;
  absl::flat_hash_map<uint64_t, VmmMapping> vmm_mappings_
      ABSL_GUARDED_BY(vmm_mu_);
  absl::flat_hash_map<uint64_t, int> vmm_map_count_ ABSL_GUARDED_BY(vmm_mu_);
  // Handles released while still mapped: memory held until the last unmap.
  absl::flat_hash_map<uint64_t, AllocationRecord> vmm_released_
      ABSL_GUARDED_BY(vmm_mu_);

  mutable absl::Mutex devices_mu_;
  absl::flat_hash_map<int, DeviceInfo> devices_ ABSL_GUARDED_BY(devices_mu_);

  mutable absl::Mutex released_mu_;
  std::vector<ReleasedBlock> released_ ABSL_GUARDED_BY(released_mu_);

  mutable absl::Mutex errors_mu_;
  std::vector<ErrorRecord> errors_ ABSL_GUARDED_BY(errors_mu_);
  uint64_t errors_dropped_ ABSL_GUARDED_BY(errors_mu_) = 0;
  StackTable printed_stacks_ ABSL_GUARDED_BY(errors_mu_);

  GuardManager guard_;
  MemPools mem_pools_;
  KernelNames kernel_names_;
  // Suppressions (option suppressions=FILE), loaded once; a file that cannot
  // be used leaves no rule and its error here for the report's notes.
  Suppressions suppressions_;
  std::string suppressions_error_;

  std::atomic<uint64_t> untracked_frees_{0};
  // Allocations by family, for the report's tensor-mode note (counted in
  // tensor mode only): stream-ordered (PyTorch's tensors) and cudaMalloc /
  // cuMemAlloc.
  std::atomic<uint64_t> stream_ordered_allocations_{0};
  std::atomic<uint64_t> pool_export_starts_refused_{0};
  std::atomic<uint64_t> device_allocations_{0};
  std::atomic<bool> final_done_{false};
  std::atomic<bool> exiting_{false};
  // Set in a fork()ed child (pthread_atfork, Engine::Get).
  std::atomic<bool> forked_child_{false};
  absl::Mutex report_mu_;  // one report at a time
  // The report printed in full on stderr at a CUDA error, if any.
  ReportData::EarlierReport earlier_printed_ ABSL_GUARDED_BY(report_mu_);

  // Memory over time for the html/trace/torch reports (lib/registry/timeline.h;
  // engine_timeline.cc). Recorded where usage_ changes.
  static uint64_t TimelineCapacity(const Options& options);
  void RecordTimeline(TimelineKind kind, const AllocationRecord& record);
  void TakeTimelineState(ReportState* state);
  Timeline timeline_;

  // (lib/engine/engine_leaks.cc): the exit scan's verdict per block, and the
  // growth tracker; a report takes their figures, verdicts and flags.
  void TakeLeakAnalysisState(ReportState* state);
  mutable absl::Mutex leaks_mu_;
  bool reach_done_ ABSL_GUARDED_BY(leaks_mu_) = false;
  ReportData::Reachability reach_summary_ ABSL_GUARDED_BY(leaks_mu_);
  ReachVerdicts reach_verdicts_ ABSL_GUARDED_BY(leaks_mu_);
  absl::Mutex growth_mu_;
  GrowthTracker growth_ ABSL_GUARDED_BY(growth_mu_);
  std::atomic<int64_t> next_growth_ns_{0};

  // (lib/engine/engine_crash.cc): the crash, once known, goes into
  // every later report; the newest launches for its "recent kernels". A
  // report takes both under a try-lock.
  void TakeCrashState(ReportState* state);
  // The GPU fault the driver's dump explains (explain_faults), into the
  // crash: in the crash report's writer, after a SIGABRT.
  void ExplainGpuDump(ReportData::Crash* crash);
  RecentLaunches recent_launches_;
  mutable absl::Mutex crash_mu_;
  ReportData::Crash crash_ ABSL_GUARDED_BY(crash_mu_);
  std::atomic<bool> sticky_seen_{false};
  // The fatal signal noted by NoteCrashSignal (signal 0: none).
  struct NotedSignal {
    std::atomic<int> signal{0};
    std::atomic<int> code{0};
    std::atomic<uint64_t> fault_address{0};
    std::atomic<bool> has_fault_address{false};
    std::atomic<int> thread{0};
    // The crashing thread's frames (CrashSignal::frames), set before
    // `signal` is published.
    const uintptr_t* frames = nullptr;
    int frame_count = 0;
  };
  NotedSignal noted_signal_;

  // Enqueues the per-kernel checks owed by launches seen from inside the
  // driver's call (GuardManager::NoteLaunchDeferred) and reports them.
  void SettleOwedChecks();
  // With check=kernel and some guarded block: the words of the launch's
  // parameters (lib/launch/launch_reach.h); false when they cannot be read
  // (said once per kernel at verbosity 1). Nothing is read otherwise.
  // The newest launch as it was made, for the report at a sticky error:
  // kernel, grid and block, and each parameter word that could be an
  // address, resolved to the tracked block it points into (size, API, where
  // it was allocated) or said to be none.
  std::string DescribeLaunch(const RecentLaunches::Entry& launch);
  // Records a launch in recent_launches_ (dims and the parameter words that
  // could be addresses, `words` getting all of them) and returns the entry.
  // `layout_first`: this call asked for the kernel's parameter layout first.
  RecentLaunches::Entry RecordLaunch(uint64_t context, uint64_t stream,
                                     uint32_t kernel, const LaunchArgs* args,
                                     std::vector<ArgWord>* words,
                                     bool* layout_first, bool capture_site);
  // "main (app.cu:16)": where the program made `launch`, past the kernel's
  // own host stub; "" when no frame was kept.
  std::string LaunchSite(const RecentLaunches::Entry& launch);
  // The words a per-kernel check of this launch follows: none while nothing
  // is guarded or checks are not per kernel, null when they cannot be read.
  const std::vector<ArgWord>* ReachWords(const RecentLaunches::Entry& launch,
                                         const LaunchArgs* args,
                                         uint32_t kernel,
                                         std::vector<ArgWord>* words,
                                         bool layout_first);
  // Why a per-kernel check of this launch covers every zone (verbosity 1):
  // a graph launch once; an unknown layout when first asked.
  void SayArgsUnread(const LaunchArgs* args, uint32_t kernel,
                     bool layout_first);
  ParamLayoutCache param_layouts_;

  // (lib/engine/engine_graph.cc): graph memory nodes.
  // A stream-ordered allocation made on a stream being captured: noted as an
  // alloc node instead of a live block. Returns whether it was.
  bool DivertCapturedAlloc(const AllocEvent& event);
  // A stream-ordered free on a stream being captured, of graph memory or of
  // nothing live: it becomes a free node, applied when the graph is launched.
  bool IsCapturedGraphFree(Api api, uint64_t address, uint64_t stream);
  // Frees a live block at `address` as a graph does (no error if none).
  void GraphRelease(Api api, uint64_t address);
  GraphMemory graph_memory_;
  // (lib/engine/engine_activity.cc): an unknown free the CUPTI
  // activity records explain (an allocation no hook saw). `flush` as above.
  bool ExplainUnknownFree(uint64_t address, bool flush);
  // An unknown free seen inside a CUPTI callback, about to be reported:
  // kept for the next ReconcileActivity instead (true), which reports it
  // only if the records do not explain it.
  bool DeferUnknownFree(const FreeTicket& ticket, bool succeeded,
                        int cuda_result, const char* cuda_result_name);
  struct SuspectFree {
    FreeTicket ticket;
    bool succeeded;
    int cuda_result;
    std::string cuda_result_name;
  };
  absl::Mutex activity_mu_;  // one reconciliation at a time
  MemoryActivityCrossCheck activity_ ABSL_GUARDED_BY(activity_mu_);
  // BeforeMemPoolImport stopped the memory records.
  std::atomic<bool> activity_stopped_{false};
  std::vector<SuspectFree> suspects_ ABSL_GUARDED_BY(activity_mu_);
  std::atomic<uint32_t> suspect_count_{0};

  // (lib/engine/engine_oom.cc): health read into a report, OOM bursts.
  // NVML health (health=1), except for reason "crash" (a signal handler).
  void TakeHealthState(absl::string_view reason, ReportState* state);
  OomBurstLimiter oom_limiter_;

  // (lib/engine/engine_nvtx_mem.cc): pool sub-allocations described
  // through NVTX. A block going back to CUDA ends the heaps and regions in it.
  void EndNvtxMemIn(const AllocationRecord& block);
  // CheckAccess for a range that starts in a live region: reports api-bounds
  // naming the region when the range leaves it. `leaves_block`: it also
  // leaves the tracked block (CUDA refuses it); `rejected`: the tool refuses
  // it for CUDA (into the block's redzone). Returns whether it reported.
  bool CheckNvtxRegionAccess(absl::string_view call, uint64_t address,
                             uint64_t bytes, bool leaves_block, bool rejected);
  // The regions' counters, live regions and heaps, and each block's coverage.
  void TakeNvtxMemState(ReportState* state);
  NvtxMemRegions nvtx_mem_;
  NvtxMemStats nvtx_mem_stats_;
};

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_ENGINE_H_
