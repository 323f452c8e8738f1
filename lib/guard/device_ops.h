// DeviceOps: the GPU work the guard engine needs, behind one contract (the
// habit of mimalloc's prim.h): the engine decides *what* to fill and check,
// an implementation decides *how*.
//
//   lib/platform/driver_device_ops.cc  the real one: the traced process's own
//                                   libcuda (never a shim), the kernels of
//                                   kernels/ loaded with cuLibraryLoadData
//   tests/unit/host_device_ops.h    host memory, for the engine's unit tests
//
// Contexts and streams are the CUDA handles as integers. Stream 0 passed to
// Fill/Check means "the tool's own stream in that context" (created
// non-blocking, so it never orders the program's legacy-stream work); any
// other value is the program's stream, used as is (stream-ordered memory must
// be filled and checked in its stream's order).
//
// Ordering guarantees an implementation must give:
//   * work on the tool's stream runs in call order (a Check after a Fill sees
//     the fill);
//   * work enqueued on a program stream first waits for every Fill already
//     enqueued on the tool's stream of that context;
//   * a zone table passed in is copied before the call returns (the caller
//     may reuse its memory at once).
//
// Thread safety: implementations must be thread-safe: GuardManager calls
// them from several threads at once, and makes the calls that wait
// (PollCheck with `wait`, SynchronizeContext, Release, Read, Write, Check)
// without its own lock, so none of them may wait while holding a lock that
// an enqueueing call needs.
// Implementations must never call back into the engine, and must make their
// CUDA calls through the real functions (no shim, no recording).
#ifndef GMT_LIB_GUARD_DEVICE_OPS_H_
#define GMT_LIB_GUARD_DEVICE_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "kernels/zone_abi.h"
#include "lib/core/api.h"

namespace gmt {

// Zones are passed as the caller lists them; their chunk_begin is the
// implementation's to compute (zone_abi.h's prefix sum), so callers leave it
// unset.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // Enqueues writing every zone's pattern, on `stream` of `context`. Does not
  // wait. False if the work could not be enqueued (the zones then hold
  // whatever they held: the caller must not check them).
  // The first guarded block of `context`: makes the tool's GPU state of it
  // ready now (its stream, the guard kernels loaded on the device; no device
  // memory), so these one-time costs land on that allocation and not inside
  // the program's first timed kernels, where the first fill used to pay them
  // (a pitch-linear texture benchmark lost ~100 ms there on the H200).
  // Best effort: what fails here is done, or reported, at the first fill.
  virtual void Prepare(uint64_t /*context*/) {}
  virtual bool Fill(uint64_t context, uint64_t stream,
                    absl::Span<const GmtZone> zones) = 0;

  // Makes the program's `stream` wait (cuStreamWaitEvent) for every Fill
  // already enqueued on the tool's stream of `context`, so the program's next
  // kernel runs after the canaries are in place. No-op when there is nothing
  // to wait for. False if the wait could not be enqueued.
  virtual bool OrderAfterFills(uint64_t context, uint64_t stream) = 0;

  // Checks every zone against its pattern on `stream` of `context` and waits
  // for the result. On success `results` has one entry per zone (all zero for
  // a clean zone). False if the check could not run (results untouched).
  virtual bool Check(uint64_t context, uint64_t stream,
                     absl::Span<const GmtZone> zones,
                     std::vector<GmtZoneResult>* results) = 0;

  // The same check, enqueued without waiting (per-kernel checks, checks at
  // stream-ordered frees). Returns a ticket > 0, or 0 if it could not be
  // enqueued.
  virtual uint64_t CheckAsync(uint64_t context, uint64_t stream,
                              absl::Span<const GmtZone> zones) = 0;

  // The check that follows one of the program's kernels on its `stream`
  // (check=kernel): CheckAsync's contract, made as cheap as the zones allow.
  // `context_current`: the caller knows `context` is current on this thread
  // (it has just launched the program's kernel there), so the implementation
  // need not make it current. The driver implementation sends a few small
  // zones through one launch whose answer it reads from host memory
  // (kernels/zone_abi.h, gmt_check_zones_inline), others through CheckAsync.
  virtual uint64_t CheckAfterKernel(uint64_t context, uint64_t stream,
                                    absl::Span<const GmtZone> zones,
                                    bool context_current) {
    (void)context_current;
    return CheckAsync(context, stream, zones);
  }

  // A fill and an asynchronous check due on one program `stream` at once
  // (the fill of new blocks before the program's next kernel there, the
  // check of blocks that left the quarantine after their frees there); the
  // two sets of zones never overlap. `*filled`: whether the fill was
  // enqueued (as Fill's result). Returns the check's ticket (CheckAsync's
  // contract; 0 also when `check` is empty). The driver implementation makes
  // both one launch where the zones allow.
  virtual uint64_t CheckAndFill(uint64_t context, uint64_t stream,
                                absl::Span<const GmtZone> check,
                                absl::Span<const GmtZone> fill, bool* filled) {
    *filled = Fill(context, stream, fill);
    return check.empty() ? 0 : CheckAsync(context, stream, check);
  }

  // The state of an asynchronous check. kPending only when `wait` is false.
  // kDone fills `results` (one per zone). kLost: the check ran and found
  // changed zones, but what it found was overwritten before it was read
  // (results untouched): the caller must check those zones again. A ticket is
  // forgotten once it has answered anything but kPending.
  enum class Poll : uint8_t { kPending, kDone, kFailed, kLost };
  virtual Poll PollCheck(uint64_t ticket, bool wait,
                         std::vector<GmtZoneResult>* results) = 0;

  // Waits for all work in `context` (cuCtxSynchronize). Returns the CUresult.
  virtual int SynchronizeContext(uint64_t context) = 0;

  // Frees a raw block the tool held back (quarantine), with the real free
  // function that matches `alloc_api` (cudaFree for runtime allocations,
  // cuMemFree for driver ones). Returns the CUDA result code.
  virtual int Release(Api alloc_api, uint64_t context,
                      uint64_t raw_address) = 0;

  // Frees a stream-ordered raw block the tool held back, in `stream`'s order
  // (cuMemFreeAsync; stream as for Fill: 0 is the tool's stream, for a block
  // no work of the program's may still use). Does not wait. Returns the CUDA
  // result code.
  virtual int ReleaseOrdered(uint64_t context, uint64_t raw_address,
                             uint64_t stream) = 0;

  // The stream-ordered pool that the block at `address` of `context` came
  // from (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE), 0 when not known.
  virtual uint64_t PoolOf(uint64_t /*context*/, uint64_t /*address*/) {
    return 0;
  }

  // Copies `bytes` from device/managed memory at `address` to `out` and waits.
  virtual bool Read(uint64_t context, uint64_t address, void* out,
                    uint64_t bytes) = 0;

  // Copies `bytes` from `data` to device/managed memory at `address` and
  // waits (the IPC header in a front redzone).
  virtual bool Write(uint64_t context, uint64_t address, const void* data,
                     uint64_t bytes) = 0;

  // Whether `stream` is being captured into a graph (work must not be added).
  virtual bool StreamCapturing(uint64_t stream) = 0;

  // The context is being destroyed: drop the tool's streams, tables and
  // buffers in it without touching the GPU again.
  virtual void ForgetContext(uint64_t context) = 0;
};

// The DeviceOps the engine uses; set once by the front end before the first
// allocation (interpose/ installs the driver implementation). Null: guard
// zones are off (allocations pass through unguarded).
void SetDeviceOps(DeviceOps* ops);
DeviceOps* GetDeviceOps();

}  // namespace gmt

#endif  // GMT_LIB_GUARD_DEVICE_OPS_H_
