// on the engine: reachability of the live blocks at exit
// (lib/leaks/reachability_linux.h) and growth of call sites while the program
// runs (lib/leaks/growth.h).
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/core/tool_thread.h"
#include "lib/core/tool_time.h"
#include "lib/engine/engine.h"
#include "lib/engine/growth_callback.h"
#include "lib/leaks/reachability_linux.h"

namespace gmt {
namespace {

// Blocks with an address the program can hold a pointer to. Arrays and VMM
// handles are handles, not pointers: not analysed.
bool HasPointer(MemoryKind kind) {
  return kind == MemoryKind::kDevice || kind == MemoryKind::kManaged ||
         kind == MemoryKind::kPinnedHost;
}

// Where an address lies, for the reachability chain: "module+0xoff", with
// the symbol whose extent holds it when the dynamic symbol table has one
// (statics of an executable are not there: `nm` on the module tells them from
// the offset).
std::string PlaceOf(uint64_t address) {
  Dl_info info;
  void* entry = nullptr;  // the ElfW(Sym) of the symbol, if any
  if (dladdr1(reinterpret_cast<void*>(address), &info, &entry,
              RTLD_DL_SYMENT) == 0 ||
      info.dli_fname == nullptr) {
    return absl::StrFormat("0x%x", address);
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  std::string text =
      absl::StrFormat("%s+0x%x", slash != nullptr ? slash + 1 : info.dli_fname,
                      address - reinterpret_cast<uint64_t>(info.dli_fbase));
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  const uint64_t sym_begin = reinterpret_cast<uint64_t>(info.dli_saddr);
  if (sym != nullptr && info.dli_sname != nullptr && address >= sym_begin &&
      address < sym_begin + sym->st_size) {
    absl::StrAppendFormat(&text, " (%s+0x%x)", info.dli_sname,
                          address - sym_begin);
  }
  return text;
}

// "root: word at <place> -> heap object 0x.. (N bytes) at +0x.. -> ...":
// the path the scan took to a reachable block. An object whose first word
// lies in a module (a vtable, a callback) says whose object it is.
std::string ChainText(const std::string& root_label, uint64_t via_word,
                      const std::vector<ReachHop>& hops, uint32_t elided) {
  std::string text =
      absl::StrFormat("%s (word at %s", root_label,
                      PlaceOf(hops.empty() ? via_word : hops.front().word));
  for (size_t i = 0; i < hops.size(); ++i) {
    if (elided != 0 && i == kMaxReachHops / 2) {
      absl::StrAppendFormat(&text, " -> ... %u more heap objects ...", elided);
    }
    const uint64_t word = i + 1 < hops.size() ? hops[i + 1].word : via_word;
    absl::StrAppendFormat(&text, " -> heap object 0x%x of %u bytes",
                          hops[i].object, hops[i].object_size);
    const std::string first = PlaceOf(hops[i].object_first_word);
    if (hops[i].object_first_word != 0 && first[0] != '0') {
      absl::StrAppendFormat(&text, " [first word: %s]", first);
    }
    absl::StrAppendFormat(&text, ", word +0x%x", word - hops[i].object);
  }
  text += ")";
  return text;
}

// "function file:line" of a stack's innermost frame, for one-line messages.
std::string SiteText(const std::vector<SymbolizedFrame>& frames) {
  if (frames.empty()) return "(no stack)";
  const SymbolizedFrame& f = frames.front();
  std::string text =
      f.function.empty() ? absl::StrFormat("0x%x", f.address) : f.function;
  if (!f.file.empty()) absl::StrAppend(&text, " ", f.file, ":", f.line);
  if (!f.module.empty()) absl::StrAppend(&text, " (", f.module, ")");
  return text;
}

// A helper thread on a stack of the tool's own (mapped here, so the scan
// can be told to leave it alone), with the program's signals blocked. Where
// no thread can be started, the work runs on the caller's thread.
class ReportWarmUp {
 public:
  ReportWarmUp() = default;
  ReportWarmUp(const ReportWarmUp&) = delete;
  ReportWarmUp& operator=(const ReportWarmUp&) = delete;
  ~ReportWarmUp() { Join(); }

  void Start(std::function<void()> work) {
    work_ = std::move(work);
    void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) return;  // done in Join, on this thread
    stack_ = static_cast<char*>(stack);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack_, kStackBytes);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);  // inherited by the thread
    started_ = pthread_create(&thread_, &attr, &Run, this) == 0;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
  }

  AddressRange stack() const {
    const auto begin = reinterpret_cast<uint64_t>(stack_);
    return stack_ != nullptr ? AddressRange{begin, begin + kStackBytes}
                             : AddressRange{};
  }

  void Join() {
    if (started_) {
      pthread_join(thread_, nullptr);
      started_ = false;
    } else if (work_) {
      work_();
    }
    work_ = nullptr;
    if (stack_ != nullptr) {
      munmap(stack_, kStackBytes);
      stack_ = nullptr;
    }
  }

 private:
  static constexpr size_t kStackBytes = size_t{8} << 20;
  static void* Run(void* self) {
    static_cast<ReportWarmUp*>(self)->work_();
    return nullptr;
  }
  std::function<void()> work_;
  char* stack_ = nullptr;
  pthread_t thread_{};
  bool started_ = false;
};

}  // namespace

// noinline: the scan starts at this frame; everything the tool holds lies in
// this frame and the ones it calls (below it), never in a root.
__attribute__((noinline)) void Engine::ScanReachability() {
  const uint64_t stack_from =
      reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  {
    absl::MutexLock lock(&leaks_mu_);
    if (reach_done_) return;
    reach_done_ = true;
  }
  if (!options_.enabled || !options_.leak_check || !options_.reachability ||
      getpid() != owner_pid_) {
    return;
  }
  ScopedToolTime timed(ToolPhase::kExitScan);
  // The leak candidates: live blocks with an address, less those a
  // suppression rule would silence anyway (their state is never shown).
  std::vector<AllocationRecord> live;
  for (const AllocationRecord& r : pointers_.Live()) {
    if (HasPointer(r.kind)) live.push_back(r);
  }
  if (!live.empty() && !suppressions_.empty()) {
    StackTable stacks;
    std::vector<StackId> ids;
    ids.reserve(live.size());
    for (const AllocationRecord& r : live) ids.push_back(r.stack);
    SymbolizeInto(ids, &stacks);
    std::vector<AllocationRecord> kept;
    for (const AllocationRecord& r : live) {
      ReportData::Leak leak;
      leak.api = r.api;
      leak.kind = r.kind;
      leak.device = r.device;
      leak.stack = r.stack;
      leak.bytes = r.bytes;
      leak.count = 1;
      leak.address = r.address;
      if (suppressions_.MatchLeak(leak, stacks) < 0) kept.push_back(r);
    }
    live = std::move(kept);
  }
  // No leaks: nothing to tell apart, and the scan costs nothing.
  if (live.empty()) return;
  // The report's other slow part, symbolizing the blocks' call sites (and
  // the errors'), runs on a helper thread while this one scans: the report
  // then finds them in the symbolizer's cache. The helper's stack is the
  // tool's memory, never a root.
  std::vector<StackId> report_stacks;
  report_stacks.reserve(live.size());
  for (const AllocationRecord& r : live) report_stacks.push_back(r.stack);
  {
    absl::MutexLock lock(&errors_mu_);
    for (const ErrorRecord& e : errors_) report_stacks.push_back(e.stack);
  }
  ReportWarmUp warm_up;
  if (options_.symbolize && options_.stack_depth > 0) {
    warm_up.Start([this, report_stacks = std::move(report_stacks)] {
      StackTable table;
      SymbolizeInto(report_stacks, &table);
    });
  }
  std::vector<AddressRange> blocks;
  blocks.reserve(live.size());
  for (const AllocationRecord& r : live) {
    blocks.push_back(AddressRange{r.extent_begin(), r.extent_end()});
  }
  // Never roots: the timeline ring, and the stacks of the tool's threads
  // (this helper, the NVML start, the Xid watcher).
  std::vector<AddressRange> tool_ranges = {
      AddressRange{timeline_.mapped_begin(), timeline_.mapped_end()},
      warm_up.stack()};
  for (const auto& [begin, end] : ToolThreadStacks()) {
    tool_ranges.push_back(AddressRange{begin, end});
  }
  ReachLimits limits;
  limits.max_bytes = static_cast<uint64_t>(options_.reachability_max_bytes);
  limits.deadline_ns =
      PreciseNowNs() + options_.reachability_max_ms * int64_t{1000000};
  // The engine object holds the registry (every block's address), and
  // `live` copies of it: never heap objects of the program's.
  // Where the program allocated them: the innermost frames of each distinct
  // allocation stack (the scan starts from those modules' globals).
  std::vector<uint64_t> allocating_code;
  {
    absl::flat_hash_set<StackId> seen;
    for (const AllocationRecord& r : live) {
      if (allocating_code.size() >= 256) break;
      if (!seen.insert(r.stack).second) continue;
      const StackView frames = depot_.Get(r.stack);
      for (size_t i = 0; i < frames.size() && i < 3; ++i) {
        allocating_code.push_back(frames[i]);
      }
    }
  }
  ProcessReach scan = ScanProcess(blocks, stack_from,
                                  {reinterpret_cast<uint64_t>(this),
                                   reinterpret_cast<uint64_t>(live.data())},
                                  limits, tool_ranges, allocating_code);
  warm_up.Join();

  absl::MutexLock lock(&leaks_mu_);
  ReportData::Reachability& s = reach_summary_;
  s.ran = true;
  s.ms = static_cast<double>(scan.ns) * 1e-6;
  s.bytes_scanned = scan.result.bytes_scanned;
  s.roots = scan.result.roots;
  s.heap_chunks = scan.result.heap_objects;
  s.modules = scan.modules;
  s.modules_excluded = scan.modules_excluded;
  s.threads = scan.threads;
  s.threads_excluded = scan.threads_excluded;
  s.threads_unknown = scan.threads_unknown;
  s.truncated = scan.result.truncated;
  for (size_t i = 0; i < live.size(); ++i) {
    const char* state = scan.result.reachable[i] ? "reachable"
                        : s.truncated            ? "unknown"
                                                 : "lost";
    std::string via;
    const int32_t root = scan.result.via_root[i];
    if (scan.result.reachable[i] && root >= 0 &&
        static_cast<size_t>(root) < scan.root_labels.size()) {
      via =
          ChainText(scan.root_labels[root], scan.result.via_word[i],
                    scan.result.via_chain[i], scan.result.via_chain_elided[i]);
      LogNote(1, "reachability: 0x%llx (%llu bytes) reachable via %s",
              static_cast<unsigned long long>(live[i].address),
              static_cast<unsigned long long>(live[i].bytes), via.c_str());
    }
    reach_verdicts_[live[i].address] =
        ReachVerdict{live[i].time_ns, state, std::move(via)};
  }
  LogNote(1,
          "reachability: %zu blocks, %.1f ms (symbol tables of %llu modules "
          "%.1f ms, flood fill %.1f ms), %llu bytes scanned%s",
          live.size(), s.ms,
          static_cast<unsigned long long>(scan.modules_with_symbols),
          static_cast<double>(scan.symbols_ns) * 1e-6,
          static_cast<double>(scan.flood_ns) * 1e-6,
          static_cast<unsigned long long>(s.bytes_scanned),
          s.truncated ? " (truncated)" : "");
}

void Engine::TakeLeakAnalysisState(ReportState* state) {
  {
    absl::MutexLock lock(&leaks_mu_);
    state->reachability = reach_summary_;
    state->reach_verdicts = reach_verdicts_;
  }
  absl::MutexLock lock(&growth_mu_);
  state->growth_samples = growth_.samples();
  for (const GrowthFlag& f : growth_.Flagged()) {
    ReportData::Growth g;
    g.stack = f.site;
    g.rises = f.rises;
    g.first_bytes = f.first_bytes;
    g.last_bytes = f.last_bytes;
    g.first_s = static_cast<double>(SinceStartNs(f.first_ns)) * 1e-9;
    g.last_s = static_cast<double>(SinceStartNs(f.last_ns)) * 1e-9;
    state->growth.push_back(g);
  }
}

void Engine::MaybeSampleGrowth() {
  if (!options_.growth || !options_.enabled) return;
  // One relaxed load per synchronizing call when no sample is due.
  const int64_t now = NowNs();
  int64_t due = next_growth_ns_.load(std::memory_order_relaxed);
  if (now < due) return;
  if (!next_growth_ns_.compare_exchange_strong(
          due, now + options_.growth_interval_ms * int64_t{1000000},
          std::memory_order_relaxed)) {
    return;  // another thread takes this sample
  }
  // Per call site live bytes, from the registry's live blocks: the cost is
  // here, once per interval, not on every allocation.
  absl::flat_hash_map<StackId, uint64_t> by_site;
  for (const AllocationRecord& r : pointers_.Live()) {
    if (CountsTowardsUsage(r.kind)) by_site[r.stack] += r.bytes;
  }
  std::vector<GrowthFlag> flagged;
  {
    absl::MutexLock lock(&growth_mu_);
    flagged = growth_.AddSample(now, by_site);
  }
  for (const GrowthFlag& f : flagged) {
    StackTable stacks;
    SymbolizeInto({f.site}, &stacks);
    std::string site = SiteText(stacks[f.site]);
    const double seconds = static_cast<double>(f.last_ns - f.first_ns) * 1e-9;
    std::string line = absl::StrFormat(
        "==%d== gpumemtrace: suspected leak: %s grew %d times, +%s over "
        "%.1fs (%s live)\n",
        getpid(), site, f.rises, HumanBytes(f.last_bytes - f.first_bytes),
        seconds, HumanBytes(f.last_bytes));
    WriteStderr(line.data(), line.size());
    NotifyGrowthCallback(site.c_str(), f.site, f.first_bytes, f.last_bytes,
                         f.rises, seconds);
  }
}

}  // namespace gmt
