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
//   sync    + after every synchronizing call that returned success
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
//   A block freed while quarantine is off (or a stream-ordered block) is
//   checked at its free.
//
// Freed blocks of synchronous APIs go to a FIFO quarantine (per context,
// quarantine_bytes): CUDA is not called; their user bytes are filled with
// the freed pattern; a later change is a uaf-write. Eviction checks a batch
// and frees it with the real CUDA call.
//
// Thread safety: every member is thread-safe (one mutex; GPU work happens
// under it, which serializes the tool's own CUDA calls).
#ifndef GMT_LIB_GUARD_GUARD_MANAGER_H_
#define GMT_LIB_GUARD_GUARD_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
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
  std::string check;  // "sync", "kernel", "exit", ...
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
  uint64_t held_bytes = 0;  // in quarantine now
  uint64_t evicted = 0;     // blocks released from quarantine
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
  // True: the tool keeps it in quarantine and CUDA must not be called.
  // False: the caller frees block.raw_address with CUDA now, after
  // BeforeRealFree.
  bool TryHold(const AllocationRecord& block, const FreedRecord& freed,
               std::vector<GuardFinding>* findings);
  // Checks the block's zones before CUDA frees it (on `stream` for a
  // stream-ordered free, without waiting).
  void BeforeRealFree(const AllocationRecord& block, uint64_t stream,
                      std::vector<GuardFinding>* findings);
  // CUDA answered the free: `freed` false means the block is still live.
  void AfterRealFree(const AllocationRecord& block, bool freed);
  // Releases held blocks over the budget (a batch, checked first).
  void EvictOverBudget(std::vector<GuardFinding>* findings);
  // Out of memory: checks and releases every held block. Returns the bytes
  // given back to CUDA.
  uint64_t ReleaseQuarantine(std::vector<GuardFinding>* findings);
  // Whether a block in quarantine starts (its raw block) at `raw_address`.
  bool HoldsRaw(uint64_t raw_address) const;

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
  // Raw bytes of `device` held in quarantine now.
  uint64_t HeldBytes(int device) const;
  // Guarded stream-ordered blocks CUDA still counts as in use in their pool
  // (live, or held in quarantine) and the bytes of each the program did not
  // ask for: the redzones of a live one, all of a held one.
  struct PoolCharge {
    uint64_t raw = 0;
    uint64_t hidden_bytes = 0;
  };
  std::vector<PoolCharge> StreamOrderedCharges() const;

 private:
  enum class Role : uint8_t { kFront, kTail, kFreedUser };

  struct Block {
    AllocationRecord record;
    uint64_t front_begin = 0;  // first checked byte before the user's start
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
    uint32_t generation = 0;  // bumped at every (re)fill
    std::optional<FreedRecord> freed;
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
    std::optional<Block> owned;  // a block being freed: it leaves the map
  };
  struct Context {
    int device = -1;
    absl::flat_hash_map<uint64_t, Block> blocks;  // by raw address
    std::deque<uint64_t> quarantine;              // oldest first
    uint64_t held_bytes = 0;
    uint64_t clean_sequence = 0;  // launch log position at the last check
    bool fills_pending = false;
    std::shared_ptr<const Table> table;  // per-kernel checks; null if stale
    // Raw extents of `blocks` (held ones too: a kernel may write through a
    // dangling pointer), for finding what a launch's arguments reach. Only
    // new blocks make it stale: an entry of a block gone since is answered
    // by `blocks` not having it (the lookup checks).
    BlockRanges ranges;
    bool ranges_stale = true;
    // A per-kernel check's findings were overwritten before they were read
    // (DeviceOps::Poll::kLost): the changed zones are still changed, and
    // the next full check (at the next synchronization) reports them, naming
    // the kernels since the last clean check. Until then per-kernel checks
    // of this context are neither made nor answered, so no later kernel is
    // blamed for them.
    bool findings_lost = false;
  };
  struct LaunchEntry {
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> context{0};
    std::atomic<uint32_t> kernel{0};
  };
  static constexpr size_t kLaunchLog = 1024;
  static constexpr size_t kMaxPendingChecks = 256;
  static constexpr size_t kMaxListedKernels = 16;

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
  void CheckTableLocked(uint64_t context, std::shared_ptr<const Table> table,
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
                      const Block* owned, uint64_t since,
                      std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers finished asynchronous checks; all of them when `wait` (waiting
  // with mu_ let go).
  void PollPendingLocked(bool wait, std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks every zone of `c` (CheckTableLocked: lets mu_ go meanwhile).
  void CheckContextLocked(uint64_t context, Context& c, uint64_t stream,
                          bool device_wide, absl::string_view check,
                          std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks and releases the `count` oldest held blocks of a context (CUDA's
  // free called with mu_ let go). Returns the raw bytes released.
  uint64_t EvictLocked(uint64_t context, size_t count,
                       std::vector<GuardFinding>* findings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The zones of the blocks of `c` that `arg_words` point into (checkable
  // on `stream`, as for BuildTable).
  std::shared_ptr<const Table> BuildReachTable(
      Context& c, uint64_t stream, const std::vector<ArgWord>& arg_words)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Kernels launched in `context` after `since`, oldest first.
  std::vector<uint32_t> KernelsSince(uint64_t context, uint64_t since,
                                     uint64_t* omitted) const;
  uint64_t LaunchSequence() const {
    return launch_sequence_.load(std::memory_order_acquire);
  }

  const GuardPolicy policy_;
  const CheckLevel level_;
  const uint64_t quarantine_budget_;
  DeviceOps* const ops_;

  // Held for bookkeeping only, never across a wait for the GPU (a check's
  // result, a synchronization, CUDA's own free, a synchronous copy): the
  // functions that wait let it go and look their state up again after, so a
  // program thread never queues behind the device on it.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Context> contexts_ ABSL_GUARDED_BY(mu_);
  std::deque<PendingCheck> pending_ ABSL_GUARDED_BY(mu_);
  GuardStats stats_ ABSL_GUARDED_BY(mu_);
  bool check_failure_said_ ABSL_GUARDED_BY(mu_) = false;
  bool findings_lost_said_ ABSL_GUARDED_BY(mu_) = false;

  // Contexts with pending fills: BeforeLaunch takes the lock only then.
  std::atomic<int> contexts_with_fills_{0};
  std::atomic<bool> any_armed_{false};  // set at the first guarded block
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
};

}  // namespace gmt

#endif  // GMT_LIB_GUARD_GUARD_MANAGER_H_
