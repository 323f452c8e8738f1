// CUPTI memory activity: what CUPTI's asynchronous memory
// records (CUPTI_ACTIVITY_KIND_MEMORY2, CUpti_ActivityMemory4) add to what the
// API hooks saw, each allocation counted once.
//
// The records arrive late, in buffers CUPTI hands over from its own thread or
// at a flush; every allocation and release the driver made is in them,
// including those made by a call no hook saw (a stream-ordered pool
// allocation through an entry point the tool did not reach, memory of a graph
// launch the tool did not see). The front end
// (interpose/cupti/cupti_activity.cc) decodes them into MemoryActivity and
// hands them over through a MemoryActivitySource; the engine
// (lib/engine/engine_activity.cc) runs the cross-check below at the exit report
// and at a free of an address it does not know:
//
//   CUPTI's own picture     address -> the newest record there (an alloc not
//                           followed by a release is live in CUPTI's eyes)
//   a live CUPTI block ...  whose address a hook holds live   : the hooks saw
//                           it; dropped (count once)
//                           that is graph memory the tool knows: the graph
//                           model (lib/registry/graph_memory.h) decides;
//                           dropped that is not stream-ordered / pool memory:
//                           the callbacks see every such call; dropped (this
//                           also keeps the tool's own buffers out) otherwise:
//                           adopted, once, as a block of its own
//   a released adopted one  released in the registry too (no hook saw the
//                           free either)
//
// A candidate is adopted only when a second reconciliation still finds it
// unexplained (or at the final one), so an allocation whose hook has not yet
// recorded it (another thread between CUDA's return and the hook's record)
// is not taken for one no hook saw.
//
// Pure logic: no CUPTI, no registry. Thread safety: not thread-safe (the
// engine serializes calls).
#ifndef GMT_LIB_REGISTRY_MEMORY_ACTIVITY_H_
#define GMT_LIB_REGISTRY_MEMORY_ACTIVITY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/core/api.h"

namespace gmt {

// One memory record, decoded.
struct MemoryActivity {
  enum class Op : uint8_t { kAlloc, kRelease };
  Op op = Op::kAlloc;
  uint64_t address = 0;
  uint64_t bytes = 0;
  int32_t device = 0;
  MemoryKind kind = MemoryKind::kDevice;  // device, managed or pinned host
  bool async = false;        // made by a stream-ordered API (isAsync)
  bool pool = false;         // from a memory pool (memoryPoolConfig set)
  uint64_t timestamp = 0;    // CUPTI's clock: orders records, nothing else
  uint32_t correlation = 0;  // the driver call's correlation id
  uint64_t pc = 0;           // the program counter of the call, 0 if unknown
};

// Where records come from (CUPTI's activity buffers in the tool; a list in
// tests).
class MemoryActivitySource {
 public:
  virtual ~MemoryActivitySource() = default;
  // Appends the records delivered since the last call. `flush`: make CUPTI
  // hand over its incomplete buffers first (never from inside a CUPTI
  // callback).
  virtual void Drain(bool flush, std::vector<MemoryActivity>* out) = 0;
  // No more records from now on; what was recorded before still comes at the
  // next Drain. Safe inside a CUPTI callback.
  virtual void Stop() {}
};

// Installed by the front end when activity collection is on; null otherwise.
void SetMemoryActivitySource(MemoryActivitySource* source);
MemoryActivitySource* GetMemoryActivitySource();

class MemoryActivityCrossCheck {
 public:
  // What the tool knows, asked while deciding.
  class View {
   public:
    virtual ~View() = default;
    // A live block starts at `address` (its user or raw start).
    virtual bool LiveAt(uint64_t address) const = 0;
    // `address` is graph memory the graph model knows.
    virtual bool GraphAddress(uint64_t address) const = 0;
  };

  struct Decision {
    std::vector<MemoryActivity> adopt;    // add as blocks no hook saw
    std::vector<MemoryActivity> release;  // adopted blocks CUPTI saw freed
  };

  // Feeds records; they are applied in timestamp order.
  void Ingest(std::vector<MemoryActivity> records);

  // Decides on CUPTI's current picture. `final`: the last call (exit, or an
  // unknown free being explained): candidates are adopted without waiting
  // for a second look.
  Decision Reconcile(const View& view, bool final);

  // A free of `address` found no live block. If CUPTI's picture has device
  // memory allocated there that no hook held (a call no hook saw made it),
  // returns that allocation, adopted: the caller adds it and lets the free
  // proceed as an ordinary one. Nothing for an address a hook held and freed
  // (a double free), for graph memory the tool knows, or for host memory.
  // An allocation CUPTI already saw released counts too (the free being
  // decided may be the one that released it).
  std::optional<MemoryActivity> Explain(uint64_t address, const View& view);

  // CUPTI's picture has an allocation starting at `address` that is not
  // released (as of the records ingested).
  bool LiveInCupti(uint64_t address) const;
  // Counters, for notes and tests.
  uint64_t records() const { return records_; }
  uint64_t adopted() const { return adopted_; }
  uint64_t dropped_hooked() const { return dropped_hooked_; }

 private:
  enum class State : uint8_t {
    kNew,       // not looked at yet
    kLookedAt,  // unexplained at one reconciliation: adopted at the next
    kHooked,    // a hook held it live: the hooks own it
    kIgnored,   // not the records' business (plain, host, graph memory)
    kAdopted,   // added as a block no hook saw
  };
  struct Entry {
    MemoryActivity alloc;  // the newest allocation at this address
    State state = State::kNew;
  };
  absl::flat_hash_map<uint64_t, Entry> live_;  // CUPTI's live allocations
  // Adopted addresses CUPTI has released since, for the next Reconcile.
  std::vector<MemoryActivity> released_;
  // Allocations no hook was seen holding that CUPTI saw released (the free
  // that released them may be one the engine is still deciding on). Bounded.
  absl::flat_hash_map<uint64_t, MemoryActivity> recently_released_;
  uint64_t records_ = 0;
  uint64_t adopted_ = 0;
  uint64_t dropped_hooked_ = 0;
};

}  // namespace gmt

#endif  // GMT_LIB_REGISTRY_MEMORY_ACTIVITY_H_
