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
#ifndef GMT_LIB_ENGINE_H_
#define GMT_LIB_ENGINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "lib/api.h"
#include "lib/errors.h"
#include "lib/guard.h"
#include "lib/kernel_names.h"
#include "lib/options.h"
#include "lib/registry.h"
#include "lib/report.h"
#include "lib/stack_depot.h"
#include "lib/symbolizer.h"
#include "lib/usage.h"

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
  // Issue 9: no live block starts at `address`, but it is the raw start of a
  // guarded block the tool still has (held in quarantine, or live with its
  // front redzone starting there). CUDA would accept it and free the tool's
  // block; without the tool that memory was freed already (or was never at
  // that address), so CUDA would refuse. Do not call CUDA; answer its
  // invalid-value code. (Seen with guard_front=0: a double cudaFree of a
  // quarantined block succeeded, went unreported, and the later eviction
  // freed the raw block a second time.)
  bool rejected = false;
};

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
  bool tracking() const { return options_.enabled; }

  // Captures the caller's stack (options().stack_depth frames) into the depot.
  StackId CaptureCallStack();

  // A successful allocation.
  void OnAlloc(const AllocEvent& event);

  // See the free protocol above. `cuda_result_name` may be null. `stream`:
  // for stream-ordered frees.
  FreeTicket BeginFree(Api api, uint64_t address, StackId stack,
                       uint64_t stream = 0);
  void EndFree(const FreeTicket& ticket, bool succeeded, int cuda_result,
               const char* cuda_result_name);

  // ---- Guard zones (lib/guard.h) ------------------------------------------
  // The layout for a linear allocation of `bytes` by `api` on `stream`, or
  // nullopt when it is not guarded (policy, size 0, stream capture).
  std::optional<GuardLayout> PlanGuard(Api api, uint64_t bytes,
                                       uint64_t stream = 0);
  // Out of memory with redzones: gives the quarantine back to CUDA. Returns
  // whether anything was released (a retry may succeed).
  bool ReleaseQuarantine();
  GuardManager& guard() { return guard_; }

  // The live block (device, managed or pinned) whose user range holds
  // `address`, or whose raw range does for a guarded block.
  std::optional<BlockView> FindBlock(uint64_t address) const;

  // A copy or set through `call` (e.g. "cudaMemcpyAsync") touches
  // [address, address + bytes) of device/managed memory. Reports `api-bounds`
  // when the range leaves the block that holds `address`; see AccessVerdict.
  // Untracked addresses are kForward.
  AccessVerdict CheckAccess(absl::string_view call, uint64_t address,
                            uint64_t bytes);

  // Kernel names: an id per distinct demangled name (cheap to keep per launch).
  uint32_t InternKernel(absl::string_view name);
  std::string KernelName(uint32_t id) const;

  // Around every kernel launch on `stream` (0: the legacy stream) of
  // `context`: Before flushes pending canary fills; After logs the kernel for
  // attribution and, with check=kernel, enqueues a check on `stream`.
  void BeforeLaunch(uint64_t context, uint64_t stream);
  void AfterLaunch(uint64_t context, uint64_t stream, uint32_t kernel);

  // A synchronizing call (cudaDeviceSynchronize, cudaStreamSynchronize,
  // cuCtxSynchronize, ...) returned success in `context`: with check=sync or
  // kernel, every zone of the context is checked.
  void OnSynchronized(uint64_t context);
  // The same after a call that waited for one stream (cudaStreamSynchronize,
  // cuStreamSynchronize): blocks filled on other streams wait for a wider
  // synchronization.
  void OnStreamSynchronized(uint64_t context, uint64_t stream);

  // Checks every zone now (snapshot, exit, teardown) and reports what
  // changed. `reason` names the check in reports ("snapshot", "exit", ...).
  void CheckAllZones(absl::string_view reason);

  // IPC: before cudaIpcGetMemHandle / cuIpcGetMemHandle of `user_address`,
  // writes a header into the block's front redzone so that a traced peer can
  // find the user's start. Returns the raw address to pass to CUDA.
  uint64_t PrepareIpcExport(uint64_t user_address);
  // In the peer, after cudaIpcOpenMemHandle mapped `raw_base` in `context`:
  // the user's start if the exporter left a header, else raw_base.
  uint64_t IpcUserAddress(uint64_t context, uint64_t raw_base);

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
  ReportData BuildReport(absl::string_view reason);
  // Renders BuildReport() to the destinations the options name; returns its
  // summary.
  ReportData::Summary WriteReport(absl::string_view reason);
  // The exit report, once; applies `exitcode`.
  void FinalReport();

  UsageFigures DeviceUsage(int device) const { return usage_.Get(device); }
  std::vector<AllocationRecord> LiveAllocations() const;
  uint64_t ErrorCount() const;
  StackDepot& depot() { return depot_; }
  Symbolizer& symbolizer() { return symbolizer_; }
  // Symbolizes `ids` into `table` (skipping those already there).
  void SymbolizeInto(const std::vector<StackId>& ids, StackTable* table);

 private:
  struct DeviceInfo {
    std::string name;
    uint64_t total_bytes = 0;
  };
  struct VmmMapping {
    uint64_t bytes;
    uint64_t handle;
  };
  struct ReleasedBlock {
    AllocationRecord record;
    std::string reason;
  };

  Registry& RegistryFor(MemoryKind kind);
  void ReportFindings(const std::vector<GuardFinding>& findings);
  void AccountFree(const AllocationRecord& record);
  void FreeVmmHandleIfDone(uint64_t handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(vmm_mu_);

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
  KernelNames kernel_names_;

  std::atomic<uint64_t> untracked_frees_{0};
  std::atomic<bool> final_done_{false};
  std::atomic<bool> exiting_{false};
  absl::Mutex report_mu_;  // one report at a time
};

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_H_
