// GuardManager: the redzones of every guarded block, the quarantine of freed
// ones, and when their canaries are written and checked (DESIGN §3).
//
// It decides *what* to fill and check; DeviceOps (lib/guard/device_ops.h) does
// the GPU work. It never reports: checks return GuardFindings that the engine
// turns into errors after the manager's lock is released (so halt_on_error,
// which writes a report that checks zones again, cannot deadlock).
//
// Cost model (measured on the H200: a cudaMalloc+cudaFree pair is ~1.8 us, a
// fill launch ~0.7 us): nothing touches the GPU per allocation. Canaries are
// written lazily, in one launch, right before the next kernel launch or check
// ("pending fills"); a block allocated and freed with no launch in between
// never costs a GPU call. Stream-ordered (pool) blocks are the exception:
// their memory is only theirs in their stream's order, so they are filled at
// once on that stream.
//
// Checks (option check=):
//   exit    at exit, gmt::snapshot(), context teardown, quarantine eviction
//   sync    + after every synchronizing call that returned success: the
//             check of every zone is enqueued on the tool's stream, not
//             waited for; its answer is collected at a later poll (the next
//             synchronization, a guarded free, exit)
//   kernel  + after every kernel, enqueued on the kernel's own stream with no
//             host sync; results are collected at the next launch or check.
//             The check covers the blocks the kernel's arguments point into
//             (lib/launch/launch_reach.h; raw extents, so a pointer into a
//             redzone counts); a kernel that reaches no guarded block costs
//             no check at all. When its arguments cannot be read (no
//             parameter layout, a graph launch) it covers every zone.
//             Blocks it reaches another way (pointers it loads from device
//             memory) are checked at the next synchronization. A few small
//             zones cost one launch and no other CUDA call
//             (DeviceOps::CheckAfterKernel); findings that were lost before
//             they were read leave the zones to the next synchronization's
//             full check (Context::findings_lost).
//   A stream-ordered block freed while quarantine is off (or on a stream
//   being captured) is checked at its free, on the free's stream.
//   Suspects (suspect_checks, with check=sync): a finding that can name only
//   the kernels run since the last clean check makes each of them a suspect,
//   and from then on a suspect's launches get check=kernel's check (its
//   reach, after it, on its stream). Training loops repeat their kernels, so
//   a write that repeats is found by the check after the one kernel that
//   made it, while kernels never named cost nothing more.
//
// Freed blocks go to a FIFO quarantine (per context, quarantine_bytes): CUDA
// is not called; their user bytes are filled with the freed pattern; a later
// change is a uaf-write. With quarantine_async (torch mode turns it on), a
// stream-ordered block (cudaFreeAsync, and so every tensor of PyTorch's
// cudaMallocAsync backend) is held too:
// filled on its free's stream at the free, and when it leaves the quarantine
// its check and CUDA's stream-ordered free are enqueued on that stream, one
// behind the other: it never costs a host wait. A stream the program
// destroys takes the blocks held on it out first (ReleaseHeldOnStream). With
// quarantine_bytes=0 a freed block whose canaries were written is held the same
// way, without the freed fill, only until its check (a batch of up to
// kFreeCheckBatchBlocks blocks or kFreeCheckBatchBytes).
//
// Reuse (quarantine_async): a held cudaMallocAsync / cuMemAllocAsync block
// of a device's default pool that leaves the quarantine with its canaries
// and freed pattern written is checked on its stream and stays with the
// tool; once that check has answered clean, its zones are known intact and
// the free behind it known complete, so an allocation of the same size in
// its context takes it (TakeReusable) instead of asking CUDA: no
// allocation, no free and no canary fill for it, the driver calls a tensor
// otherwise costs. CUDA's own pool reuses a completed free for any stream
// the same way. On the stream its check went on, an allocation takes it
// before the answer too (the check runs first there, as CUDA's pool hands a
// block freed on a stream to that stream's next allocation): what the check
// finds is reported against the block's last lifetime, and the new tensor's
// canaries join other checks once it has answered (Block::canaries_owed_to).
// Waiting blocks stay held (checked like quarantine, hidden from the pool's
// figures), bounded by reuse_cap_ bytes, oldest released first; a dirty, failed
// or over-bound one goes back to CUDA on the tool's stream. A device whose
// current pool the program set is left out.
//
// Reuse of cudaMalloc / cuMemAlloc blocks (malloc_reuse, on by default): such
// a block leaving the quarantine with its zones written is checked on the
// tool's stream (its free synchronized the device already) and stays with
// the tool; once the check has answered clean, a cudaMalloc or cuMemAlloc in
// its context whose planned block it fits (at most 1/8 larger, the same
// front) takes it (TakeDeviceReusable): no cuMemAlloc and, for the program's
// free, no cuMemFree, which are most of what an allocation and a free cost
// (3.4 and 3.0 us on an H100). The free still synchronizes (TryHold), and
// the taken block gets a buffer id of its own (ReusedBufferId), so the
// program sees what CUDA's own allocation would have shown it. A block
// shared outside the process or given a pointer attribute (NoteShared) is
// never reused; blocks over the bound go to the release queue.
//
// The free path never waits on the host for a zone check. Blocks leaving the
// quarantine go, as a batch, to the context's release queue: the batch's
// check is enqueued on the tool's stream (CheckAsync) and answered at a
// later entry point (a free, allocation, launch or synchronization polls
// it); once answered, its blocks go back to CUDA (DeviceOps::Release) one
// per synchronous free of the program: the free the program makes of a held
// block owes it a device synchronization, and CUDA's free of the oldest
// answered block *is* that synchronization (a context sync stands in when
// none is answered yet). So a cudaFree under the tool synchronizes exactly
// once, as without it. Bytes in the release queue are bounded
// (release_cap_): over it, answered blocks are released at once and, if
// that is not enough, the oldest check is waited for. Out of memory, exit
// and context teardown drain the queue (waiting for its checks).
//
// Thread safety: every member is thread-safe (one mutex; GPU work happens
// under it, which serializes the tool's own CUDA calls).
#ifndef GMT_LIB_GUARD_GUARD_MANAGER_H_
#define GMT_LIB_GUARD_GUARD_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "lib/core/error_kind.h"
#include "lib/core/options.h"
#include "lib/guard/device_ops.h"
#include "lib/guard/guard_layout.h"
#include "lib/guard/guarded_alloc.h"
#include "lib/launch/launch_reach.h"
#include "lib/registry/registry.h"

namespace gmt {

inline constexpr uint8_t kCanaryByte = 0xCB;
inline constexpr uint8_t kFreedByte = 0xFD;

// One corrupted zone of one block.
struct GuardFinding {
  ErrorKind kind = ErrorKind::kOobWrite;
  AllocationRecord block;            // the user's view (raw fields set)
  std::optional<FreedRecord> freed;  // set for a block in quarantine
  int64_t first_offset = 0;          // from the user's start
  int64_t last_offset = 0;
  uint64_t changed_bytes = 0;
  std::vector<uint32_t> kernels;  // kernel ids, oldest first
  uint64_t kernels_omitted = 0;
  std::string check;  // "sync", "kernel", "suspect", "exit", ...
  // `kernels` became suspects: checked after each later launch.
  bool suspects_checked = false;
};

struct GuardStats {
  uint64_t guarded = 0;        // blocks that got redzones
  uint64_t unguarded_oom = 0;  // blocks that fell back (no memory)
  // Blocks that fell back because CUDA refused the enlarged size for
  // another reason (a limit the program's own size stays under).
  uint64_t unguarded_refused = 0;
  uint64_t unguarded_capture = 0;    // made during stream capture
  uint64_t unguarded_shareable = 0;  // from a pool shared with other processes
  uint64_t checks = 0;               // check launches that completed
  uint64_t check_failures = 0;       // checks that could not run
  // Canary fills that could not run (before this count, a tool whose
  // fills all failed reported "0 check failures" and looked clean): those
  // zones were never armed, so they were never checked either.
  uint64_t fill_failures = 0;
  uint64_t bytes_checked = 0;
  uint64_t held_bytes = 0;  // in quarantine or awaiting release now
  uint64_t evicted = 0;     // blocks given back to CUDA after their hold
  // Allocations served with a checked block instead of CUDA (reuse).
  uint64_t reused = 0;
  // Of those, blocks taken on their check's stream before it answered.
  uint64_t reused_in_flight = 0;
  // Allocations that could have been served so and went to CUDA, and of
  // the ones looked at (the first and then 1 in kReuseMissSampleEvery),
  // why: no block of their size with the tool, one in quarantine still, or
  // one whose check had not answered yet (the nearest state wins).
  uint64_t reuse_misses = 0;
  uint64_t reuse_miss_none = 0;
  uint64_t reuse_miss_quarantine = 0;
  uint64_t reuse_miss_checking = 0;
  // Times the bound on bytes awaiting release made a free wait for a check.
  uint64_t release_waits = 0;
  // Kernels made suspects (suspect_checks), and the checks after their
  // launches.
  uint64_t suspects = 0;
  uint64_t suspect_checks = 0;
};

class GuardManager {
 public:
  GuardManager(const Options& options, DeviceOps* ops);
  GuardManager(const GuardManager&) = delete;
  GuardManager& operator=(const GuardManager&) = delete;

  const GuardPolicy& policy() const { return policy_; }
  CheckLevel level() const { return level_; }
  // Whether allocations of `api` get redzones (policy and a DeviceOps).
  bool Guards(Api api) const { return ops_ != nullptr && policy_.Guards(api); }
  DeviceOps* ops() const { return ops_; }

  // ---- Allocation --------------------------------------------------------
  // A guarded block came back from CUDA (block.guarded()). Canaries are
  // pending; a stream-ordered block is filled on its stream now.
  void Arm(const AllocationRecord& block);
  // CUDA refused a block enlarged for redzones with `cuda_result` and the
  // program's own request was made instead (lib/guard/guarded_alloc.h).
  void NoteUnguarded(int cuda_result) {
    (IsOutOfMemory(cuda_result) ? unguarded_oom_ : unguarded_refused_)
        .fetch_add(1, std::memory_order_relaxed);
  }
  void NoteUnguardedCapture() { unguarded_capture_.fetch_add(1); }
  // A block of a pool shared with other processes: left unguarded, since a
  // peer the tool does not run in would read it from its raw start.
  void NoteUnguardedShareable() {
    unguarded_shareable_.fetch_add(1, std::memory_order_relaxed);
  }

  // ---- Free --------------------------------------------------------------
  // A guarded block is being freed by `free_api` (it has left the registry).
  // True: the tool keeps it (quarantine, or awaiting its check) and CUDA
  // must not be called; the device synchronization the program's free owes
  // has been given (by CUDA's free of an older block, or a context sync).
  // False: the caller frees block.raw_address with CUDA now, after
  // BeforeRealFree.
  bool TryHold(const AllocationRecord& block, const FreedRecord& freed,
               std::vector<GuardFinding>* findings);
  // A guarded stream-ordered block is being freed with cudaFreeAsync /
  // cuMemFreeAsync on `stream`. True: the tool keeps it in quarantine and
  // CUDA must not be called; its user bytes get the freed pattern on
  // `stream` now (in the free's stream order, after the program's last use
  // of it), so a later write through a stale pointer is a uaf-write. When
  // it leaves the quarantine its zones are checked on that stream and CUDA's
  // stream-ordered free follows at once on the same stream: no host wait,
  // ever. False (no quarantine, a stream being captured, CUDA refused the
  // fill, quarantine_async off): the caller frees it with CUDA now, after
  // BeforeRealFree.
  bool TryHoldOrdered(const AllocationRecord& block, const FreedRecord& freed,
                      uint64_t stream);
  // Checks the block's zones before CUDA frees it (on `stream` for a
  // stream-ordered free, without waiting).
  void BeforeRealFree(const AllocationRecord& block, uint64_t stream,
                      std::vector<GuardFinding>* findings);
  // A stream-ordered block is being freed with cudaFree / cuMemFree. CUDA
  // keeps counting such a block in its pool's USED_MEM_CURRENT for good
  // (measured on the H200, driver 580: through later frees, syncs and
  // trims), so its redzones stay counted too: the pool is asked now, while
  // CUDA still knows the block, and the redzones stay hidden from the
  // pool's figures after the free (StreamOrderedCharges).
  void NoteSynchronousPoolFree(const AllocationRecord& block);
  // CUDA answered the free: `freed` false means the block is still live.
  void AfterRealFree(const AllocationRecord& block, bool freed);
  // After a held free: moves held blocks over the budget to the release
  // queue (a batch, its check enqueued without waiting), collects answered
  // checks, and keeps the queue under its bound.
  void EvictOverBudget(std::vector<GuardFinding>* findings);
  // Out of memory: checks and releases every held block and every block
  // awaiting its check (waiting for those checks). Returns the bytes given
  // back to CUDA.
  uint64_t ReleaseQuarantine(std::vector<GuardFinding>* findings);
  // `stream` is about to be destroyed: the stream-ordered blocks held since
  // a free on it leave the quarantine now (check and free enqueued on it).
  void ReleaseHeldOnStream(uint64_t stream,
                           std::vector<GuardFinding>* findings);
  // A trim of `pool` (or a reset of its USED_MEM_HIGH): every held
  // stream-ordered block of that pool (quarantine, and those kept for reuse,
  // their checks answered first) goes back to CUDA, and the contexts they
  // were in are synchronized so that their frees have run. Blocks of other
  // pools stay held: the trim does not touch their pools. A block whose pool
  // the driver does not name goes too, as do all with `pool` 0. Returns the
  // raw bytes given back.
  uint64_t ReleaseHeldOrdered(uint64_t pool,
                              std::vector<GuardFinding>* findings);
  // Collects the answers of release-queue checks that are in, without
  // waiting (entry points that must not synchronize: allocations).
  void PollReleases(std::vector<GuardFinding>* findings);
  // Whether a block the tool holds (quarantine or release queue) starts
  // (its raw block) at `raw_address`.
  bool HoldsRaw(uint64_t raw_address) const;

  // ---- Reuse of checked stream-ordered blocks (see the top) ---------------
  // Whether stream-ordered allocations may be served from checked blocks.
  bool ReusesBlocks() const { return ops_ != nullptr && reuse_ordered_; }
  // Whether cudaMalloc / cuMemAlloc may be served from checked blocks.
  bool ReusesDeviceBlocks() const { return ops_ != nullptr && reuse_device_; }
  // A checked block of `context` for a cudaMallocAsync of `bytes` laid out
  // as `layout`: its raw address, taken (the caller records the allocation
  // at raw + layout.front, and Arm finds its zones already written), or
  // nullopt. Lock-free while nothing is waiting for reuse.
  // A block whose check is still in flight may be taken by an allocation
  // on `stream` when that check was enqueued on that stream: it reads the
  // zones before anything the program does with the new tensor there, as
  // CUDA's pool hands a block freed on a stream to that stream's next
  // allocation at once.
  std::optional<uint64_t> TakeReusable(uint64_t context, uint64_t bytes,
                                       const GuardLayout& layout,
                                       uint64_t stream);
  // A checked cudaMalloc / cuMemAlloc block of `context` for an allocation
  // laid out as `layout`: one whose raw block is at least layout.raw_bytes
  // and at most 1/8 more, with the same front. Returns its raw address and
  // raw bytes, taken (the caller records the allocation at raw +
  // layout.front with those raw bytes; Arm rewrites its tail canaries when
  // the user's end moved), or nullopt. Lock-free while none is ready.
  struct ReusedBlock {
    uint64_t raw = 0;
    uint64_t raw_bytes = 0;
  };
  std::optional<ReusedBlock> TakeDeviceReusable(uint64_t context,
                                                const GuardLayout& layout);
  // The buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID) of the live block at
  // `raw` of `context` when TakeDeviceReusable served it: CUDA would still
  // answer its last owner's. nullopt for every other block.
  std::optional<uint64_t> ReusedBufferId(uint64_t context, uint64_t raw) const;
  // A stream capture began / ended (any thread, any mode): while one is in
  // progress a cudaMalloc may be one CUDA refuses, so TakeDeviceReusable
  // serves none and CUDA answers.
  void NoteCaptureBegun() {
    captures_in_progress_.fetch_add(1, std::memory_order_acq_rel);
  }
  void NoteCaptureEnded() {
    int64_t n = captures_in_progress_.load(std::memory_order_acquire);
    while (n > 0 && !captures_in_progress_.compare_exchange_weak(
                        n, n - 1, std::memory_order_acq_rel)) {
    }
  }
  // The block at `raw` of `context` was shared outside the process or given
  // a pointer attribute that stays with its memory: never reused.
  void NoteShared(uint64_t context, uint64_t raw);
  // Misses looked at for their reason (GuardStats::reuse_miss_*): a walk of
  // the context's blocks, so not every one.
  static constexpr uint64_t kReuseMissSampleEvery = 16;
  // The program set `device`'s current pool: its cudaMallocAsync blocks may
  // come from another pool, so none is reused there again.
  void NoteDevicePoolSet(int device);

  // ---- Launches, synchronization, checks -----------------------------------
  void BeforeLaunch(uint64_t context, uint64_t stream);
  // `arg_words`: the launch's parameter words (ReadArgWords), or null when
  // they are unknown (then a per-kernel check covers every zone).
  void AfterLaunch(uint64_t context, uint64_t stream, uint32_t kernel,
                   const std::vector<ArgWord>* arg_words,
                   std::vector<GuardFinding>* findings);
  // AfterLaunch in two halves (a launch seen from inside the
  // driver's call logs now and is checked later, outside it).
  // NoteLaunch: the launch log only, for attribution; no CUDA call.
  void NoteLaunch(uint64_t context, uint32_t kernel);
  // With check=kernel, enqueues the check of what `kernel` did on `stream`:
  // the zones of the blocks `arg_words` point into, every zone when it is
  // null. `context_current`: `context` is current on this thread (the
  // caller has just launched the kernel there), so the check need not make
  // it current (DeviceOps::CheckAfterKernel).
  void CheckAfterLaunch(uint64_t context, uint64_t stream, uint32_t kernel,
                        const std::vector<ArgWord>* arg_words,
                        std::vector<GuardFinding>* findings,
                        bool context_current = false);
  // A launch seen from inside the driver's own call (a CUPTI exit callback):
  // no CUDA call may be made there. The launch is logged for attribution
  // and, with check=kernel, its check is owed: enqueued on its stream by
  // SettleOwedChecks, which the engine calls before the next launch (so a
  // report still names exactly this kernel) and at the next
  // synchronization, zone check or teardown, whichever comes first.
  // `arg_words` as for AfterLaunch (copied: the program's arguments are gone
  // by the time the check is made).
  void NoteLaunchDeferred(uint64_t context, uint64_t stream, uint32_t kernel,
                          const std::vector<ArgWord>* arg_words);
  void SettleOwedChecks(std::vector<GuardFinding>* findings);
  // Whether CheckAfterLaunch does anything (check=kernel, zones on).
  bool ChecksEachKernel() const {
    return ops_ != nullptr && level_ == CheckLevel::kKernel;
  }
  // Whether a launch of `kernel` may get a check: every kernel's with
  // check=kernel, a suspect's otherwise. Lock-free (a bit per kernel id
  // modulo kSuspectBits; CheckAfterLaunch confirms under the lock), so a
  // launch's arguments are read whole only when it is true.
  bool MayCheckKernel(uint32_t kernel) const {
    if (ChecksEachKernel()) return true;
    const uint64_t word = suspect_bits_[(kernel % kSuspectBits) / 64].load(
        std::memory_order_relaxed);
    return ((word >> (kernel % 64)) & 1) != 0;
  }
  // Whether a per-kernel check could find anything: some block was guarded.
  // Lock-free, so a launch's arguments are only read when it is true.
  bool HasGuardedBlocks() const {
    return any_armed_.load(std::memory_order_relaxed);
  }
  // A synchronizing call succeeded. `stream` is the stream it waited for;
  // `device_wide` when it waited for the whole context.
  void OnSynchronized(uint64_t context, uint64_t stream, bool device_wide,
                      std::vector<GuardFinding>* findings);
  // Every context, every zone, now; waits for asynchronous checks.
  void CheckAll(absl::string_view reason, std::vector<GuardFinding>* findings);
  // Final picture of the contexts being destroyed (context 0: every context
  // on `device`), then forgets them.
  void BeforeTeardown(int device, uint64_t context,
                      std::vector<GuardFinding>* findings);

  // ---- IPC -----------------------------------------------------------------
  uint64_t PrepareIpcExport(const AllocationRecord& block);
  // `user_bytes` (may be null) gets the exporter's user size, 0 without a
  // header.
  uint64_t IpcUserAddress(uint64_t context, uint64_t raw_base,
                          uint64_t* user_bytes = nullptr);

  GuardStats Stats() const;
  // Device memory of `device` the tool holds back now (quarantine and
  // release queue), as freeing it would show in the device's free memory
  // (CUDA's page rounding included): free memory as far as the program can
  // tell.
  uint64_t HeldBytes(int device) const;
  // Guarded stream-ordered blocks CUDA still counts as in use in their pool
  // (live, or held in quarantine) and the bytes of each the program did not
  // ask for: the redzones of a live one, all of a held one.
  struct PoolCharge {
    uint64_t raw = 0;
    uint64_t hidden_bytes = 0;
    // The pool, when the block is gone and CUDA can no longer say (0: ask
    // CUDA for raw's pool).
    uint64_t pool = 0;
  };
  std::vector<PoolCharge> StreamOrderedCharges() const;

 private:
  enum class Role : uint8_t { kFront, kTail, kFreedUser };

  struct Block {
    AllocationRecord record;
    uint64_t front_begin = 0;  // first checked byte before the user's start
    // Freed with a synchronous free: its pool (NoteSynchronousPoolFree).
    uint64_t synchronous_free_pool = 0;
    bool held = false;
    bool canaries_pending = true;  // front/tail not yet (re)written
    bool canaries_armed = false;   // front/tail written at least once
    bool freed_pending = false;    // held: user bytes not yet filled
    bool freed_armed = false;
    // Stream-ordered block whose fill ran on its own stream: checked on other
    // streams only once a synchronization proved the fill done.
    bool confirmed = true;
    // Between BeforeRealFree and AfterRealFree: CUDA may already have freed
    // (and handed out again) the block's memory, so it is neither filled nor
    // put in a table by other threads (a concurrent sync check read
    // a block another thread had just freed and reported the allocator's
    // bookkeeping in it as an overrun; a concurrent flush could paint
    // canaries over memory the program owns again).
    bool freeing = false;
    // Unique among every block of the process (NextGeneration), renewed at
    // every (re)fill: a check made before a block's memory went back to CUDA
    // and was handed out again never matches the new block's zones.
    uint32_t generation = 0;
    std::optional<FreedRecord> freed;
    // Held after the quarantine for reuse: its check on the way is
    // pending (kChecking), it answered clean (kReady), or an allocation
    // took it and Arm is to find it (kTaken).
    enum class Reuse : uint8_t { kNone, kChecking, kReady, kTaken };
    Reuse reuse = Reuse::kNone;
    uint64_t reuse_serial = 0;  // which entry of Context::reusable is its
    // Taken for reuse while the check of its last lifetime was still in
    // flight (TakeInFlightLocked): that check's ticket. Until it answers,
    // the live block's canaries stay out of other checks: that check
    // reports what the last lifetime did to them, and a change it finds is
    // then written over (a check of the new lifetime would report the same
    // bytes again, against the wrong tensor).
    uint64_t canaries_owed_to = 0;
    // Shared outside the process or given a lasting attribute (NoteShared).
    bool no_reuse = false;
    // Served by TakeDeviceReusable: the buffer id the program is told.
    uint64_t reused_buffer_id = 0;
  };
  struct ZoneRef {
    uint64_t raw = 0;
    Role role = Role::kFront;
    uint32_t generation = 0;
  };
  struct Table {
    std::vector<GmtZone> zones;
    std::vector<ZoneRef> refs;
  };
  struct PendingCheck {
    uint64_t ticket = 0;
    uint64_t context = 0;
    std::shared_ptr<const Table> table;
    uint32_t kernel = 0;  // per-kernel check: the kernel; 0 otherwise
    std::string check;
    // Blocks being freed: they have left the map (a stream-ordered free,
    // or quarantine evictions of stream-ordered blocks).
    std::vector<Block> owned;
    uint64_t sequence = 0;  // order of enqueueing (ReleaseBatch)
    // A full check of the context (every zone, at a synchronization): the
    // launch log position when it was enqueued, which becomes the context's
    // clean_sequence once it has answered; 0 for a partial check.
    uint64_t clean_through = 0;
    // A full check clears the context's findings_lost when it was set at the
    // enqueue (the zones those findings named are in this check's table).
    bool clears_lost = false;
    // Blocks (raw addresses) held for reuse whose check this is: ready for
    // reuse once it answers clean (SettleReuseLocked).
    std::vector<uint64_t> reuse = {};
    // Blocks of `reuse` that an allocation on this check's stream took
    // before it answered (their last lifetimes are copied into `owned`, so
    // what it finds is told of them): SettleHandedOverLocked.
    std::vector<uint64_t> handed_over = {};
    // Counted in reuse_checks_in_flight_ (it had blocks for reuse).
    bool counted_for_reuse = false;
  };
  // Blocks on their way back to CUDA, out of the context's block map: their
  // check enqueued on the tool's stream, released once it has answered.
  struct ReleaseBatch {
    uint64_t ticket = 0;  // 0 once answered (or with nothing to check)
    std::shared_ptr<const Table> table;
    std::vector<Block> blocks;  // oldest first
    size_t next = 0;            // blocks before it are released
    uint64_t bytes = 0;         // raw bytes of blocks not yet released
    std::string check;          // "quarantine", or "free" without one
    uint64_t since = 0;         // launch log position when enqueued
    // Per-kernel checks enqueued before this batch may read its blocks:
    // none is released before they have answered (their findings name the
    // block by its address, which CUDA may hand out again).
    uint64_t kernel_checks_before = 0;
    bool in_wait = false;  // a thread waits for its answer, lock let go
    bool answered() const { return ticket == 0; }
  };
  struct Context {
    int device = -1;
    absl::flat_hash_map<uint64_t, Block> blocks;  // by raw address
    std::deque<uint64_t> quarantine;              // oldest first
    uint64_t held_bytes = 0;
    uint64_t clean_sequence = 0;  // launch log position at the last check
    // Blocks (raw addresses) whose canaries or freed pattern wait for the
    // next fill (FlushFills, before a launch or a check): that flush visits
    // them alone, not every block, which with a quarantine of small blocks
    // are thousands. A vector, as a push costs less than a set's insert: an
    // address may appear twice, and one whose block is gone is skipped.
    std::vector<uint64_t> pending_fills;
    // Stream-ordered blocks (raw addresses) whose canaries or freed pattern
    // wait for the next launch on the block's stream (FlushOrderedFills):
    // one fill launch there for all of them, where each allocation and free
    // made its own. Until then their zones are not armed, so never checked.
    absl::flat_hash_set<uint64_t> ordered_fills;
    std::shared_ptr<const Table> table;  // per-kernel checks; null if stale
    // Every armed zone, as a synchronization's check reads them: kept while
    // no block changes (and every block was confirmed when it was built), so
    // a program that synchronizes each step with thousands of blocks held
    // does not rebuild the list each time (128 us a synchronization with
    // 2000 held, in guard_free_bench). Null if stale.
    std::shared_ptr<const Table> sync_table;
    // A block or its zones changed: both tables are stale.
    void TablesStale() {
      table.reset();
      sync_table.reset();
    }
    std::deque<ReleaseBatch> releasing;  // oldest first
    uint64_t releasing_bytes = 0;
    // What freeing the held and releasing blocks would give back to the
    // device (HeldBytes, asked at every cudaMemGetInfo): kept as they come
    // and go rather than summed over `blocks`.
    uint64_t held_footprint = 0;
    // With check=kernel (only), the raw extents of `blocks` (held ones too:
    // a kernel may write through a dangling pointer), for finding what a
    // launch's arguments reach; kept as blocks come and go, so a launch after
    // an allocation costs a lookup, not a rebuild and sort of the index
    // (58 us a launch with a quarantine of 2000 small blocks).
    BlockRanges ranges;
    // A per-kernel check's findings were overwritten before they were read
    // (DeviceOps::Poll::kLost): the changed zones are still changed, and
    // the next full check (at the next synchronization) reports them, naming
    // the kernels since the last clean check. Until then per-kernel checks
    // of this context are neither made nor answered, so no later kernel is
    // blamed for them.
    bool findings_lost = false;
    // Blocks ready for reuse (Reuse::kReady) by user size, newest last, and
    // all of them oldest first for the bound: (raw, reuse_serial) entries,
    // skipped once their block has moved on (compacted when mostly stale).
    absl::flat_hash_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>>
        reusable;
    std::deque<std::pair<uint64_t, uint64_t>> reusable_order;
    // Blocks that left the quarantine for reuse (Reuse::kChecking) whose
    // check is grouped, per stream, to ride on a fill there
    // (FlushOrderedFills, DeviceOps::CheckAndFill) instead of being a launch
    // of its own: at the eviction, the fill its free left due
    // (LaunchReuseChecksLocked). At most one launch's worth a stream
    // (DeferReuseChecksLocked). Left waiting only where nothing may be
    // enqueued (a stream being captured): then enqueued at the next fill
    // there, a device-wide synchronization or wherever held blocks must
    // answer (trim, out-of-memory, stream destruction, teardown).
    struct DeferredChecks {
      std::vector<uint64_t> raws;
      uint64_t raw_bytes = 0;
    };
    absl::flat_hash_map<uint64_t, DeferredChecks> deferred_checks;
    uint64_t reusable_bytes = 0;  // raw bytes of kChecking and kReady blocks
    uint64_t ready_count = 0;     // kReady stream-ordered blocks
    // Ready cudaMalloc / cuMemAlloc blocks (kReady) by raw bytes -> raw
    // address; entries leave it as their blocks do.
    std::multimap<uint64_t, uint64_t> device_ready;
    uint64_t next_reuse_serial = 1;
  };
  struct LaunchEntry {
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> context{0};
    std::atomic<uint32_t> kernel{0};
  };
  static constexpr size_t kLaunchLog = 1024;
  static constexpr size_t kMaxPendingChecks = 256;
  static constexpr size_t kMaxListedKernels = 16;
  // Suspects: at most this many kernels (past it, a finding names its
  // kernels as before and makes none a suspect), and the bits of the
  // lock-free filter MayCheckKernel reads.
  static constexpr size_t kMaxSuspects = 256;
  static constexpr size_t kSuspectBits = 4096;
  // Zones per fill launch of stream-ordered blocks: what one launch's
  // parameters hold (DeviceOps::Fill makes it one launch).
  static constexpr size_t kOrderedFillZones = GMT_INLINE_MAX_ZONES;
  // Without a quarantine, held blocks are checked in batches of this many
  // blocks or bytes (one check launch for many frees).
  static constexpr size_t kFreeCheckBatchBlocks = 64;
  static constexpr uint64_t kFreeCheckBatchBytes = uint64_t{8} << 20;
  // The least bound on bytes awaiting release (release_cap_).
  static constexpr uint64_t kMinReleaseCapBytes = uint64_t{16} << 20;
  // Blocks held for reuse: up to this many times quarantine_bytes. A
  // training step frees tensors of tens of MiB that the next step asks for
  // again; memory the pool would hold as free otherwise (PyTorch keeps its
  // pool's memory reserved), and an out-of-memory retry gives it all back.
  static constexpr uint64_t kReuseCapFactor = 4;

  Context& ContextFor(uint64_t context, int device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushFillsLocked(uint64_t context, Context& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Zones of `b` that hold a known pattern now.
  void AppendArmedZones(const Block& b, Table* table) const;
  // Every checkable zone of the context (see Block::confirmed).
  std::shared_ptr<const Table> BuildTable(const Context& c, uint64_t stream,
                                          bool device_wide) const;
  // Checks `table` on the tool's stream and turns changed zones into
  // findings (kernels since launch `since` named); re-arms what it reports;
  // then the context counts as clean up to launch `sequence` (0: unchanged).
  // Waits for the GPU with mu_ let go: references into contexts_ are stale
  // afterwards.
  void CheckTableLocked(uint64_t context,
                        const std::shared_ptr<const Table>& table,
                        absl::string_view check, std::optional<Block> owned,
                        uint64_t since, uint64_t sequence,
                        std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SynchronizeContext with mu_ let go, then every zone of `context`.
  void SyncAndCheckLocked(uint64_t context, absl::string_view check,
                          std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectResults(uint64_t context, Context& c, const Table& table,
                      const std::vector<GmtZoneResult>& results,
                      absl::string_view check, uint32_t kernel,
                      absl::Span<const Block> owned, uint64_t since,
                      std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers finished asynchronous checks; all of them when `wait` (waiting
  // with mu_ let go).
  void PollPendingLocked(bool wait, std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The fills flushed, the blocks a synchronization covered confirmed, and
  // the table of every zone of `c` (of `stream`'s blocks unless
  // `device_wide`): what a full check reads.
  std::shared_ptr<const Table> FullTableLocked(uint64_t context, Context& c,
                                               uint64_t stream,
                                               bool device_wide)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks every zone of `c` (CheckTableLocked: lets mu_ go meanwhile).
  void CheckContextLocked(uint64_t context, Context& c, uint64_t stream,
                          bool device_wide, absl::string_view check,
                          std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues the check of every zone of `c` on the tool's stream without
  // waiting: answered by a later poll (the next synchronization, a free of a
  // guarded block, exit), like a per-kernel check.
  void EnqueueContextCheckLocked(uint64_t context, Context& c, uint64_t stream,
                                 bool device_wide, absl::string_view check,
                                 std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether any zone of `b` holds a known pattern (something to check).
  static bool HasArmedZones(const Block& b);
  // Moves the `count` oldest held blocks of `c` to its release queue as one
  // batch and enqueues their check on the tool's stream (no wait).
  // Returns the raw bytes of stream-ordered blocks given back to CUDA at
  // once (they need no release queue).
  uint64_t EvictLocked(uint64_t context, Context& c, size_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Collects the answers of `context`'s release batches that are in; with
  // `wait_oldest`, waits (mu_ let go) for the oldest unanswered one first.
  void PollReleasesLocked(uint64_t context, bool wait_oldest,
                          std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits (mu_ let go) until every release batch of `context` has answered.
  void AnswerReleasesLocked(uint64_t context,
                            std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the oldest released-able block of `context` out of its queue
  // (answered, no earlier per-kernel check outstanding).
  std::optional<Block> TakeReleasableLocked(uint64_t context)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DeviceOps::Release with mu_ let go. Returns the CUDA result.
  int ReleaseBlockLocked(uint64_t context, const Block& b)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The device synchronization a program's free of a held block owes:
  // CUDA's free of the oldest answered block, else a context sync. False if
  // the context answered an error (the caller lets CUDA's own free say it).
  bool SynchronizeForFreeLocked(uint64_t context,
                                std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Without a quarantine: enqueues the check of every held block of `c`
  // now (a synchronization, exit or teardown reports what they find).
  void EnqueueFreeChecksLocked(uint64_t context, Context& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Held stream-ordered blocks leaving the quarantine (EvictLocked): per
  // stream, one check of their zones on that stream, then CUDA's
  // stream-ordered free of each right behind it. Returns the raw bytes
  // handed back.
  uint64_t ReleaseOrderedLocked(uint64_t context,
                                const std::vector<Block>& blocks)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues the check of cudaMalloc / cuMemAlloc blocks `raws` of `c`
  // (left in the map, Reuse::kChecking) on the tool's stream; answered by
  // SettleReuseLocked.
  void EnqueueDeviceReuseCheckLocked(uint64_t context, Context& c,
                                     std::vector<uint64_t> raws)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `b`, leaving the quarantine, may wait for reuse.
  bool MayReuseLocked(const Context& c, const Block& b) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues, per stream, the check of the blocks `raws` of `c` (left in
  // the map, Reuse::kChecking) on that stream; answered by
  // SettleReuseLocked.
  void EnqueueReuseChecksLocked(uint64_t context, Context& c,
                                const std::vector<uint64_t>& raws)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same checks, grouped per stream to ride on a fill there
  // (Context::deferred_checks); a stream's waiting checks that would not fit
  // one launch with the new ones are enqueued first.
  void DeferReuseChecksLocked(uint64_t context, Context& c,
                              const std::vector<uint64_t>& raws)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Launches the waiting checks of `c` at the eviction that made them: each
  // stream's ride on the fill due there (the pattern of the bytes its free
  // just left), the others alone. A check gates its blocks' reuse, and an
  // eager framework allocates the next tensor of a shape it just freed
  // before its next launch: with the check left for that launch's fill, a
  // CNN in tensor mode on an H100 had about 8 900 of 29 900 allocations
  // served by reuse, against 22 700-24 600 with the check at the eviction.
  void LaunchReuseChecksLocked(uint64_t context, Context& c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues the waiting checks of `stream` (every stream: nullopt) of `c`
  // on their streams now, leaving those of streams being captured.
  void FlushDeferredChecksLocked(uint64_t context, Context& c,
                                 std::optional<uint64_t> stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The table of the zones of reuse candidates `raws`.
  std::shared_ptr<Table> ReuseTableLocked(
      const Context& c, const std::vector<uint64_t>& raws) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The check of `raws` enqueued with `ticket` (0: it could not be): waits
  // in pending_ for SettleReuseLocked, or gives the blocks back.
  void AwaitReuseCheckLocked(uint64_t context, Context& c,
                             std::vector<uint64_t> raws,
                             std::shared_ptr<Table> table, uint64_t ticket)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The check of `p` answered with `state`: the blocks it found clean
  // become ready for reuse, the rest go back to CUDA; then the bound.
  void SettleReuseLocked(const PendingCheck& p, DeviceOps::Poll state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A block of `c` of `bytes` laid out as `layout` whose reuse check is
  // enqueued on `stream` and has not answered: taken (its last lifetime
  // handed to that check), or nullopt.
  std::optional<uint64_t> TakeInFlightLocked(uint64_t context, Context& c,
                                             uint64_t bytes,
                                             const GuardLayout& layout,
                                             uint64_t stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The check of `p` answered: the blocks taken before it did may have
  // their canaries checked again (rewritten first unless it read them).
  void SettleHandedOverLocked(const PendingCheck& p, DeviceOps::Poll state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the reuse block `raw` of `c` back to CUDA: on the tool's stream
  // when its free is known complete, else on its own stream; a cudaMalloc
  // block joins the release queue instead (CUDA's free synchronizes).
  // Returns the raw bytes given back now (0 if it was not there, or
  // queued).
  uint64_t ReleaseReuseBlockLocked(uint64_t context, Context& c, uint64_t raw,
                                   bool free_complete)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the held stream-ordered blocks of `c` (of `stream` only, unless
  // nullopt; of `pool` only, unless 0: see OfPoolLocked) out of its
  // quarantine and block map, for ReleaseOrderedLocked.
  std::vector<Block> TakeHeldOrderedLocked(uint64_t context, Context& c,
                                           std::optional<uint64_t> stream,
                                           uint64_t pool = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the block at `raw` of `context` counts as `pool`'s for a release
  // of that pool's blocks: `pool` 0 (any), or the driver names it (or names
  // no pool: released rather than kept, as before pools were told apart).
  bool OfPoolLocked(uint64_t context, uint64_t raw, uint64_t pool)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An allocation found no block ready: counts it; true for the ones to
  // look at (the first, then every kReuseMissSampleEvery-th).
  bool CountReuseMiss();
  // Why an allocation of `bytes` in `c` found no block ready, by the blocks
  // of its size the tool holds (GuardStats::reuse_miss_*).
  void ClassifyReuseMissLocked(const Context& c, uint64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every block of `c` ready for reuse (of `pool` only, unless 0) goes back
  // to CUDA (out of memory, a trim).
  uint64_t ReleaseReusableLocked(uint64_t context, Context& c,
                                 uint64_t pool = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes ready cudaMalloc block `b` out of `c.device_ready`.
  void EraseDeviceReadyLocked(Context& c, const Block& b)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the stale entries of `c`'s reuse lists once they outnumber the
  // live ones.
  static void CompactReusableLocked(Context& c);
  uint32_t NextGeneration() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ++last_generation_;
  }
  // The zones of `b` waiting to be written, appended to `zones`.
  void AppendPendingZones(const Block& b, std::vector<GmtZone>* zones) const;
  // Calls f(begin, end) for each range of the freed bytes of `r` that is
  // poisoned and checked: all of them, or with freed_check_bytes its first
  // and last half of that many (the same ranges for the fill and every
  // check, so a check reads only what was written).
  template <typename F>
  void ForEachFreedRange(const AllocationRecord& r, F&& f) const {
    const uint64_t begin = r.address;
    const uint64_t end = r.address + r.bytes;
    if (freed_half_bytes_ == 0 || end - begin <= 2 * freed_half_bytes_) {
      f(begin, end);
      return;
    }
    f(begin, begin + freed_half_bytes_);
    f(end - freed_half_bytes_, end);
  }
  // `blocks` were filled (`ok`) or could not be: their pending zones are
  // armed, or left unchecked and the failure counted.
  void FilledLocked(absl::Span<Block* const> blocks, bool ok)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `b` needs (re)filling: queued for the tool's stream (FlushFillsLocked),
  // or, stream-ordered, for the next launch on its stream.
  void MarkForFillLocked(Context& c, const Block& b)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `raw` no longer waits for an ordered fill (it left the context).
  void DropOrderedFillLocked(Context& c, uint64_t raw)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enqueues the pending fills of the stream-ordered blocks of `stream`, on
  // that stream, in as few launches as the zones allow; none while it is
  // being captured (they wait for a launch outside the capture).
  void FlushOrderedFillsLocked(uint64_t context, Context& c, uint64_t stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A check's findings were overwritten before they were read: the next
  // full check reports the zones (Context::findings_lost); said once.
  void NoteFindingsLostLocked(uint64_t context)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a check that could not run; says so once.
  void NoteCheckFailureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits (mu_ let go) for what keeps the oldest release batch of `context`
  // from going back to CUDA: its check, or per-kernel checks before it.
  // False when the queue is empty.
  bool WaitForReleaseLocked(uint64_t context,
                            std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases answered blocks of `context` while its release queue is over
  // release_cap_, waiting for the oldest check when none is answered.
  void BoundReleasesLocked(uint64_t context,
                           std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for every check of `context`'s release queue and releases its
  // blocks (`release` false: drops them, the context is going away).
  // Returns the raw bytes released.
  uint64_t DrainReleasesLocked(uint64_t context, bool release,
                               std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether per-kernel checks enqueued before sequence `before` are all
  // answered.
  bool KernelChecksAnsweredLocked(uint64_t before) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The zones of the blocks of `c` that `arg_words` point into (checkable
  // on `stream`, as for BuildTable).
  std::shared_ptr<const Table> BuildReachTable(
      Context& c, uint64_t stream, const std::vector<ArgWord>& arg_words)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Kernels launched in `context` after `since`, oldest first.
  std::vector<uint32_t> KernelsSince(uint64_t context, uint64_t since,
                                     uint64_t* omitted) const;
  // Makes `kernels` suspects (suspect_checks); whether they all are.
  bool AddSuspectsLocked(absl::Span<const uint32_t> kernels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t LaunchSequence() const {
    return launch_sequence_.load(std::memory_order_acquire);
  }

  const GuardPolicy policy_;
  const CheckLevel level_;
  // suspect_checks with check=sync (check=kernel checks every kernel).
  const bool suspect_checks_;
  const uint64_t quarantine_budget_;
  // Stream-ordered frees are held too (quarantine_async, or torch mode).
  const bool hold_ordered_;
  // Bound on the raw bytes of a context awaiting release.
  const uint64_t release_cap_;
  // Stream-ordered blocks wait for reuse (quarantine_reuse with
  // quarantine_async); cudaMalloc / cuMemAlloc blocks do (malloc_reuse).
  const bool reuse_ordered_;
  const bool reuse_device_;
  // Bound on the raw bytes of a context held for reuse (0: no reuse).
  const uint64_t reuse_cap_;
  // Half of freed_check_bytes, rounded up to 256 (0: every freed byte).
  const uint64_t freed_half_bytes_;
  // The most zones one block adds to a fill or a check: its two canaries
  // and its freed bytes, in two ranges with freed_check_bytes.
  size_t MaxZonesPerBlock() const { return freed_half_bytes_ > 0 ? 4 : 3; }
  DeviceOps* const ops_;

  // Held for bookkeeping only, never across a wait for the GPU (a check's
  // result, a synchronization, CUDA's own free, a synchronous copy): the
  // functions that wait let it go and look their state up again after, so a
  // program thread never queues behind the device on it.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Context> contexts_ ABSL_GUARDED_BY(mu_);
  std::deque<PendingCheck> pending_ ABSL_GUARDED_BY(mu_);
  GuardStats stats_ ABSL_GUARDED_BY(mu_);
  // Per pool: redzone bytes of stream-ordered blocks freed with a
  // synchronous free, which CUDA goes on counting as used.
  absl::flat_hash_map<uint64_t, uint64_t> lingering_pool_bytes_
      ABSL_GUARDED_BY(mu_);
  bool check_failure_said_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t last_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_pending_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  // Per-kernel checks out of pending_ whose answer a thread is waiting for.
  int pending_in_wait_ ABSL_GUARDED_BY(mu_) = 0;
  // Release batches whose answer a thread is waiting for.
  int releases_in_wait_ ABSL_GUARDED_BY(mu_) = 0;
  // Release batches whose check has not answered yet, all contexts: the
  // entry points that poll them skip the lock when there are none.
  std::atomic<int> unanswered_releases_{0};
  bool findings_lost_said_ ABSL_GUARDED_BY(mu_) = false;

  // Contexts with pending fills: BeforeLaunch takes the lock only then.
  std::atomic<int> contexts_with_fills_{0};
  // Contexts whose ordered_fills is not empty.
  std::atomic<int> contexts_with_ordered_fills_{0};
  std::atomic<bool> any_armed_{false};  // set at the first guarded block
  // The suspects (suspect_checks), and their bits by kernel id modulo
  // kSuspectBits for the lock-free MayCheckKernel.
  absl::flat_hash_set<uint32_t> suspects_ ABSL_GUARDED_BY(mu_);
  // Context::ranges holds every block's extent (check=kernel, or since the
  // first suspect): what a per-kernel check looks launch arguments up in.
  bool tracks_ranges_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> suspect_bits_[kSuspectBits / 64] = {};
  std::atomic<uint64_t> launch_sequence_{0};
  LaunchEntry launches_[kLaunchLog];
  // Per-kernel checks owed by NoteLaunchDeferred. The count lets every
  // launch and synchronization skip the lock when nothing is owed.
  struct OwedCheck {
    uint64_t context;
    uint64_t stream;
    uint32_t kernel;
    std::optional<std::vector<ArgWord>> arg_words;  // unknown: every zone
  };
  absl::Mutex owed_mu_;
  std::vector<OwedCheck> owed_ ABSL_GUARDED_BY(owed_mu_);
  std::atomic<uint32_t> owed_count_{0};
  std::atomic<uint64_t> unguarded_oom_{0};
  std::atomic<uint64_t> unguarded_refused_{0};
  std::atomic<uint64_t> unguarded_shareable_{0};
  std::atomic<uint64_t> unguarded_capture_{0};
  // Reuse checks in pending_ (TakeReusable looks at in-flight blocks only
  // while there are some).
  std::atomic<int64_t> reuse_checks_in_flight_{0};
  // Blocks ready for reuse, all contexts: TakeReusable skips the lock at 0.
  std::atomic<int64_t> reusable_count_{0};
  // The same for cudaMalloc / cuMemAlloc blocks (TakeDeviceReusable).
  std::atomic<int64_t> device_ready_count_{0};
  std::atomic<int64_t> captures_in_progress_{0};
  // Buffer ids told of reused blocks: the top bit set, so none is one CUDA
  // gives (a process-wide counter from 1).
  static constexpr uint64_t kReusedBufferIdBit = uint64_t{1} << 63;
  uint64_t next_reused_buffer_id_ ABSL_GUARDED_BY(mu_) = 0;
  // Allocations TakeReusable could not serve (GuardStats::reuse_misses).
  std::atomic<uint64_t> reuse_misses_{0};
  // Devices whose current pool the program set (NoteDevicePoolSet).
  absl::flat_hash_set<int> pool_set_devices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmt

#endif  // GMT_LIB_GUARD_GUARD_MANAGER_H_
