// DriverDeviceOps: the guard engine's GPU work (lib/guard/device_ops.h) on the
// traced process's own CUDA driver.
//
// Fills and checks run the kernels of kernels/zone_kernels.cu, embedded in the
// library as a fatbin and loaded once with cuLibraryLoadData (context
// independent) on first use; nothing CUDA happens at load. Every CUDA call
// goes to the real driver (lib/platform/tool_driver.h), never through a shim.
//
// Per context (keyed by its CUcontext value) it keeps, created on first use:
//   * the tool's stream (non-blocking, so it never joins the program's
//     legacy-stream work) and an event recorded after each Fill on it, which
//     work on a program stream waits for first;
//   * the context's check report (kernels/zone_abi.h GmtCheckReport): pinned
//     host memory mapped into the device (cuMemHostAlloc DEVICEMAP), made at
//     the context's first per-kernel check, which checks of a few small zones
//     answer in; the host reads it without a CUDA call;
//   * a small pool of "slots": a device buffer holding [summary | results |
//     zone table] and a pinned host twin it is staged through, plus an event
//     recorded after the slot's last use. A slot is reused only when that
//     event has completed, so a staging buffer is never rewritten while an
//     earlier copy from it may be in flight. Slots grow by doubling; an
//     asynchronous check holds its slot until PollCheck answers.
//
// A fill and a check due on one program stream at once (CheckAndFill: the
// fill of new stream-ordered blocks at the program's next launch there, the
// check of blocks that left the quarantine) are one launch of
// gmt_check_fill_zones_inline when the check would take the inline path and
// the fill the inline fill kernel's.
//
// Per-kernel checks (CheckAfterKernel) of at most GMT_INLINE_MAX_ZONES zones
// and GMT_INLINE_MAX_BYTES take the inline path: one cuLaunchKernel of
// gmt_check_zones_inline on the program's stream, the zones in its parameter
// buffer, and no other CUDA call when the caller says the context is current
// and no fill is still running on the tool's stream. PollCheck reads the
// answer from the report; a wait sleeps on it, probing the context for a
// fault now and then. Larger checks go through the slots as CheckAsync does.
//
// Failures never abort: a CUDA error makes the call return false / 0 /
// kFailed and is reported once (later ones at verbosity 2). If the kernel
// image cannot be loaded (driver older than CUDA 12.0, an unsupported GPU)
// that is said once and Fill/Check/CheckAsync fail from then on; Release,
// Read, Write and the rest keep working.
//
// Thread safety: every call is thread-safe. An internal mutex guards the
// tool's streams, slots and tickets; it is never held while waiting for the
// GPU (a check's event, a synchronization, a free, a synchronous copy), so a
// thread that waits never holds up another thread's fill or launch.
#ifndef GMT_LIB_PLATFORM_DRIVER_DEVICE_OPS_H_
#define GMT_LIB_PLATFORM_DRIVER_DEVICE_OPS_H_

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "lib/guard/device_ops.h"
#include "lib/platform/tool_driver.h"

namespace gmt {

class DriverDeviceOps : public DeviceOps {
 public:
  DriverDeviceOps();
  // Releases nothing: the object lives until exit, and its CUDA resources go
  // with their contexts.
  ~DriverDeviceOps() override;

  void Prepare(uint64_t context) override;
  bool Fill(uint64_t context, uint64_t stream,
            absl::Span<const GmtZone> zones) override;
  bool OrderAfterFills(uint64_t context, uint64_t stream) override;
  bool Check(uint64_t context, uint64_t stream, absl::Span<const GmtZone> zones,
             std::vector<GmtZoneResult>* results) override;
  uint64_t CheckAsync(uint64_t context, uint64_t stream,
                      absl::Span<const GmtZone> zones) override;
  uint64_t CheckAfterKernel(uint64_t context, uint64_t stream,
                            absl::Span<const GmtZone> zones,
                            bool context_current) override;
  uint64_t CheckAndFill(uint64_t context, uint64_t stream,
                        absl::Span<const GmtZone> check,
                        absl::Span<const GmtZone> fill, bool* filled) override;
  Poll PollCheck(uint64_t ticket, bool wait,
                 std::vector<GmtZoneResult>* results) override;
  int SynchronizeContext(uint64_t context) override;
  int Release(Api alloc_api, uint64_t context, uint64_t raw_address) override;
  int ReleaseOrdered(uint64_t context, uint64_t raw_address,
                     uint64_t stream) override;
  uint64_t PoolOf(uint64_t context, uint64_t address) override;
  bool Read(uint64_t context, uint64_t address, void* out,
            uint64_t bytes) override;
  bool Write(uint64_t context, uint64_t address, const void* data,
             uint64_t bytes) override;
  bool StreamCapturing(uint64_t stream) override;
  void ForgetContext(uint64_t context) override;

 private:
  struct Slot;
  struct ContextState;
  struct ZoneWork;
  struct Ticket {
    CUcontext context;
    Slot* slot;
    uint64_t zone_count;
    uint64_t check_id = 0;  // an inline check's id in its context; 0: not one
    uint64_t blocks = 1;    // an inline check's blocks: ids check_id.. +blocks
  };
  // What the inline path did with a check.
  enum class InlineOutcome : uint8_t { kEnqueued, kNotApplicable, kFailed };
  enum class ImageState : uint8_t { kNotLoaded, kLoaded, kFailed };

  // The driver table, or null (logged once).
  const ToolDriver* Driver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Loads the kernels once; false if they cannot be (logged once).
  bool EnsureKernels(const ToolDriver& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The state of the (current) `context`, created on first use; null on
  // failure. `context` must be current.
  ContextState* State(const ToolDriver& d, CUcontext context)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An idle slot of `state` with room for `zones` zones; null on failure.
  Slot* AcquireSlot(const ToolDriver& d, ContextState* state, uint64_t zones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GrowSlot(const ToolDriver& d, Slot* slot, uint64_t zones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stream to work on: the tool's for 0, else the program's, made to
  // wait for the tool's fills first.
  bool WorkStream(const ToolDriver& d, ContextState* state, uint64_t stream,
                  CUstream* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues clearing the results, uploading the staged table, the check
  // kernel and the copy of the summary back, then records the slot's event.
  bool EnqueueCheck(const ToolDriver& d, ContextState* state, CUstream stream,
                    Slot* slot, uint64_t zone_count, uint64_t total_chunks)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the slot's check completed: its results into `results`, copied
  // back through the tool's stream only when a zone changed.
  bool ReadResults(const ToolDriver& d, ContextState* state, Slot* slot,
                   uint64_t zone_count, std::vector<GmtZoneResult>* results)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the slot's event on `stream` after work that used it; a slot
  // whose event cannot be recorded is dropped (leaked), never reused, and
  // false is returned.
  bool FinishSlot(const ToolDriver& d, ContextState* state, Slot* slot,
                  CUstream stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `slot` from the pool without freeing anything (work may still use
  // its buffers); `slot` is invalid afterwards.
  void DropSlot(ContextState* state, Slot* slot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Launches a guard kernel with the block size the kernels are built for.
  CUresult Launch(const ToolDriver& d, ContextState* state, CUkernel kernel,
                  uint64_t total_chunks, CUstream stream, void** params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fill, Check and CheckAsync: the driver and the guard kernels, `context`
  // made current for the work (held by `work` until it is destroyed), and,
  // when there are zones, its state, the stream to work on and a slot with
  // `zones` staged. False on failure (logged).
  // Without `stage_table`: no slot, only the context, state and stream.
  bool BeginZoneWork(uint64_t context, uint64_t stream,
                     absl::Span<const GmtZone> zones, ZoneWork* work,
                     bool stage_table = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fill's path for a few zones on a program stream: one launch of the
  // inline fill kernel, or a memset a zone where they are very few or the
  // kernel is not loaded; no slot.
  bool FillInline(uint64_t context, uint64_t stream,
                  absl::Span<const GmtZone> zones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The inline path of CheckAfterKernel and CheckAsync: a ticket (0: the
  // launch failed), or nullopt where the zones or the context do not allow
  // it (the caller takes the table path).
  std::optional<uint64_t> InlineCheckLocked(uint64_t context, uint64_t stream,
                                            absl::Span<const GmtZone> zones,
                                            bool context_current)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // EnqueueInlineCheck: one launch of
  // `blocks` blocks (InlineBlocks); `*ticket` set when kEnqueued.
  // With `fill`: the same check in the first `blocks` blocks of one launch
  // of gmt_check_fill_zones_inline, whose other blocks write `fill`
  // (kNotApplicable where that kernel is not loaded).
  InlineOutcome EnqueueInlineCheck(uint64_t context, uint64_t stream,
                                   absl::Span<const GmtZone> zones,
                                   uint64_t blocks, bool context_current,
                                   uint64_t* ticket,
                                   const GmtInlineFill* fill = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An inline check's answer as the report has it now: kPending until the
  // kernel has written its completion; kLost when its findings were
  // overwritten in the ring before this read.
  static Poll ReadInlineAnswer(const ContextState& state, const Ticket& ticket,
                               std::vector<GmtZoneResult>* results);
  // Read and Write: `enqueue` puts a copy of `bytes` on the tool's stream of
  // `context`, and this waits for it; `what` names it in a failure.
  bool CopyOnToolStream(
      uint64_t context, uint64_t bytes, const char* what,
      absl::FunctionRef<CUresult(const ToolDriver&, CUstream)> enqueue)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Reports a failed CUDA call: the first one as an error, later ones as
  // notes. Returns false, for `return Failed(...)`.
  bool Failed(const ToolDriver* d, const char* what, CUresult result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  ImageState image_state_ ABSL_GUARDED_BY(mu_) = ImageState::kNotLoaded;
  CUlibrary library_ ABSL_GUARDED_BY(mu_) = nullptr;
  CUkernel fill_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  CUkernel check_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  CUkernel inline_check_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The same check for a few KiB in compact code (null: the large one).
  CUkernel small_check_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  CUkernel inline_fill_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  // A fill with a check riding on it (null: a fill, then a check).
  CUkernel check_fill_kernel_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool driver_missing_logged_ ABSL_GUARDED_BY(mu_) = false;
  bool failure_logged_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<CUcontext, std::unique_ptr<ContextState>> contexts_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Ticket> tickets_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
};

// Creates the process's DriverDeviceOps (leaked on purpose: the engine may
// use it from exit-time code) and installs it with SetDeviceOps. Makes no
// CUDA call.
void InstallDriverDeviceOps();

}  // namespace gmt

#endif  // GMT_LIB_PLATFORM_DRIVER_DEVICE_OPS_H_
