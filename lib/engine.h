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
};

class Engine {
 public:
  // The process-wide engine, created on first use (the first intercepted CUDA
  // call) and never destroyed: reports run from destructors.
  static Engine& Get();
  // The engine if some call created it, else nullptr (no report noise for
  // programs that never touch CUDA).
  static Engine* IfCreated();

  explicit Engine(const Options& options);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Options& options() const { return options_; }
  bool tracking() const { return options_.enabled; }

  // Captures the caller's stack (options().stack_depth frames) into the depot.
  StackId CaptureCallStack();

  // A successful allocation.
  void OnAlloc(const AllocEvent& event);

  // See the free protocol above. `cuda_result_name` may be null.
  FreeTicket BeginFree(Api api, uint64_t address, StackId stack);
  void EndFree(const FreeTicket& ticket, bool succeeded, int cuda_result,
               const char* cuda_result_name);

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

  std::atomic<uint64_t> untracked_frees_{0};
  std::atomic<bool> final_done_{false};
  std::atomic<bool> exiting_{false};
  absl::Mutex report_mu_;  // one report at a time
};

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_H_
