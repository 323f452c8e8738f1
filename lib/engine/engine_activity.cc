// Engine members for CUPTI's memory activity records (
// lib/registry/memory_activity.h): allocations no hook saw, added once, and
// frees of them not taken for the program's errors.
#include "lib/core/driver_callback.h"
#include "lib/core/log.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

// Unknown frees waiting for a flush, at most.
constexpr size_t kMaxSuspectFrees = 4096;

// Set while a deferred free is decided again, so it is not deferred twice.
thread_local bool t_resolving_suspects = false;

// The registry as the cross-check sees it.
class RegistryView : public MemoryActivityCrossCheck::View {
 public:
  explicit RegistryView(const Engine& engine) : engine_(engine) {}
  bool LiveAt(uint64_t address) const override {
    std::optional<BlockView> b = engine_.FindBlock(address);
    if (b && (b->user_address == address || b->raw_address == address)) {
      return true;
    }
    // Freed by the program, held by the tool (quarantine): CUDA still has
    // it allocated, for the tool, not lost.
    return engine_.guard().HoldsRaw(address);
  }
  bool GraphAddress(uint64_t address) const override {
    return engine_.graph_memory().IsGraphAddress(address);
  }

 private:
  const Engine& engine_;
};

AllocEvent AdoptedEvent(const MemoryActivity& a, StackDepot& depot,
                        int64_t stack_depth) {
  AllocEvent event;
  event.api = Api::kCuptiActivity;
  event.address = a.address;
  event.bytes = a.bytes;
  event.device = a.device;
  // The record's program counter is the one frame known of the call.
  if (a.pc != 0 && stack_depth > 0) {
    const uintptr_t pc = static_cast<uintptr_t>(a.pc);
    event.stack = depot.Put(&pc, 1);
  }
  return event;
}

}  // namespace

size_t Engine::ReconcileActivity(bool flush) {
  MemoryActivitySource* source = GetMemoryActivitySource();
  if (source == nullptr || !tracking()) return 0;
  // No flush from inside a CUPTI callback (the driver's call is running).
  flush = flush && !InDriverCallback();
  std::vector<MemoryActivity> records;
  source->Drain(flush, &records);
  // The exit report is the last look: adopt what is unexplained now.
  const bool final = exiting_.load(std::memory_order_acquire);
  MemoryActivityCrossCheck::Decision d;
  std::vector<SuspectFree> suspects;
  std::vector<std::pair<SuspectFree, MemoryActivity>> explained;
  {
    absl::MutexLock lock(&activity_mu_);
    activity_.Ingest(std::move(records));
    RegistryView view(*this);
    // Deferred frees first: their allocations are adopted and freed here.
    if (flush) {
      suspects.swap(suspects_);
      suspect_count_.store(0, std::memory_order_release);
      std::vector<SuspectFree> unexplained;
      for (SuspectFree& s : suspects) {
        std::optional<MemoryActivity> a;
        if (!pointers_.FindFreed(s.ticket.address)) {
          a = activity_.Explain(s.ticket.address, view);
        }
        if (a) {
          explained.emplace_back(std::move(s), *a);
        } else {
          unexplained.push_back(std::move(s));
        }
      }
      suspects.swap(unexplained);
    }
    d = activity_.Reconcile(view, final);
  }
  for (const MemoryActivity& a : d.release) {
    std::optional<AllocationRecord> r = pointers_.Find(a.address);
    if (r && r->api == Api::kCuptiActivity) {
      GraphRelease(Api::kCuptiActivityRelease, a.address);
    }
  }
  for (const MemoryActivity& a : d.adopt) {
    OnAlloc(AdoptedEvent(a, depot_, options_.stack_depth));
  }
  for (const auto& [s, a] : explained) {
    // Counted once: the allocation no hook saw, and the free that was seen.
    OnAlloc(AdoptedEvent(a, depot_, options_.stack_depth));
    GraphRelease(s.ticket.api, s.ticket.address);
  }
  // The rest were the program's errors after all: reported now, as then.
  t_resolving_suspects = true;
  for (const SuspectFree& s : suspects) {
    EndFree(s.ticket, s.succeeded, s.cuda_result, s.cuda_result_name.c_str());
  }
  t_resolving_suspects = false;
  if (!d.adopt.empty() || !explained.empty()) {
    LogNote(1,
            "CUPTI activity: %zu allocation(s) no hook saw added "
            "(\"cupti-activity\"), %zu free(s) of such memory matched",
            d.adopt.size(), explained.size());
  }
  return d.adopt.size() + explained.size();
}

void Engine::BeforeMemPoolImport() {
  // With CUPTI 13.0 (driver 580, H200), memory records on make the
  // cuMemFreeAsync of a pointer imported from another process's pool fault
  // inside libcupti (SIGSEGV at 0x68). The records only cross-check what the
  // hooks see, so they stop before the first import can bring such a pointer.
  MemoryActivitySource* source = GetMemoryActivitySource();
  if (source == nullptr || activity_stopped_.exchange(true)) return;
  source->Stop();
  LogNote(1,
          "CUPTI memory records stopped: the program imports a memory pool "
          "from another process");
}

bool Engine::ExplainUnknownFree(uint64_t address, bool flush) {
  MemoryActivitySource* source = GetMemoryActivitySource();
  // Without a flush the records may lag; EndFree defers the verdict then.
  if (source == nullptr || !flush || !tracking()) return false;
  // The hooks freed this address before: a second free, whatever CUPTI says.
  if (pointers_.FindFreed(address)) return false;
  std::vector<MemoryActivity> records;
  source->Drain(/*flush=*/true, &records);
  std::optional<MemoryActivity> found;
  {
    absl::MutexLock lock(&activity_mu_);
    activity_.Ingest(std::move(records));
    RegistryView view(*this);
    found = activity_.Explain(address, view);
  }
  if (!found) return false;
  OnAlloc(AdoptedEvent(*found, depot_, options_.stack_depth));
  LogNote(1,
          "CUPTI activity: the free of 0x%llx matches an allocation no hook "
          "saw",
          static_cast<unsigned long long>(address));
  return true;
}

bool Engine::DeferUnknownFree(const FreeTicket& ticket, bool succeeded,
                              int cuda_result, const char* cuda_result_name) {
  if (t_resolving_suspects || !InDriverCallback() ||
      GetMemoryActivitySource() == nullptr) {
    return false;
  }
  absl::MutexLock lock(&activity_mu_);
  if (suspects_.size() >= kMaxSuspectFrees) return false;
  suspects_.push_back(
      SuspectFree{ticket, succeeded, cuda_result,
                  cuda_result_name != nullptr ? cuda_result_name : ""});
  suspect_count_.fetch_add(1, std::memory_order_release);
  return true;
}

}  // namespace gmt
