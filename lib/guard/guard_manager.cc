#include "lib/guard/guard_manager.h"

#include <algorithm>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/log.h"
#include "lib/core/tool_time.h"

namespace gmt {
namespace {

constexpr uint64_t kIpcMagic = 0x4452415547544d47ull;  // "GMTGUARD"
constexpr uint64_t kIpcHeaderBytes = 64;

bool StreamOrdered(Api api) { return FamilyOf(api) == GuardFamily::kAsync; }

uint64_t UserEnd(const AllocationRecord& r) { return r.address + r.bytes; }

// What a per-kernel check reads of a front or tail redzone: the bytes next
// to the block, where an overrun by a few elements lands. A large block's
// tail zone is up to guard_tail_max (1 MiB): whole zones that large would
// be read after every kernel (once the zone-table path, 14x the inline
// check on the H200; now several blocks of the inline check); the rest of
// every zone is read at the next synchronization, as with check=sync.
constexpr uint64_t kKernelCheckZoneBytes = uint64_t{8} * 1024;

// What a quarantined block takes from the device's free memory: all of it,
// with CUDA's rounding (what the program's free would have given back).
uint64_t HeldFootprint(const AllocationRecord& r) {
  return AddedFootprint(r.api, 0, r.raw_bytes);
}

// A program stream as DeviceOps takes it: there 0 means the tool's own
// stream, so the program's legacy default stream (0 in the engine) is passed
// as its explicit handle, CU_STREAM_LEGACY.
uint64_t ProgramStream(uint64_t stream) { return stream == 0 ? 1 : stream; }

}  // namespace

GuardManager::GuardManager(const Options& options, DeviceOps* ops)
    : policy_(GuardPolicy::FromOptions(options)),
      level_(options.check),
      suspect_checks_(options.suspect_checks &&
                      options.check == CheckLevel::kSync),
      quarantine_budget_(static_cast<uint64_t>(options.quarantine_bytes)),
      hold_ordered_(options.quarantine_async || options.torch),
      release_cap_(std::max(quarantine_budget_ / 2, kMinReleaseCapBytes)),
      reuse_ordered_(hold_ordered_ && options.quarantine_reuse &&
                     quarantine_budget_ > 0 &&
                     options.check != CheckLevel::kNone),
      reuse_device_(options.malloc_reuse && quarantine_budget_ > 0 &&
                    options.check != CheckLevel::kNone),
      // A framework's tensors come back each step at tens of MiB: with
      // stream-ordered reuse, several quarantines' worth. cudaMalloc blocks
      // alone: one quarantine's worth, memory CUDA would otherwise hold as
      // free (hidden from cudaMemGetInfo either way, and given back on an
      // out-of-memory retry).
      reuse_cap_(reuse_ordered_ ? std::max(quarantine_budget_ * kReuseCapFactor,
                                           kMinReleaseCapBytes)
                 : reuse_device_
                     ? std::max(quarantine_budget_, kMinReleaseCapBytes)
                     : 0),
      freed_half_bytes_(
          FreedCheckBytes(options) > 0
              ? (static_cast<uint64_t>(FreedCheckBytes(options)) + 511) / 512 *
                    256
              : 0),
      ops_(policy_.enabled ? ops : nullptr) {
  tracks_ranges_ = ChecksEachKernel();
}

GuardManager::Context& GuardManager::ContextFor(uint64_t context, int device) {
  Context& c = contexts_[context];
  if (device >= 0) c.device = device;
  return c;
}

// ---- Allocation ------------------------------------------------------------

void GuardManager::Arm(const AllocationRecord& record) {
  if (ops_ == nullptr || !record.guarded()) return;
  absl::MutexLock lock(&mu_);
  if (!contexts_.contains(record.context)) {
    ScopedToolTime timed(ToolPhase::kGuardSetup);
    ops_->Prepare(record.context);
  }
  Context& c = ContextFor(record.context, record.device);
  // A block TakeReusable handed out: its canaries are in place, checked
  // since its last owner's free, and that free had completed.
  auto [slot, inserted] = c.blocks.try_emplace(record.raw_address);
  const bool reused = !inserted && slot->second.reuse == Block::Reuse::kTaken;
  const uint64_t owed = reused ? slot->second.canaries_owed_to : 0;
  if (reused) DropOrderedFillLocked(c, record.raw_address);
  Block b;
  b.record = record;
  // A linear block over 1 MiB has whole pages in front (guard_layout.h):
  // only the option's bytes next to the user's start are canaries, so its
  // fills and checks cost what a small block's do. A pitched block's front
  // is rows, all of them canaries (an underflow by a row lands at their
  // start).
  b.front_begin =
      FamilyOf(record.api) == GuardFamily::kPitched
          ? record.raw_address
          : std::max(record.raw_address,
                     record.address - std::min(record.address, policy_.front));
  b.generation = NextGeneration();
  ++stats_.guarded;
  // A cudaMalloc block taken for a size other than its last owner's: the
  // bytes between the two ends hold that owner's data or freed pattern, not
  // canaries. Written again, as a new block's are (before the next launch).
  const bool same_end =
      reused && UserEnd(slot->second.record) == UserEnd(record);
  if (reused && FamilyOf(record.api) == GuardFamily::kDevice) {
    b.reused_buffer_id = kReusedBufferIdBit | ++next_reused_buffer_id_;
  }
  if (reused) ++stats_.reused;
  if (reused && same_end) {
    b.canaries_pending = false;
    b.canaries_armed = true;
    b.canaries_owed_to = owed;
  } else {
    // Pool memory is a stream-ordered block's only in its stream's order:
    // it is filled there, before the next launch on that stream.
    if (StreamOrdered(record.api)) b.confirmed = false;
    MarkForFillLocked(c, b);
  }
  // A reused block's extent is there already when it stayed while held
  // (ranges tracked since before its hold); suspects may have begun the
  // tracking since, so it is added again (the same extent, replaced).
  if (tracks_ranges_ && (!reused || !ChecksEachKernel())) {
    c.ranges.Add(record.raw_address, record.raw_address + record.raw_bytes);
  }
  slot->second = b;
  c.TablesStale();
  any_armed_.store(true, std::memory_order_relaxed);
}

// ---- Zones
// -------------------------------------------------------------------

void GuardManager::AppendArmedZones(const Block& b, Table* table) const {
  const AllocationRecord& r = b.record;
  auto add = [&](uint64_t begin, uint64_t end, uint8_t pattern, Role role) {
    if (end <= begin) return;
    table->zones.push_back(GmtZone{begin, end - begin, pattern, 0});
    table->refs.push_back(ZoneRef{r.raw_address, role, b.generation});
  };
  // A zone waiting for its refill still holds what a check already reported
  // (CollectResults re-arms it): not checked again until it is rewritten.
  // Canaries a check of their last lifetime still owes an answer for wait
  // for it, unless the block is held again (then that check ran first on
  // its stream, and this one must see the new lifetime's writes).
  if (b.canaries_armed && !b.canaries_pending &&
      (b.canaries_owed_to == 0 || b.held)) {
    add(b.front_begin, r.address, kCanaryByte, Role::kFront);
    add(UserEnd(r), r.raw_address + r.raw_bytes, kCanaryByte, Role::kTail);
  }
  if (b.held && b.freed_armed && !b.freed_pending) {
    ForEachFreedRange(r, [&](uint64_t begin, uint64_t end) {
      add(begin, end, kFreedByte, Role::kFreedUser);
    });
  }
}

std::shared_ptr<const GuardManager::Table> GuardManager::BuildTable(
    const Context& c, uint64_t stream, bool device_wide) const {
  auto table = std::make_shared<Table>();
  // Two zones a block, and a held one's freed bytes: lists of thousands are
  // not regrown.
  const size_t expected = 2 * c.blocks.size() + c.quarantine.size();
  table->zones.reserve(expected);
  table->refs.reserve(expected);
  for (const auto& [raw, b] : c.blocks) {
    if (b.freeing) continue;  // its memory may be CUDA's again
    // Held without a quarantine: its own check at its free covers it.
    if (b.held && quarantine_budget_ == 0) continue;
    if (!b.confirmed && !device_wide && b.record.stream != stream) continue;
    AppendArmedZones(b, table.get());
  }
  return table;
}

std::shared_ptr<const GuardManager::Table> GuardManager::BuildReachTable(
    Context& c, uint64_t stream, const std::vector<ArgWord>& arg_words) {
  auto table = std::make_shared<Table>();
  for (uint64_t raw : ReachedBlocks(arg_words, c.ranges)) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end()) continue;
    const Block& b = it->second;
    if (b.freeing) continue;  // its memory may be CUDA's again
    if (!b.confirmed && b.record.stream != stream) continue;
    const size_t first = table->zones.size();
    AppendArmedZones(b, table.get());
    for (size_t i = first; i < table->zones.size(); ++i) {
      GmtZone& z = table->zones[i];
      if (z.bytes <= kKernelCheckZoneBytes) continue;
      if (table->refs[i].role == Role::kTail) {
        z.bytes = kKernelCheckZoneBytes;  // from the block's end on
      } else if (table->refs[i].role == Role::kFront) {
        z.address += z.bytes - kKernelCheckZoneBytes;  // up to its start
        z.bytes = kKernelCheckZoneBytes;
      }
    }
  }
  return table;
}

void GuardManager::AppendPendingZones(const Block& b,
                                      std::vector<GmtZone>* zones) const {
  const AllocationRecord& r = b.record;
  auto add = [&](uint64_t begin, uint64_t end, uint8_t pattern) {
    if (end > begin) zones->push_back(GmtZone{begin, end - begin, pattern, 0});
  };
  if (b.canaries_pending) {
    add(b.front_begin, r.address, kCanaryByte);
    add(UserEnd(r), r.raw_address + r.raw_bytes, kCanaryByte);
  }
  if (b.freed_pending) {
    ForEachFreedRange(
        r, [&](uint64_t begin, uint64_t end) { add(begin, end, kFreedByte); });
  }
}

void GuardManager::FilledLocked(absl::Span<Block* const> blocks, bool ok) {
  if (!ok) ++stats_.fill_failures;  // these zones stay unchecked: reported
  for (Block* b : blocks) {
    b->generation = NextGeneration();
    if (b->canaries_pending) {
      b->canaries_pending = false;
      b->canaries_armed = ok;
    }
    if (b->freed_pending) {
      b->freed_pending = false;
      b->freed_armed = ok;
    }
  }
}

void GuardManager::FlushFillsLocked(uint64_t context, Context& c) {
  if (c.pending_fills.empty()) return;
  contexts_with_fills_.fetch_sub(1, std::memory_order_release);
  std::vector<GmtZone> zones;
  std::vector<Block*> filled;
  // A block left out here (gone, or being freed: see AfterRealFree) is marked
  // again if it ever needs its fill.
  std::sort(c.pending_fills.begin(), c.pending_fills.end());
  c.pending_fills.erase(
      std::unique(c.pending_fills.begin(), c.pending_fills.end()),
      c.pending_fills.end());
  for (uint64_t raw : c.pending_fills) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end()) continue;
    Block& b = it->second;
    if (!b.canaries_pending && !b.freed_pending) continue;
    if (b.freeing) continue;  // never write into memory CUDA may reuse
    if (StreamOrdered(b.record.api)) continue;  // on its stream, at a launch
    AppendPendingZones(b, &zones);
    filled.push_back(&b);
  }
  c.pending_fills.clear();
  if (zones.empty()) return;
  FilledLocked(filled, ops_->Fill(context, 0, zones));
  c.TablesStale();
}

void GuardManager::MarkForFillLocked(Context& c, const Block& b) {
  if (StreamOrdered(b.record.api)) {
    if (c.ordered_fills.empty()) {
      contexts_with_ordered_fills_.fetch_add(1, std::memory_order_release);
    }
    c.ordered_fills.insert(b.record.raw_address);
  } else {
    if (c.pending_fills.empty()) {
      contexts_with_fills_.fetch_add(1, std::memory_order_release);
    }
    c.pending_fills.push_back(b.record.raw_address);
  }
}

void GuardManager::DropOrderedFillLocked(Context& c, uint64_t raw) {
  if (c.ordered_fills.erase(raw) > 0 && c.ordered_fills.empty()) {
    contexts_with_ordered_fills_.fetch_sub(1, std::memory_order_release);
  }
}

void GuardManager::FlushOrderedFillsLocked(uint64_t context, Context& c,
                                           uint64_t stream) {
  if (c.ordered_fills.empty()) return;
  std::vector<uint64_t> ready;
  for (uint64_t raw : c.ordered_fills) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.record.stream == stream) {
      ready.push_back(raw);
    }
  }
  if (ready.empty()) return;
  // A fill enqueued now would become a node of the graph being captured.
  if (ops_->StreamCapturing(ProgramStream(stream))) return;
  std::vector<GmtZone> zones;
  std::vector<Block*> filled;
  auto flush = [&] {
    if (zones.empty()) return;
    // The checks of blocks that left the quarantine after their frees on
    // this stream ride on this fill's launch.
    std::vector<uint64_t> checked;
    std::shared_ptr<Table> table;
    uint64_t ticket = 0;
    bool ok = false;
    if (auto waiting = c.deferred_checks.find(stream);
        waiting != c.deferred_checks.end()) {
      checked = std::move(waiting->second.raws);
      c.deferred_checks.erase(waiting);
      table = ReuseTableLocked(c, checked);
      ticket = ops_->CheckAndFill(context, ProgramStream(stream), table->zones,
                                  zones, &ok);
    } else {
      ok = ops_->Fill(context, ProgramStream(stream), zones);
    }
    FilledLocked(filled, ok);
    // In this stream's order: other streams' checks wait for a
    // synchronization to prove the fill done (Block::confirmed).
    for (Block* b : filled) b->confirmed = false;
    zones.clear();
    filled.clear();
    if (table) {
      AwaitReuseCheckLocked(context, c, std::move(checked), std::move(table),
                            ticket);
    }
  };
  for (uint64_t raw : ready) {
    DropOrderedFillLocked(c, raw);
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end()) continue;  // gone: nothing to write
    Block& b = it->second;
    if (b.freeing) continue;  // never write into memory CUDA may reuse
    if (!b.canaries_pending && !b.freed_pending) continue;
    if (zones.size() + MaxZonesPerBlock() > kOrderedFillZones) flush();
    AppendPendingZones(b, &zones);
    filled.push_back(&b);
  }
  flush();
  c.TablesStale();
}

// ---- Checks
// ------------------------------------------------------------------

std::vector<uint32_t> GuardManager::KernelsSince(uint64_t context,
                                                 uint64_t since,
                                                 uint64_t* omitted) const {
  const uint64_t now = LaunchSequence();
  uint64_t first = since + 1;
  *omitted = 0;
  if (now >= kLaunchLog && first <= now - kLaunchLog) {
    *omitted = now - kLaunchLog + 1 - first;  // overwritten in the ring
    first = now - kLaunchLog + 1;
  }
  // Distinct names, in order of their last launch (newest last).
  std::vector<uint32_t> out;
  for (uint64_t s = first; s <= now && s != 0; ++s) {
    const LaunchEntry& e = launches_[s % kLaunchLog];
    if (e.sequence.load(std::memory_order_acquire) != s) continue;
    if (e.context.load(std::memory_order_relaxed) != context) continue;
    uint32_t k = e.kernel.load(std::memory_order_relaxed);
    out.erase(std::remove(out.begin(), out.end(), k), out.end());
    out.push_back(k);
  }
  if (out.size() > kMaxListedKernels) {
    *omitted += out.size() - kMaxListedKernels;
    out.erase(out.begin(), out.end() - kMaxListedKernels);
  }
  return out;
}

bool GuardManager::AddSuspectsLocked(absl::Span<const uint32_t> kernels) {
  bool all = true;
  for (uint32_t k : kernels) {
    if (suspects_.contains(k)) continue;
    if (suspects_.size() >= kMaxSuspects) {
      all = false;
      continue;
    }
    suspects_.insert(k);
    ++stats_.suspects;
    suspect_bits_[(k % kSuspectBits) / 64].fetch_or(uint64_t{1} << (k % 64),
                                                    std::memory_order_relaxed);
  }
  if (!tracks_ranges_ && !suspects_.empty()) {
    // The first suspect: from now on a launch's arguments are looked up
    // among the blocks, so their extents are kept from here on.
    for (auto& [context, c] : contexts_) {
      for (const auto& [raw, b] : c.blocks) {
        c.ranges.Add(raw, raw + b.record.raw_bytes);
      }
    }
    tracks_ranges_ = true;
  }
  return all;
}

void GuardManager::CollectResults(uint64_t context, Context& c,
                                  const Table& table,
                                  const std::vector<GmtZoneResult>& results,
                                  absl::string_view check, uint32_t kernel,
                                  absl::Span<const Block> owned, uint64_t since,
                                  std::vector<GuardFinding>* findings) {
  std::vector<uint32_t> kernels;
  uint64_t omitted = 0;
  bool kernels_known = false;
  // The zone whose finding is findings->back() (none: SIZE_MAX).
  size_t last_finding_zone = SIZE_MAX;
  for (size_t i = 0; i < table.zones.size() && i < results.size(); ++i) {
    const GmtZoneResult& res = results[i];
    if (res.changed_bytes == 0) continue;
    const ZoneRef& ref = table.refs[i];
    if (ref.role == Role::kFreedUser && i > 0 && last_finding_zone == i - 1 &&
        table.refs[i - 1].raw == ref.raw &&
        table.refs[i - 1].role == Role::kFreedUser) {
      // The end of a freed block checked in two parts (freed_check_bytes),
      // both written: one write after free, from the first change to the
      // last.
      GuardFinding& f = findings->back();
      f.last_offset = static_cast<int64_t>(
          table.zones[i].address + res.last_plus1 - 1 - f.block.address);
      f.changed_bytes += res.changed_bytes;
      continue;
    }
    Block* live = nullptr;
    if (auto it = c.blocks.find(ref.raw); it != c.blocks.end()) {
      live = &it->second;
    }
    const Block* b = live;
    for (const Block& o : owned) {
      if (o.record.raw_address == ref.raw) {
        b = &o;
        break;
      }
    }
    if (b == nullptr) continue;
    // A zone refilled since this table was made was already reported (a
    // block the check owns is in no other table).
    if (b == live && b->generation != ref.generation) continue;
    const GmtZone& z = table.zones[i];
    GuardFinding f;
    f.block = b->record;
    f.freed = b->freed;
    f.kind = ref.role == Role::kFront  ? ErrorKind::kOobUnderflow
             : ref.role == Role::kTail ? ErrorKind::kOobWrite
                                       : ErrorKind::kUafWrite;
    const uint64_t first = z.address + ~res.first_inverted;
    const uint64_t last = z.address + res.last_plus1 - 1;
    f.first_offset = static_cast<int64_t>(first - b->record.address);
    f.last_offset = static_cast<int64_t>(last - b->record.address);
    f.changed_bytes = res.changed_bytes;
    f.check = std::string(check);
    if (kernel != 0) {
      f.kernels = {kernel};
    } else {
      if (!kernels_known) {
        kernels = KernelsSince(context, since, &omitted);
        kernels_known = true;
      }
      f.kernels = kernels;
      f.kernels_omitted = omitted;
      // Several kernels could have written it: each is checked after its
      // later launches, so a write that repeats names its one kernel.
      if (suspect_checks_ && (kernels.size() > 1 || omitted > 0)) {
        f.suspects_checked = AddSuspectsLocked(kernels);
      }
    }
    findings->push_back(std::move(f));
    last_finding_zone = i;
    // Re-arm: the next check starts from clean canaries, so one overrun is
    // reported once. The block in the map is re-armed when it is the
    // lifetime the check read (itself, or the copy a free's check owns while
    // CUDA's free is under way: the same generation). A finding of an earlier
    // lifetime re-arms only the canaries of the block taken from it in
    // flight (the same bytes); never the user bytes of a later lifetime (its
    // data), nor anything of a block CUDA handed out again at that address.
    const bool same_block =
        live != nullptr && (b == live || live->generation == ref.generation);
    const bool inherited = live != nullptr && b != live &&
                           live->canaries_owed_to != 0 &&
                           ref.role != Role::kFreedUser;
    if (same_block || inherited) {
      if (ref.role == Role::kFreedUser) {
        live->freed_pending = true;
      } else {
        live->canaries_pending = true;
      }
      MarkForFillLocked(c, *live);
      live->generation = NextGeneration();
      c.TablesStale();
    }
  }
}

void GuardManager::CheckTableLocked(uint64_t context,
                                    const std::shared_ptr<const Table>& table,
                                    absl::string_view check,
                                    std::optional<Block> owned, uint64_t since,
                                    uint64_t sequence,
                                    std::vector<GuardFinding>* findings) {
  if (table->zones.empty()) return;
  // Enqueued on the tool's stream under the lock; waited for without it, so
  // no thread of the program queues behind the GPU (a host callback that
  // waits for a program lock could otherwise close a cycle through it).
  const uint64_t ticket = ops_->CheckAsync(context, 0, table->zones);
  std::vector<GmtZoneResult> results;
  DeviceOps::Poll state = DeviceOps::Poll::kFailed;
  if (ticket != 0) {
    mu_.Unlock();
    state = ops_->PollCheck(ticket, /*wait=*/true, &results);
    mu_.Lock();
  }
  if (state == DeviceOps::Poll::kLost) {
    NoteFindingsLostLocked(context);
    return;
  }
  if (state != DeviceOps::Poll::kDone) {
    NoteCheckFailureLocked();
    return;
  }
  ++stats_.checks;
  for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;  // torn down meanwhile
  CollectResults(
      context, it->second, *table, results, check, 0,
      owned ? absl::MakeConstSpan(&*owned, 1) : absl::Span<const Block>(),
      since, findings);
  if (sequence > it->second.clean_sequence) {
    it->second.clean_sequence = sequence;
  }
}

void GuardManager::PollPendingLocked(bool wait,
                                     std::vector<GuardFinding>* findings) {
  while (!pending_.empty()) {
    std::vector<GmtZoneResult> results;
    DeviceOps::Poll state = DeviceOps::Poll::kPending;
    PendingCheck p;
    if (!wait) {
      state = ops_->PollCheck(pending_.front().ticket, false, &results);
      if (state == DeviceOps::Poll::kPending) return;
      p = std::move(pending_.front());
      pending_.pop_front();
      if (p.counted_for_reuse) reuse_checks_in_flight_.fetch_sub(1);
    } else {
      // Out of the queue first: another thread may poll it while this one
      // waits, without the lock, for the GPU.
      p = std::move(pending_.front());
      pending_.pop_front();
      if (p.counted_for_reuse) reuse_checks_in_flight_.fetch_sub(1);
      ++pending_in_wait_;  // its blocks stay out of CUDA's hands meanwhile
      mu_.Unlock();
      state = ops_->PollCheck(p.ticket, true, &results);
      mu_.Lock();
      --pending_in_wait_;
    }
    if (state == DeviceOps::Poll::kDone) {
      ++stats_.checks;
      auto it = contexts_.find(p.context);
      // After lost findings only a full check may blame a kernel (see
      // Context::findings_lost); a block being freed is checked nowhere else.
      const bool full = p.clean_through != 0;
      if (it != contexts_.end() &&
          (!it->second.findings_lost || !p.owned.empty() || !p.reuse.empty() ||
           full)) {
        CollectResults(p.context, it->second, *p.table, results, p.check,
                       p.kernel, p.owned, it->second.clean_sequence, findings);
        if (full) {
          Context& c = it->second;
          c.clean_sequence = std::max(c.clean_sequence, p.clean_through);
          if (p.clears_lost) c.findings_lost = false;
        }
      }
    } else if (state == DeviceOps::Poll::kLost) {
      NoteFindingsLostLocked(p.context);
    } else {
      ++stats_.check_failures;
    }
    if (!p.reuse.empty()) SettleReuseLocked(p, state);
    if (!p.handed_over.empty()) SettleHandedOverLocked(p, state);
  }
}

std::shared_ptr<const GuardManager::Table> GuardManager::FullTableLocked(
    uint64_t context, Context& c, uint64_t stream, bool device_wide) {
  FlushFillsLocked(context, c);
  // Nothing changed since it was built, when every block was confirmed: the
  // same zones, for any stream.
  if (c.sync_table) return c.sync_table;
  // The synchronization made the blocks it covers (every block, or the
  // stream's) the program's in every stream's order.
  bool all_confirmed = true;
  for (auto& [raw, b] : c.blocks) {
    if (device_wide || b.record.stream == stream) {
      b.confirmed = true;
    } else if (!b.confirmed) {
      all_confirmed = false;
    }
  }
  std::shared_ptr<const Table> table = BuildTable(c, stream, device_wide);
  if (all_confirmed) c.sync_table = table;
  return table;
}

void GuardManager::CheckContextLocked(uint64_t context, Context& c,
                                      uint64_t stream, bool device_wide,
                                      absl::string_view check,
                                      std::vector<GuardFinding>* findings) {
  const uint64_t sequence = LaunchSequence();
  std::shared_ptr<const Table> table =
      FullTableLocked(context, c, stream, device_wide);
  const bool had_lost_findings = c.findings_lost;
  CheckTableLocked(context, table, check, std::nullopt, c.clean_sequence,
                   sequence, findings);
  // The full check has reported what lost findings left changed (the lock
  // was let go meanwhile: the context is looked up again).
  if (had_lost_findings) {
    if (auto it = contexts_.find(context); it != contexts_.end()) {
      it->second.findings_lost = false;
    }
  }
}

void GuardManager::EnqueueContextCheckLocked(
    uint64_t context, Context& c, uint64_t stream, bool device_wide,
    absl::string_view check, std::vector<GuardFinding>* findings) {
  if (pending_.size() >= kMaxPendingChecks) {
    // Bound the work in flight: wait for the oldest (mu_ is let go
    // meanwhile, so the context is looked up again after).
    PollPendingLocked(/*wait=*/true, findings);
    auto it = contexts_.find(context);
    if (it == contexts_.end()) return;
    EnqueueContextCheckLocked(context, it->second, stream, device_wide, check,
                              findings);
    return;
  }
  const uint64_t sequence = LaunchSequence();
  std::shared_ptr<const Table> table =
      FullTableLocked(context, c, stream, device_wide);
  if (table->zones.empty()) return;
  // On the tool's stream, after the fills just flushed; the program's work
  // before this synchronization is done, so the zones hold what it wrote.
  const uint64_t ticket = ops_->CheckAsync(context, 0, table->zones);
  if (ticket == 0) {
    NoteCheckFailureLocked();
    return;
  }
  for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
  PendingCheck p{ticket,
                 context,
                 std::move(table),
                 0,
                 std::string(check),
                 {},
                 next_pending_sequence_++};
  p.clean_through = std::max<uint64_t>(sequence, 1);
  p.clears_lost = c.findings_lost;
  pending_.push_back(std::move(p));
}

void GuardManager::BeforeLaunch(uint64_t context, uint64_t stream) {
  if (ops_ == nullptr ||
      (contexts_with_fills_.load(std::memory_order_acquire) == 0 &&
       contexts_with_ordered_fills_.load(std::memory_order_acquire) == 0)) {
    return;
  }
  absl::MutexLock lock(&mu_);
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  // The stream's own blocks first, in its order, before the kernel.
  FlushOrderedFillsLocked(context, it->second, stream);
  if (it->second.pending_fills.empty()) return;
  FlushFillsLocked(context, it->second);
  // The program's kernel must see the canaries in place, or its overrun could
  // land before the fill and be painted over.
  if (!ops_->StreamCapturing(ProgramStream(stream))) {
    ops_->OrderAfterFills(context, ProgramStream(stream));
  }
}

void GuardManager::AfterLaunch(uint64_t context, uint64_t stream,
                               uint32_t kernel,
                               const std::vector<ArgWord>* arg_words,
                               std::vector<GuardFinding>* findings) {
  NoteLaunch(context, kernel);
  PollReleases(findings);
  // Called right after the program's launch on this thread: `context` is
  // the one its launch went to.
  CheckAfterLaunch(context, stream, kernel, arg_words, findings,
                   /*context_current=*/true);
}

void GuardManager::NoteLaunch(uint64_t context, uint32_t kernel) {
  const uint64_t s =
      launch_sequence_.fetch_add(1, std::memory_order_acq_rel) + 1;
  LaunchEntry& e = launches_[s % kLaunchLog];
  e.context.store(context, std::memory_order_relaxed);
  e.kernel.store(kernel, std::memory_order_relaxed);
  e.sequence.store(s, std::memory_order_release);
}

void GuardManager::CheckAfterLaunch(uint64_t context, uint64_t stream,
                                    uint32_t kernel,
                                    const std::vector<ArgWord>* arg_words,
                                    std::vector<GuardFinding>* findings,
                                    bool context_current) {
  if (!MayCheckKernel(kernel)) return;
  // No argument can point into a block: nothing this kernel can have
  // written is known to the tool (what it reaches otherwise is checked at
  // the next synchronization). No lock, no GPU call.
  if (arg_words != nullptr && arg_words->empty()) return;
  absl::MutexLock lock(&mu_);
  const bool suspect = level_ != CheckLevel::kKernel;
  if (suspect && !suspects_.contains(kernel)) return;  // a filter bit's twin
  auto it = contexts_.find(context);
  if (it == contexts_.end() || ops_->StreamCapturing(ProgramStream(stream))) {
    return;
  }
  // Answers first: a zone they report is re-armed by the flush below, before
  // this kernel's check runs.
  PollPendingLocked(/*wait=*/false, findings);
  if (pending_.size() >= kMaxPendingChecks) {
    // Bound the work in flight: wait for the oldest (the lock is let go
    // meanwhile, so the context is looked up again after).
    PollPendingLocked(/*wait=*/true, findings);
    it = contexts_.find(context);
    if (it == contexts_.end()) return;
  }
  Context& c = it->second;
  if (c.findings_lost) return;  // the next synchronization checks every zone
  FlushFillsLocked(context, c);
  std::shared_ptr<const Table> table;
  if (arg_words != nullptr) {
    // After the flush: a zone re-armed there is checked with its new
    // generation.
    table = BuildReachTable(c, stream, *arg_words);
  } else {
    if (!c.table) c.table = BuildTable(c, stream, /*device_wide=*/false);
    table = c.table;
    // Unconfirmed stream-ordered blocks of other streams are left out of the
    // cached table; blocks of this stream are in order here.
    bool has_local_unconfirmed = false;
    for (const auto& [raw, b] : c.blocks) {
      if (!b.confirmed && b.record.stream == stream) {
        has_local_unconfirmed = true;
      }
    }
    if (has_local_unconfirmed) table = BuildTable(c, stream, false);
  }
  if (table->zones.empty()) return;
  // One launch on the program's stream when the zones are few and small.
  uint64_t ticket = ops_->CheckAfterKernel(context, ProgramStream(stream),
                                           table->zones, context_current);
  if (ticket == 0) {
    ++stats_.check_failures;
    return;
  }
  for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
  if (suspect) ++stats_.suspect_checks;
  pending_.push_back(PendingCheck{ticket,
                                  context,
                                  table,
                                  kernel,
                                  suspect ? "suspect" : "kernel",
                                  {},
                                  next_pending_sequence_++});
}

void GuardManager::OnSynchronized(uint64_t context, uint64_t stream,
                                  bool device_wide,
                                  std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  PollPendingLocked(/*wait=*/device_wide, findings);
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  EnqueueFreeChecksLocked(context, it->second);
  // The program's work is done: checks still waiting for a fill to ride on
  // go now, so blocks wait for reuse no longer than to a synchronization.
  if (device_wide) FlushDeferredChecksLocked(context, it->second, std::nullopt);
  if (level_ >= CheckLevel::kSync) {
    // The check of every zone is enqueued, not waited for: a synchronizing
    // call costs the program one check launch, not a round trip to the GPU.
    // Its answer is collected at a later poll (the next synchronization at
    // the latest) and names the kernels run since the last clean check.
    EnqueueContextCheckLocked(context, it->second, stream, device_wide, "sync",
                              findings);
    PollPendingLocked(/*wait=*/false, findings);
  }
  PollReleasesLocked(context, /*wait_oldest=*/false, findings);
  // Their blocks go back to CUDA at the program's next free.
}

void GuardManager::EnqueueFreeChecksLocked(uint64_t context, Context& c) {
  if (quarantine_budget_ == 0 && !c.quarantine.empty()) {
    EvictLocked(context, c, c.quarantine.size());
  }
}

// Synchronizes `context` with the lock let go (the GPU may be waiting for a
// host callback that waits for a program thread that waits for this lock),
// then checks all its zones if it still exists and answered.
void GuardManager::SyncAndCheckLocked(uint64_t context, absl::string_view check,
                                      std::vector<GuardFinding>* findings) {
  mu_.Unlock();
  const int synced = ops_->SynchronizeContext(context);
  mu_.Lock();
  if (synced != 0) return;
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  CheckContextLocked(context, it->second, 0, /*device_wide=*/true, check,
                     findings);
}

void GuardManager::CheckAll(absl::string_view reason,
                            std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr || level_ == CheckLevel::kNone) return;
  absl::MutexLock lock(&mu_);
  PollPendingLocked(/*wait=*/true, findings);
  std::vector<uint64_t> contexts;
  for (auto& [context, c] : contexts_) {
    EnqueueFreeChecksLocked(context, c);
    contexts.push_back(context);
  }
  for (uint64_t context : contexts) {
    SyncAndCheckLocked(context, reason, findings);
    // Nothing is left awaiting its check: its findings are in this report,
    // and its blocks back with CUDA.
    DrainReleasesLocked(context, /*release=*/true, findings);
  }
}

void GuardManager::BeforeTeardown(int device, uint64_t context,
                                  std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  for (auto& [ctx, c] : contexts_) {
    if (context != 0 ? ctx == context : c.device == device) {
      FlushDeferredChecksLocked(ctx, c, std::nullopt);
    }
  }
  PollPendingLocked(/*wait=*/true, findings);
  std::vector<uint64_t> doomed;
  for (auto& [ctx, c] : contexts_) {
    if (context != 0 ? ctx == context : c.device == device) {
      EnqueueFreeChecksLocked(ctx, c);
      doomed.push_back(ctx);
    }
  }
  for (uint64_t ctx : doomed) {
    if (level_ != CheckLevel::kNone)
      SyncAndCheckLocked(ctx, "teardown", findings);
    // Blocks awaiting release die with the context's memory; their checks'
    // answers are still reported.
    DrainReleasesLocked(ctx, /*release=*/false, findings);
    auto it = contexts_.find(ctx);
    if (it == contexts_.end()) continue;
    if (!it->second.pending_fills.empty()) contexts_with_fills_.fetch_sub(1);
    if (!it->second.ordered_fills.empty()) {
      contexts_with_ordered_fills_.fetch_sub(1);
    }
    // Blocks held for reuse die with the context's memory too.
    reusable_count_.fetch_sub(static_cast<int64_t>(it->second.ready_count),
                              std::memory_order_relaxed);
    device_ready_count_.fetch_sub(
        static_cast<int64_t>(it->second.device_ready.size()),
        std::memory_order_relaxed);
    ops_->ForgetContext(ctx);
    contexts_.erase(it);
  }
}

// ---- Free and quarantine
// -------------------------------------------------------

bool GuardManager::HasArmedZones(const Block& b) {
  const AllocationRecord& r = b.record;
  if (b.canaries_armed &&
      (r.address > b.front_begin || r.raw_address + r.raw_bytes > UserEnd(r))) {
    return true;
  }
  return b.held && b.freed_armed && r.bytes > 0;
}

bool GuardManager::TryHold(const AllocationRecord& block,
                           const FreedRecord& freed,
                           std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr || StreamOrdered(block.api)) return false;
  absl::MutexLock lock(&mu_);
  {
    auto cit = contexts_.find(block.context);
    if (cit == contexts_.end()) return false;
    auto it = cit->second.blocks.find(block.raw_address);
    if (it == cit->second.blocks.end()) return false;
    // Without a quarantine a block is held only so that its check runs
    // before CUDA can hand its memory out again: one whose canaries were
    // never written has nothing to check and goes back to CUDA now.
    if (quarantine_budget_ == 0 &&
        (level_ == CheckLevel::kNone || !HasArmedZones(it->second))) {
      return false;
    }
  }
  // cudaFree waits for the device; so must a free the tool keeps, both for
  // the program's sake and so no kernel still writes the block when it is
  // filled or checked. An error from earlier work: let CUDA's own free
  // report it.
  if (!SynchronizeForFreeLocked(block.context, findings)) return false;
  // The lock was let go: look the block up again.
  auto cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return false;
  Context& c = cit->second;
  auto it = c.blocks.find(block.raw_address);
  if (it == c.blocks.end()) return false;
  Block& b = it->second;
  b.held = true;
  b.freed = freed;
  if (quarantine_budget_ > 0) {
    // The freed pattern, written before the program's next kernel (which
    // waits for it): a change to it is a write after free.
    b.freed_pending = true;
    MarkForFillLocked(c, b);
  }
  c.quarantine.push_back(block.raw_address);
  c.held_bytes += block.raw_bytes;
  c.held_footprint += HeldFootprint(block);
  c.TablesStale();
  return true;
}

bool GuardManager::TryHoldOrdered(const AllocationRecord& block,
                                  const FreedRecord& freed, uint64_t stream) {
  if (ops_ == nullptr || quarantine_budget_ == 0 || !hold_ordered_ ||
      !StreamOrdered(block.api) || !block.guarded()) {
    return false;
  }
  // A free made while its stream is captured is a node of the graph: it must
  // reach CUDA, to run when the graph does.
  if (ops_->StreamCapturing(ProgramStream(stream))) return false;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return false;
  Context& c = cit->second;
  auto it = c.blocks.find(block.raw_address);
  if (it == c.blocks.end() || it->second.freeing) return false;
  Block& b = it->second;
  b.held = true;
  b.freed = freed;
  // Checked on the free's stream, and on others once a synchronization
  // covered it (Block::confirmed).
  b.record.stream = stream;
  b.confirmed = false;
  b.generation = NextGeneration();
  if (block.bytes > 0) {
    // In the free's stream order, with the fills of the next launch there:
    // after the program's last use of the block on it, before anything the
    // program runs there next. (Canaries still waiting move to that stream
    // with it.)
    b.freed_pending = true;
    b.freed_armed = false;
    MarkForFillLocked(c, b);
  }
  c.quarantine.push_back(block.raw_address);
  c.held_bytes += block.raw_bytes;
  c.TablesStale();
  return true;
}

uint64_t GuardManager::ReleaseOrderedLocked(uint64_t context,
                                            const std::vector<Block>& blocks) {
  absl::flat_hash_map<uint64_t, std::vector<Block>> by_stream;
  for (const Block& b : blocks) by_stream[b.record.stream].push_back(b);
  uint64_t released = 0;
  for (auto& [stream, group] : by_stream) {
    auto table = std::make_shared<Table>();
    if (level_ != CheckLevel::kNone) {
      for (const Block& b : group) AppendArmedZones(b, table.get());
    }
    if (!table->zones.empty()) {
      // Ahead of CUDA's free in the same stream: the check reads the
      // blocks before the pool can hand them out again. A check made
      // earlier that still reads them later finds another block's
      // generation there and reports nothing (CollectResults).
      const uint64_t ticket =
          ops_->CheckAsync(context, ProgramStream(stream), table->zones);
      if (ticket == 0) {
        NoteCheckFailureLocked();
      } else {
        for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
        pending_.push_back(PendingCheck{ticket, context, table, 0, "quarantine",
                                        group, next_pending_sequence_++});
      }
    }
    for (const Block& b : group) {
      ++stats_.evicted;
      const int rc = ops_->ReleaseOrdered(context, b.record.raw_address,
                                          ProgramStream(stream));
      if (rc == 0) {
        released += b.record.raw_bytes;
      } else {
        LogNote(1, "releasing held 0x%llx on its stream failed (%d)",
                static_cast<unsigned long long>(b.record.raw_address), rc);
      }
    }
  }
  return released;
}

// ---- Reuse of checked stream-ordered blocks
// ------------------------------------------------------------

bool GuardManager::MayReuseLocked(const Context& c, const Block& b) const {
  if (reuse_cap_ == 0 || b.freeing || b.record.bytes == 0 || b.no_reuse) {
    return false;
  }
  if (FamilyOf(b.record.api) == GuardFamily::kDevice) {
    if (!reuse_device_) return false;
  } else {
    // The current pool's blocks only: an allocation from an explicit pool
    // must come from that pool.
    if (!reuse_ordered_ || (b.record.api != Api::kCudaMallocAsync &&
                            b.record.api != Api::kCuMemAllocAsync)) {
      return false;
    }
    if (pool_set_devices_.contains(c.device)) return false;
  }
  // Every zone written (and so checkable): nothing to fill when it is
  // taken.
  return b.canaries_armed && !b.canaries_pending && b.freed_armed &&
         !b.freed_pending;
}

void GuardManager::EnqueueReuseChecksLocked(uint64_t context, Context& c,
                                            const std::vector<uint64_t>& raws) {
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> by_stream;
  for (uint64_t raw : raws) {
    auto it = c.blocks.find(raw);
    if (it != c.blocks.end() && it->second.reuse == Block::Reuse::kChecking)
      by_stream[it->second.record.stream].push_back(raw);
  }
  for (auto& [stream, group] : by_stream) {
    std::shared_ptr<Table> table = ReuseTableLocked(c, group);
    // On the free's stream, as for a block going back to CUDA: behind the
    // program's last use of the blocks there, so its answer also says that
    // their frees have completed.
    const uint64_t ticket =
        table->zones.empty()
            ? 0
            : ops_->CheckAsync(context, ProgramStream(stream), table->zones);
    AwaitReuseCheckLocked(context, c, std::move(group), std::move(table),
                          ticket);
  }
}

void GuardManager::EnqueueDeviceReuseCheckLocked(uint64_t context, Context& c,
                                                 std::vector<uint64_t> raws) {
  std::shared_ptr<Table> table = ReuseTableLocked(c, raws);
  // On the tool's stream: each block's free synchronized the device, and
  // no program stream need wait for the check.
  const uint64_t ticket =
      table->zones.empty() ? 0 : ops_->CheckAsync(context, 0, table->zones);
  AwaitReuseCheckLocked(context, c, std::move(raws), std::move(table), ticket);
}

std::shared_ptr<GuardManager::Table> GuardManager::ReuseTableLocked(
    const Context& c, const std::vector<uint64_t>& raws) const {
  auto table = std::make_shared<Table>();
  for (uint64_t raw : raws) {
    auto it = c.blocks.find(raw);
    if (it != c.blocks.end()) AppendArmedZones(it->second, table.get());
  }
  return table;
}

void GuardManager::AwaitReuseCheckLocked(uint64_t context, Context& c,
                                         std::vector<uint64_t> raws,
                                         std::shared_ptr<Table> table,
                                         uint64_t ticket) {
  if (ticket == 0) {
    if (!table->zones.empty()) NoteCheckFailureLocked();
    for (uint64_t raw : raws) {
      ReleaseReuseBlockLocked(context, c, raw, /*free_complete=*/false);
    }
    return;
  }
  for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
  PendingCheck p{ticket,       context, std::move(table),        0,
                 "quarantine", {},      next_pending_sequence_++};
  p.reuse = std::move(raws);
  // TakeInFlightLocked looks at stream-ordered blocks only (a cudaMalloc
  // block's check is on the tool's stream, ordered behind no allocation).
  auto first = c.blocks.find(p.reuse.empty() ? 0 : p.reuse.front());
  p.counted_for_reuse =
      first != c.blocks.end() && StreamOrdered(first->second.record.api);
  if (p.counted_for_reuse) reuse_checks_in_flight_.fetch_add(1);
  pending_.push_back(std::move(p));
}

void GuardManager::DeferReuseChecksLocked(uint64_t context, Context& c,
                                          const std::vector<uint64_t>& raws) {
  // What one launch's check takes (kernels/zone_abi.h): GMT_INLINE_MAX_ZONES
  // zones, a block adding up to MaxZonesPerBlock (three by default: its
  // canaries and its freed bytes), and GMT_INLINE_MAX_BYTES per block of
  // the grid.
  const size_t max_blocks = GMT_INLINE_MAX_ZONES / MaxZonesPerBlock();
  // zone_abi.h's sizes are 32-bit products, shared with the kernels.
  // NOLINTBEGIN(bugprone-implicit-widening-of-multiplication-result)
  constexpr uint64_t kMaxBytes =
      uint64_t{GMT_INLINE_MAX_BYTES} * uint64_t{GMT_INLINE_MAX_BLOCKS};
  // NOLINTEND(bugprone-implicit-widening-of-multiplication-result)
  std::vector<uint64_t> now;
  for (uint64_t raw : raws) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end()) continue;
    const AllocationRecord& r = it->second.record;
    if (r.raw_bytes > kMaxBytes) {
      now.push_back(raw);  // never fits one launch's check
      continue;
    }
    Context::DeferredChecks& waiting = c.deferred_checks[r.stream];
    if (waiting.raws.size() + 1 > max_blocks ||
        waiting.raw_bytes + r.raw_bytes > kMaxBytes) {
      EnqueueReuseChecksLocked(context, c, waiting.raws);
      waiting = Context::DeferredChecks{};
    }
    waiting.raws.push_back(raw);
    waiting.raw_bytes += r.raw_bytes;
  }
  if (!now.empty()) EnqueueReuseChecksLocked(context, c, now);
}

void GuardManager::FlushDeferredChecksLocked(uint64_t context, Context& c,
                                             std::optional<uint64_t> stream) {
  if (c.deferred_checks.empty()) return;
  std::vector<uint64_t> streams;
  for (const auto& [s, waiting] : c.deferred_checks) {
    if (!stream || s == *stream) streams.push_back(s);
  }
  for (uint64_t s : streams) {
    // Work enqueued now would become a node of the graph being captured.
    if (ops_->StreamCapturing(ProgramStream(s))) continue;
    auto node = c.deferred_checks.extract(s);
    EnqueueReuseChecksLocked(context, c, node.mapped().raws);
  }
}

void GuardManager::LaunchReuseChecksLocked(uint64_t context, Context& c) {
  if (c.deferred_checks.empty()) return;
  std::vector<uint64_t> streams;
  for (const auto& [s, waiting] : c.deferred_checks) streams.push_back(s);
  for (uint64_t s : streams) FlushOrderedFillsLocked(context, c, s);
  FlushDeferredChecksLocked(context, c, std::nullopt);  // no fill took them
}

void GuardManager::SettleReuseLocked(const PendingCheck& p,
                                     DeviceOps::Poll state) {
  auto cit = contexts_.find(p.context);
  if (cit == contexts_.end()) return;  // its memory went with it
  Context& c = cit->second;
  // A check that ran (its findings lost or not) ran behind the frees.
  const bool complete =
      state == DeviceOps::Poll::kDone || state == DeviceOps::Poll::kLost;
  for (uint64_t raw : p.reuse) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.reuse != Block::Reuse::kChecking) {
      continue;
    }
    Block& b = it->second;
    // A finding re-armed the zone (CollectResults): it must be written
    // again before anyone may take the block as clean.
    const bool clean = state == DeviceOps::Poll::kDone && !b.canaries_pending &&
                       !b.freed_pending &&
                       !pool_set_devices_.contains(c.device);
    if (!clean) {
      ReleaseReuseBlockLocked(p.context, c, raw, complete);
      continue;
    }
    b.reuse = Block::Reuse::kReady;
    b.reuse_serial = c.next_reuse_serial++;
    // Its zones are in place for every stream: the check that read them
    // has completed.
    b.confirmed = true;
    c.reusable_order.emplace_back(raw, b.reuse_serial);
    if (FamilyOf(b.record.api) == GuardFamily::kDevice) {
      c.device_ready.emplace(b.record.raw_bytes, raw);
      device_ready_count_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    c.reusable[b.record.bytes].emplace_back(raw, b.reuse_serial);
    ++c.ready_count;
    reusable_count_.fetch_add(1, std::memory_order_relaxed);
  }
  // The bound: oldest ready blocks back to CUDA first.
  while (c.reusable_bytes > reuse_cap_ && !c.reusable_order.empty()) {
    const auto [raw, serial] = c.reusable_order.front();
    c.reusable_order.pop_front();
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.reuse != Block::Reuse::kReady ||
        it->second.reuse_serial != serial) {
      continue;
    }
    ReleaseReuseBlockLocked(p.context, c, raw, /*free_complete=*/true);
  }
  if (c.reusable_order.size() >
      2 * (c.ready_count + c.device_ready.size()) + 64) {
    CompactReusableLocked(c);
  }
}

void GuardManager::CompactReusableLocked(Context& c) {
  std::deque<std::pair<uint64_t, uint64_t>> order;
  c.reusable.clear();
  for (const auto& [raw, serial] : c.reusable_order) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.reuse != Block::Reuse::kReady ||
        it->second.reuse_serial != serial) {
      continue;
    }
    order.emplace_back(raw, serial);
    if (FamilyOf(it->second.record.api) == GuardFamily::kDevice) continue;
    c.reusable[it->second.record.bytes].emplace_back(raw, serial);
  }
  c.reusable_order.swap(order);
}

uint64_t GuardManager::ReleaseReuseBlockLocked(uint64_t context, Context& c,
                                               uint64_t raw,
                                               bool free_complete) {
  auto it = c.blocks.find(raw);
  if (it == c.blocks.end()) return 0;
  Block& b = it->second;
  const bool device = FamilyOf(b.record.api) == GuardFamily::kDevice;
  if (b.reuse == Block::Reuse::kReady) {
    if (device) {
      EraseDeviceReadyLocked(c, b);
    } else {
      --c.ready_count;
      reusable_count_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  const uint64_t bytes = b.record.raw_bytes;
  c.reusable_bytes -= std::min(c.reusable_bytes, bytes);
  if (device) {
    // CUDA's free synchronizes: never under the lock. The release queue
    // gives it back at a later free of the program (or an out-of-memory
    // retry), after any check enqueued so far that may read it.
    ReleaseBatch batch;
    batch.check = "quarantine";
    batch.kernel_checks_before = next_pending_sequence_;
    batch.bytes = bytes;
    batch.blocks.push_back(b);
    if (tracks_ranges_) c.ranges.Remove(raw);
    c.blocks.erase(it);
    c.TablesStale();
    c.releasing_bytes += bytes;
    c.releasing.push_back(std::move(batch));
    return 0;  // counted when CUDA has it back
  }
  // A free known complete needs no order behind the program's work, and its
  // stream may be gone by now: the tool's stream, which waits for no
  // program work.
  const uint64_t stream = free_complete ? 0 : ProgramStream(b.record.stream);
  DropOrderedFillLocked(c, raw);
  if (tracks_ranges_) c.ranges.Remove(raw);
  c.blocks.erase(it);
  c.TablesStale();
  ++stats_.evicted;
  const int rc = ops_->ReleaseOrdered(context, raw, stream);
  if (rc != 0) {
    LogNote(1, "releasing held 0x%llx failed (%d)",
            static_cast<unsigned long long>(raw), rc);
    return 0;
  }
  return bytes;
}

uint64_t GuardManager::ReleaseReusableLocked(uint64_t context, Context& c,
                                             uint64_t pool) {
  uint64_t released = 0;
  bool kept = false;
  for (const auto& [raw, serial] : c.reusable_order) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.reuse != Block::Reuse::kReady ||
        it->second.reuse_serial != serial) {
      continue;
    }
    if (!OfPoolLocked(context, raw, pool) ||
        (pool != 0 &&
         FamilyOf(it->second.record.api) == GuardFamily::kDevice)) {
      kept = true;
      continue;
    }
    released += ReleaseReuseBlockLocked(context, c, raw, true);
  }
  // The released ones' entries are stale now (their blocks are gone);
  // with blocks of other pools kept, CompactReusableLocked drops them later.
  if (!kept) {
    c.reusable_order.clear();
    c.reusable.clear();
  }
  return released;
}

bool GuardManager::OfPoolLocked(uint64_t context, uint64_t raw, uint64_t pool) {
  if (pool == 0) return true;
  const uint64_t of = ops_->PoolOf(context, raw);
  return of == 0 || of == pool;
}

std::optional<uint64_t> GuardManager::TakeReusable(uint64_t context,
                                                   uint64_t bytes,
                                                   const GuardLayout& layout,
                                                   uint64_t stream) {
  if (ops_ == nullptr || !reuse_ordered_) return std::nullopt;
  if (reusable_count_.load(std::memory_order_relaxed) <= 0 &&
      reuse_checks_in_flight_.load(std::memory_order_relaxed) <= 0) {
    // Nothing ready or on its way anywhere: no lock, but for the misses
    // looked at.
    if (CountReuseMiss()) {
      absl::MutexLock lock(&mu_);
      auto cit = contexts_.find(context);
      if (cit != contexts_.end()) {
        ClassifyReuseMissLocked(cit->second, bytes);
      } else {
        ++stats_.reuse_miss_none;  // nothing held in the context at all
      }
    }
    return std::nullopt;
  }
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(context);
  if (cit == contexts_.end()) {
    if (CountReuseMiss()) ++stats_.reuse_miss_none;
    return std::nullopt;
  }
  Context& c = cit->second;
  if (pool_set_devices_.contains(c.device)) return std::nullopt;
  std::optional<uint64_t> taken;
  if (auto lit = c.reusable.find(bytes); lit != c.reusable.end()) {
    auto& list = lit->second;
    while (!list.empty() && !taken) {
      const auto [raw, serial] = list.back();
      list.pop_back();
      auto it = c.blocks.find(raw);
      if (it == c.blocks.end() || it->second.reuse != Block::Reuse::kReady ||
          it->second.reuse_serial != serial) {
        continue;
      }
      Block& b = it->second;
      const AllocationRecord& r = b.record;
      // Written over by a stale pointer since (a check re-armed it), or laid
      // out otherwise: not for this allocation.
      if (b.canaries_pending || b.freed_pending ||
          r.raw_bytes != layout.raw_bytes ||
          r.address - r.raw_address != layout.front) {
        ReleaseReuseBlockLocked(context, c, raw, /*free_complete=*/true);
        continue;
      }
      b.reuse = Block::Reuse::kTaken;
      --c.ready_count;
      reusable_count_.fetch_sub(1, std::memory_order_relaxed);
      c.reusable_bytes -= std::min(c.reusable_bytes, r.raw_bytes);
      taken = raw;
    }
    if (list.empty()) c.reusable.erase(lit);
  }
  if (!taken) taken = TakeInFlightLocked(context, c, bytes, layout, stream);
  if (!taken && CountReuseMiss()) ClassifyReuseMissLocked(c, bytes);
  return taken;
}

void GuardManager::EraseDeviceReadyLocked(Context& c, const Block& b) {
  auto [first, last] = c.device_ready.equal_range(b.record.raw_bytes);
  for (auto it = first; it != last; ++it) {
    if (it->second != b.record.raw_address) continue;
    c.device_ready.erase(it);
    device_ready_count_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
}

std::optional<GuardManager::ReusedBlock> GuardManager::TakeDeviceReusable(
    uint64_t context, const GuardLayout& layout) {
  if (ops_ == nullptr || !reuse_device_) return std::nullopt;
  // Misses are counted (the exit log), not looked at for a reason: that
  // walk knows stream-ordered blocks by their size only.
  if (device_ready_count_.load(std::memory_order_relaxed) <= 0 ||
      captures_in_progress_.load(std::memory_order_acquire) > 0) {
    reuse_misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(context);
  if (cit == contexts_.end()) return std::nullopt;
  Context& c = cit->second;
  // At most 1/8 more than planned: the tail zone grows by that (checked
  // and filled like any), and the device memory a block holds stays near
  // what CUDA would have given.
  const uint64_t most = layout.raw_bytes + layout.raw_bytes / 8;
  for (auto it = c.device_ready.lower_bound(layout.raw_bytes);
       it != c.device_ready.end() && it->first <= most; ++it) {
    auto bit = c.blocks.find(it->second);
    if (bit == c.blocks.end()) continue;
    Block& b = bit->second;
    const AllocationRecord& r = b.record;
    if (b.reuse != Block::Reuse::kReady || b.canaries_pending ||
        b.freed_pending || r.address - r.raw_address != layout.front) {
      continue;
    }
    ReusedBlock taken{r.raw_address, r.raw_bytes};
    c.device_ready.erase(it);
    device_ready_count_.fetch_sub(1, std::memory_order_relaxed);
    b.reuse = Block::Reuse::kTaken;
    c.reusable_bytes -= std::min(c.reusable_bytes, r.raw_bytes);
    // Live again: what freeing it would give back is the program's now.
    c.held_footprint -= std::min(c.held_footprint, HeldFootprint(r));
    return taken;
  }
  reuse_misses_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

std::optional<uint64_t> GuardManager::ReusedBufferId(uint64_t context,
                                                     uint64_t raw) const {
  if (ops_ == nullptr || !reuse_device_) return std::nullopt;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(context);
  if (cit == contexts_.end()) return std::nullopt;
  auto it = cit->second.blocks.find(raw);
  if (it == cit->second.blocks.end() || it->second.held ||
      it->second.reused_buffer_id == 0) {
    return std::nullopt;
  }
  return it->second.reused_buffer_id;
}

void GuardManager::NoteShared(uint64_t context, uint64_t raw) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(context);
  if (cit == contexts_.end()) return;
  auto it = cit->second.blocks.find(raw);
  if (it != cit->second.blocks.end()) it->second.no_reuse = true;
}

std::optional<uint64_t> GuardManager::TakeInFlightLocked(
    uint64_t context, Context& c, uint64_t bytes, const GuardLayout& layout,
    uint64_t stream) {
  // The checks are few (kMaxPendingChecks at most, most of them without
  // blocks for reuse), and only a miss of the ready blocks walks them.
  for (PendingCheck& p : pending_) {
    if (p.context != context || p.reuse.empty()) continue;
    for (auto rit = p.reuse.begin(); rit != p.reuse.end(); ++rit) {
      auto it = c.blocks.find(*rit);
      if (it == c.blocks.end()) continue;
      Block& b = it->second;
      const AllocationRecord& r = b.record;
      // Its check went on the stream of its free (EnqueueReuseChecksLocked):
      // only an allocation there is ordered behind it.
      if (b.reuse != Block::Reuse::kChecking || r.bytes != bytes ||
          !StreamOrdered(r.api) ||
          ProgramStream(r.stream) != ProgramStream(stream) ||
          b.canaries_pending || b.freed_pending ||
          r.raw_bytes != layout.raw_bytes ||
          r.address - r.raw_address != layout.front) {
        continue;
      }
      const uint64_t raw = *rit;
      p.owned.push_back(b);  // what the check finds is this lifetime's
      p.handed_over.push_back(raw);
      p.reuse.erase(rit);
      b.reuse = Block::Reuse::kTaken;
      b.canaries_owed_to = p.ticket;
      c.reusable_bytes -= std::min(c.reusable_bytes, r.raw_bytes);
      ++stats_.reused_in_flight;
      return raw;
    }
  }
  return std::nullopt;
}

void GuardManager::SettleHandedOverLocked(const PendingCheck& p,
                                          DeviceOps::Poll state) {
  auto cit = contexts_.find(p.context);
  if (cit == contexts_.end()) return;
  Context& c = cit->second;
  for (uint64_t raw : p.handed_over) {
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end() || it->second.canaries_owed_to != p.ticket) {
      continue;
    }
    Block& b = it->second;
    b.canaries_owed_to = 0;
    // Not read (a failed or lost check): what they hold is not known, so
    // they are written again before any check reads them.
    if (state != DeviceOps::Poll::kDone && !b.canaries_pending) {
      b.canaries_pending = true;
      MarkForFillLocked(c, b);
      b.generation = NextGeneration();
    }
  }
  c.TablesStale();
}

bool GuardManager::CountReuseMiss() {
  return reuse_misses_.fetch_add(1, std::memory_order_relaxed) %
             kReuseMissSampleEvery ==
         0;
}

void GuardManager::ClassifyReuseMissLocked(const Context& c, uint64_t bytes) {
  bool checking = false;
  bool quarantine = false;
  for (const auto& [raw, b] : c.blocks) {
    if (b.record.bytes != bytes || !b.held) continue;
    if (b.reuse == Block::Reuse::kChecking) {
      checking = true;
      break;
    }
    if (b.reuse == Block::Reuse::kNone &&
        (b.record.api == Api::kCudaMallocAsync ||
         b.record.api == Api::kCuMemAllocAsync)) {
      quarantine = true;
    }
  }
  ++(checking     ? stats_.reuse_miss_checking
     : quarantine ? stats_.reuse_miss_quarantine
                  : stats_.reuse_miss_none);
}

void GuardManager::NoteDevicePoolSet(int device) {
  if (!reuse_ordered_) return;
  absl::MutexLock lock(&mu_);
  pool_set_devices_.insert(device);
}

bool GuardManager::SynchronizeForFreeLocked(
    uint64_t context, std::vector<GuardFinding>* findings) {
  PollPendingLocked(/*wait=*/false, findings);
  PollReleasesLocked(context, /*wait_oldest=*/false, findings);
  // CUDA's free synchronizes the device: releasing a block whose check is
  // in gives the program's free its synchronization, and costs what the
  // program's own free would have.
  if (std::optional<Block> ready = TakeReleasableLocked(context)) {
    if (ReleaseBlockLocked(context, *ready) == 0) return true;
    // A free that failed may not have synchronized: the context sync below
    // does, and answers any error of earlier work.
  }
  mu_.Unlock();
  const int synced = ops_->SynchronizeContext(context);
  mu_.Lock();
  if (synced != 0) return false;
  // Everything enqueued before the sync has run: answers without a wait.
  PollPendingLocked(/*wait=*/false, findings);
  PollReleasesLocked(context, /*wait_oldest=*/false, findings);
  return true;
}

void GuardManager::NoteFindingsLostLocked(uint64_t context) {
  ++stats_.checks;
  auto it = contexts_.find(context);
  if (it != contexts_.end()) it->second.findings_lost = true;
  if (!findings_lost_said_) {
    findings_lost_said_ = true;
    LogError(
        "guard zones: a check found changed zones, but its findings were "
        "overwritten before they were read (too many checks with findings "
        "in flight); they are reported by the full check at the next "
        "synchronization, naming the kernels since the last clean check");
  }
}

void GuardManager::NoteCheckFailureLocked() {
  ++stats_.check_failures;
  if (!check_failure_said_) {
    check_failure_said_ = true;
    LogError(
        "a guard-zone check could not run on the GPU; redzones are "
        "not being verified (see earlier messages)");
  }
}

uint64_t GuardManager::EvictLocked(uint64_t context, Context& c, size_t count) {
  ReleaseBatch batch;
  std::vector<Block> ordered;
  batch.check = quarantine_budget_ > 0 ? "quarantine" : "free";
  batch.since = c.clean_sequence;
  batch.kernel_checks_before = next_pending_sequence_;
  auto table = std::make_shared<Table>();
  std::vector<uint64_t> reuse;
  std::vector<uint64_t> device_reuse;
  for (size_t i = 0; i < count && !c.quarantine.empty(); ++i) {
    const uint64_t raw = c.quarantine.front();
    c.quarantine.pop_front();
    auto it = c.blocks.find(raw);
    if (it == c.blocks.end()) continue;
    Block& b = it->second;
    // Only what was written can be checked: a block freed before any launch
    // was never filled, and costs no GPU work at all.
    c.held_bytes -= std::min(c.held_bytes, b.record.raw_bytes);
    if (StreamOrdered(b.record.api)) {
      DropOrderedFillLocked(c, raw);  // its pattern was never written
      if (MayReuseLocked(c, b)) {
        // Stays in the map, held, until its check answers.
        b.reuse = Block::Reuse::kChecking;
        c.reusable_bytes += b.record.raw_bytes;
        reuse.push_back(raw);
        continue;
      }
      ordered.push_back(b);
      c.blocks.erase(it);
      if (tracks_ranges_) c.ranges.Remove(raw);
      continue;
    }
    if (MayReuseLocked(c, b)) {
      // Stays in the map, held (and in held_footprint), until its check
      // answers.
      b.reuse = Block::Reuse::kChecking;
      c.reusable_bytes += b.record.raw_bytes;
      device_reuse.push_back(raw);
      continue;
    }
    AppendArmedZones(b, table.get());
    batch.bytes += b.record.raw_bytes;
    batch.blocks.push_back(b);
    c.blocks.erase(it);
    if (tracks_ranges_) c.ranges.Remove(raw);
  }
  if (!reuse.empty()) {
    DeferReuseChecksLocked(context, c, reuse);
    LaunchReuseChecksLocked(context, c);
  }
  if (!device_reuse.empty()) {
    EnqueueDeviceReuseCheckLocked(context, c, std::move(device_reuse));
  }
  const uint64_t released =
      ordered.empty() ? 0 : ReleaseOrderedLocked(context, ordered);
  if (batch.blocks.empty()) {
    c.TablesStale();
    return released;
  }
  c.TablesStale();
  if (!table->zones.empty()) {
    // On the tool's stream, after the fills of these blocks; answered at a
    // later entry point, never waited for here.
    batch.ticket = ops_->CheckAsync(context, 0, table->zones);
    if (batch.ticket == 0) {
      NoteCheckFailureLocked();
    } else {
      for (const GmtZone& z : table->zones) stats_.bytes_checked += z.bytes;
      unanswered_releases_.fetch_add(1, std::memory_order_release);
    }
  }
  batch.table = std::move(table);
  c.releasing_bytes += batch.bytes;
  c.releasing.push_back(std::move(batch));
  return released;
}

void GuardManager::PollReleasesLocked(uint64_t context, bool wait_oldest,
                                      std::vector<GuardFinding>* findings) {
  for (;;) {
    auto cit = contexts_.find(context);
    if (cit == contexts_.end()) return;
    // The batches of a context are checked in order on one stream: the
    // oldest unanswered one is the one to ask.
    ReleaseBatch* batch = nullptr;
    for (ReleaseBatch& b : cit->second.releasing) {
      if (!b.answered()) {
        batch = &b;
        break;
      }
    }
    if (batch == nullptr) return;
    if (batch->in_wait) {
      // Another thread waits for its answer (a ticket answers once).
      if (!wait_oldest) return;
      mu_.Await(absl::Condition(
          +[](int* waits) { return *waits == 0; }, &releases_in_wait_));
      wait_oldest = false;  // something was waited for: enough
      continue;
    }
    const uint64_t ticket = batch->ticket;
    std::vector<GmtZoneResult> results;
    DeviceOps::Poll state = DeviceOps::Poll::kPending;
    if (wait_oldest) {
      batch->in_wait = true;
      ++releases_in_wait_;
      mu_.Unlock();
      state = ops_->PollCheck(ticket, /*wait=*/true, &results);
      mu_.Lock();
      --releases_in_wait_;
      wait_oldest = false;
      // The lock was let go: find the batch again (only teardown drops a
      // batch, and it waits for every answer first).
      cit = contexts_.find(context);
      if (cit == contexts_.end()) return;
      batch = nullptr;
      for (ReleaseBatch& b : cit->second.releasing) {
        if (b.ticket == ticket) batch = &b;
      }
      if (batch == nullptr) return;
      batch->in_wait = false;
    } else {
      state = ops_->PollCheck(ticket, /*wait=*/false, &results);
      if (state == DeviceOps::Poll::kPending) return;
    }
    batch->ticket = 0;
    unanswered_releases_.fetch_sub(1, std::memory_order_release);
    if (state == DeviceOps::Poll::kDone) {
      ++stats_.checks;
      CollectResults(context, cit->second, *batch->table, results, batch->check,
                     0, batch->blocks, batch->since, findings);
    } else if (state == DeviceOps::Poll::kLost) {
      NoteFindingsLostLocked(context);
    } else {
      NoteCheckFailureLocked();
    }
    batch->table.reset();
  }
}

void GuardManager::AnswerReleasesLocked(uint64_t context,
                                        std::vector<GuardFinding>* findings) {
  for (;;) {
    auto cit = contexts_.find(context);
    if (cit == contexts_.end()) return;
    bool unanswered = false;
    for (const ReleaseBatch& b : cit->second.releasing) {
      unanswered |= !b.answered();
    }
    if (!unanswered) return;
    PollReleasesLocked(context, /*wait_oldest=*/true, findings);
  }
}

bool GuardManager::KernelChecksAnsweredLocked(uint64_t before) const {
  return pending_in_wait_ == 0 &&
         (pending_.empty() || pending_.front().sequence >= before);
}

std::optional<GuardManager::Block> GuardManager::TakeReleasableLocked(
    uint64_t context) {
  auto cit = contexts_.find(context);
  if (cit == contexts_.end()) return std::nullopt;
  Context& c = cit->second;
  while (!c.releasing.empty()) {
    ReleaseBatch& batch = c.releasing.front();
    if (batch.next == batch.blocks.size()) {
      c.releasing.pop_front();
      continue;
    }
    if (!batch.answered() ||
        !KernelChecksAnsweredLocked(batch.kernel_checks_before)) {
      return std::nullopt;
    }
    Block b = batch.blocks[batch.next++];
    const uint64_t bytes = b.record.raw_bytes;
    batch.bytes -= std::min(batch.bytes, bytes);
    c.releasing_bytes -= std::min(c.releasing_bytes, bytes);
    c.held_footprint -= std::min(c.held_footprint, HeldFootprint(b.record));
    if (batch.next == batch.blocks.size()) c.releasing.pop_front();
    return b;
  }
  return std::nullopt;
}

int GuardManager::ReleaseBlockLocked(uint64_t context, const Block& b) {
  ++stats_.evicted;
  // CUDA's free synchronizes the device: never under the lock.
  mu_.Unlock();
  const int rc = ops_->Release(b.record.api, context, b.record.raw_address);
  mu_.Lock();
  if (rc != 0) {
    LogNote(1, "releasing held 0x%llx failed (%d)",
            static_cast<unsigned long long>(b.record.raw_address), rc);
  }
  return rc;
}

bool GuardManager::WaitForReleaseLocked(uint64_t context,
                                        std::vector<GuardFinding>* findings) {
  auto cit = contexts_.find(context);
  if (cit == contexts_.end() || cit->second.releasing.empty()) return false;
  const ReleaseBatch& oldest = cit->second.releasing.front();
  if (!oldest.answered()) {
    PollReleasesLocked(context, /*wait_oldest=*/true, findings);
    return true;
  }
  // Answered, but per-kernel checks enqueued before it may still read its
  // blocks.
  PollPendingLocked(/*wait=*/true, findings);
  mu_.Await(absl::Condition(
      +[](int* waits) { return *waits == 0; }, &pending_in_wait_));
  return true;
}

void GuardManager::BoundReleasesLocked(uint64_t context,
                                       std::vector<GuardFinding>* findings) {
  for (;;) {
    auto cit = contexts_.find(context);
    if (cit == contexts_.end() || cit->second.releasing_bytes <= release_cap_) {
      return;
    }
    if (std::optional<Block> ready = TakeReleasableLocked(context)) {
      ReleaseBlockLocked(context, *ready);
      continue;
    }
    ++stats_.release_waits;
    if (!WaitForReleaseLocked(context, findings)) return;
  }
}

uint64_t GuardManager::DrainReleasesLocked(
    uint64_t context, bool release, std::vector<GuardFinding>* findings) {
  uint64_t released = 0;
  for (;;) {
    auto cit = contexts_.find(context);
    if (cit == contexts_.end() || cit->second.releasing.empty()) {
      return released;
    }
    if (!release) {
      // The context is going away with its memory: every answer, then the
      // blocks are dropped without CUDA.
      AnswerReleasesLocked(context, findings);
      cit = contexts_.find(context);
      if (cit == contexts_.end()) return released;
      Context& c = cit->second;
      for (const ReleaseBatch& batch : c.releasing) {
        for (size_t i = batch.next; i < batch.blocks.size(); ++i) {
          c.held_footprint -=
              std::min(c.held_footprint, HeldFootprint(batch.blocks[i].record));
        }
      }
      c.releasing.clear();
      c.releasing_bytes = 0;
      return released;
    }
    if (std::optional<Block> ready = TakeReleasableLocked(context)) {
      if (ReleaseBlockLocked(context, *ready) == 0) {
        released += ready->record.raw_bytes;
      }
      continue;
    }
    if (!WaitForReleaseLocked(context, findings)) return released;
  }
}

void GuardManager::EvictOverBudget(std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  // Checks made at earlier evictions of stream-ordered blocks that have
  // answered: their staging buffers go back to the device ops for reuse
  // (left unpolled until the next synchronization, each eviction took a
  // new one).
  if (hold_ordered_) PollPendingLocked(/*wait=*/false, findings);
  std::vector<uint64_t> queued;
  for (auto& [context, c] : contexts_) {
    size_t count = 0;
    if (quarantine_budget_ > 0) {
      if (c.held_bytes > quarantine_budget_) {
        // Evict in batches down to 3/4 of the budget: one check launch for
        // many blocks instead of one per free.
        const uint64_t target = quarantine_budget_ / 4 * 3;
        uint64_t bytes = c.held_bytes;
        for (uint64_t raw : c.quarantine) {
          if (bytes <= target) break;
          auto it = c.blocks.find(raw);
          if (it != c.blocks.end()) bytes -= it->second.record.raw_bytes;
          ++count;
        }
      }
    } else if (c.held_bytes >= kFreeCheckBatchBytes ||
               c.quarantine.size() >= kFreeCheckBatchBlocks) {
      count = c.quarantine.size();
    }
    // Enqueues only: the lock stays held, so contexts_ can be walked on.
    if (count > 0) EvictLocked(context, c, count);
    if (!c.releasing.empty()) queued.push_back(context);
  }
  for (uint64_t context : queued) {
    PollReleasesLocked(context, /*wait_oldest=*/false, findings);
    BoundReleasesLocked(context, findings);
  }
}

std::vector<GuardManager::Block> GuardManager::TakeHeldOrderedLocked(
    uint64_t context, Context& c, std::optional<uint64_t> stream,
    uint64_t pool) {
  std::vector<Block> leaving;
  std::deque<uint64_t> kept;
  for (uint64_t raw : c.quarantine) {
    auto it = c.blocks.find(raw);
    if (it != c.blocks.end() && StreamOrdered(it->second.record.api) &&
        (!stream || it->second.record.stream == *stream) &&
        OfPoolLocked(context, raw, pool)) {
      c.held_bytes -= std::min(c.held_bytes, it->second.record.raw_bytes);
      DropOrderedFillLocked(c, raw);
      leaving.push_back(it->second);
      c.blocks.erase(it);
      if (tracks_ranges_) c.ranges.Remove(raw);
    } else {
      kept.push_back(raw);
    }
  }
  if (!leaving.empty()) {
    c.quarantine.swap(kept);
    c.TablesStale();
  }
  return leaving;
}

void GuardManager::ReleaseHeldOnStream(uint64_t stream,
                                       std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr || !hold_ordered_) return;
  absl::MutexLock lock(&mu_);
  PollPendingLocked(/*wait=*/false, findings);
  for (auto& [context, c] : contexts_) {
    // Behind the program's work on the stream, before it goes.
    FlushDeferredChecksLocked(context, c, stream);
    std::vector<Block> leaving = TakeHeldOrderedLocked(context, c, stream);
    if (!leaving.empty()) ReleaseOrderedLocked(context, leaving);
  }
}

uint64_t GuardManager::ReleaseHeldOrdered(uint64_t pool,
                                          std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr || !hold_ordered_) return 0;
  absl::MutexLock lock(&mu_);
  bool checking = false;
  for (auto& [context, c] : contexts_) {
    FlushDeferredChecksLocked(context, c, std::nullopt);
    checking = checking || c.reusable_bytes > 0;
  }
  // Blocks on their way to reuse are released once their check is in.
  PollPendingLocked(/*wait=*/checking, findings);
  uint64_t released = 0;
  std::vector<uint64_t> synchronize;
  for (auto& [context, c] : contexts_) {
    std::vector<Block> leaving =
        TakeHeldOrderedLocked(context, c, std::nullopt, pool);
    uint64_t bytes =
        leaving.empty() ? 0 : ReleaseOrderedLocked(context, leaving);
    bytes += ReleaseReusableLocked(context, c, pool);
    if (bytes > 0) synchronize.push_back(context);
    released += bytes;
  }
  // A trim gives back only memory whose free has run.
  for (uint64_t context : synchronize) {
    mu_.Unlock();
    ops_->SynchronizeContext(context);
    mu_.Lock();
  }
  PollPendingLocked(/*wait=*/false, findings);
  return released;
}

void GuardManager::PollReleases(std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr ||
      unanswered_releases_.load(std::memory_order_acquire) == 0) {
    return;
  }
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> queued;
  for (const auto& [context, c] : contexts_) {
    if (!c.releasing.empty()) queued.push_back(context);
  }
  for (uint64_t context : queued) {
    PollReleasesLocked(context, /*wait_oldest=*/false, findings);
  }
}

bool GuardManager::HoldsRaw(uint64_t raw_address) const {
  if (ops_ == nullptr) return false;
  absl::MutexLock lock(&mu_);
  for (const auto& [context, c] : contexts_) {
    auto it = c.blocks.find(raw_address);
    if (it != c.blocks.end() && it->second.held) return true;
    for (const ReleaseBatch& batch : c.releasing) {
      for (size_t i = batch.next; i < batch.blocks.size(); ++i) {
        if (batch.blocks[i].record.raw_address == raw_address) return true;
      }
    }
  }
  return false;
}

uint64_t GuardManager::ReleaseQuarantine(std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr) return 0;
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> queued;
  std::vector<uint64_t> ordered_released;
  uint64_t released = 0;
  for (auto& [context, c] : contexts_) {
    if (!c.quarantine.empty()) {
      const uint64_t ordered = EvictLocked(context, c, c.quarantine.size());
      if (ordered > 0) ordered_released.push_back(context);
      released += ordered;
    }
    if (!c.releasing.empty()) queued.push_back(context);
  }
  // Blocks held for reuse: their checks answered (waited for), then every
  // ready one back to CUDA.
  bool reuse_held = false;
  for (auto& [context, c] : contexts_) {
    FlushDeferredChecksLocked(context, c, std::nullopt);
    reuse_held = reuse_held || c.reusable_bytes > 0;
  }
  if (reuse_held) {
    PollPendingLocked(/*wait=*/true, findings);
    for (auto& [context, c] : contexts_) {
      const uint64_t bytes = ReleaseReusableLocked(context, c);
      if (bytes > 0 &&
          std::find(ordered_released.begin(), ordered_released.end(),
                    context) == ordered_released.end()) {
        ordered_released.push_back(context);
      }
      released += bytes;
    }
  }
  // Stream-ordered frees give their memory to allocations on other streams
  // only once they have run: the retry that follows may be on any stream.
  for (uint64_t context : ordered_released) {
    mu_.Unlock();
    ops_->SynchronizeContext(context);
    mu_.Lock();
  }
  // cudaMalloc blocks held for reuse joined the release queues.
  for (auto& [context, c] : contexts_) {
    if (!c.releasing.empty() &&
        std::find(queued.begin(), queued.end(), context) == queued.end()) {
      queued.push_back(context);
    }
  }
  for (uint64_t context : queued) {
    released += DrainReleasesLocked(context, /*release=*/true, findings);
  }
  return released;
}

void GuardManager::BeforeRealFree(const AllocationRecord& block,
                                  uint64_t stream,
                                  std::vector<GuardFinding>* findings) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return;
  auto it = cit->second.blocks.find(block.raw_address);
  if (it == cit->second.blocks.end()) return;
  // The caller frees the block with CUDA as soon as this returns, and only
  // then calls AfterRealFree: out of other threads' tables and fills from now
  // on (see Block::freeing). This free's own check below still covers it.
  it->second.freeing = true;
  cit->second.TablesStale();
  if (level_ == CheckLevel::kNone) return;
  // Canaries never written: nothing to check, and no check in flight can
  // hold it in its table.
  if (!HasArmedZones(it->second)) return;
  // Checks in flight may read this block; CUDA is about to free it. (The
  // lock is let go while they finish: look the block up again after.)
  PollPendingLocked(/*wait=*/true, findings);
  cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return;
  it = cit->second.blocks.find(block.raw_address);
  if (it == cit->second.blocks.end()) return;
  auto table = std::make_shared<Table>();
  AppendArmedZones(it->second, table.get());
  if (table->zones.empty()) return;
  if (StreamOrdered(block.api) || stream != 0) {
    // In the free's stream order, no host sync; answered at the next poll.
    uint64_t ticket =
        ops_->CheckAsync(block.context, ProgramStream(stream), table->zones);
    if (ticket == 0) {
      ++stats_.check_failures;
      return;
    }
    pending_.push_back(PendingCheck{ticket, block.context, table, 0, "free",
                                    std::vector<Block>{it->second},
                                    next_pending_sequence_++});
    return;
  }
  Block owned = it->second;
  const uint64_t since = cit->second.clean_sequence;
  mu_.Unlock();
  const int synced = ops_->SynchronizeContext(block.context);
  mu_.Lock();
  if (synced != 0) return;
  CheckTableLocked(block.context, table, "free", owned, since, 0, findings);
}

void GuardManager::NoteSynchronousPoolFree(const AllocationRecord& block) {
  if (ops_ == nullptr || !StreamOrdered(block.api) || !block.guarded()) return;
  const uint64_t pool = ops_->PoolOf(block.context, block.raw_address);
  if (pool == 0) return;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return;
  auto it = cit->second.blocks.find(block.raw_address);
  if (it != cit->second.blocks.end()) it->second.synchronous_free_pool = pool;
}

void GuardManager::AfterRealFree(const AllocationRecord& block, bool freed) {
  if (ops_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  auto cit = contexts_.find(block.context);
  if (cit == contexts_.end()) return;
  Context& c = cit->second;
  if (freed) {
    if (auto it = c.blocks.find(block.raw_address);
        it != c.blocks.end() && it->second.synchronous_free_pool != 0) {
      lingering_pool_bytes_[it->second.synchronous_free_pool] +=
          it->second.record.raw_bytes - it->second.record.bytes;
    }
    c.blocks.erase(block.raw_address);
    if (tracks_ranges_) c.ranges.Remove(block.raw_address);
    DropOrderedFillLocked(c, block.raw_address);
  } else if (auto it = c.blocks.find(block.raw_address); it != c.blocks.end()) {
    // CUDA kept the block: guarded again, with any fill it missed.
    Block& b = it->second;
    b.freeing = false;
    if (b.canaries_pending || b.freed_pending) MarkForFillLocked(c, b);
  }
  c.TablesStale();
}

// ---- IPC -------------------------------------------------------------------

uint64_t GuardManager::PrepareIpcExport(const AllocationRecord& block) {
  if (ops_ == nullptr || !block.guarded()) return block.address;
  // Mapped by another process, which may keep it past the program's free.
  NoteShared(block.context, block.raw_address);
  const uint64_t front = block.address - block.raw_address;
  if (front < kIpcHeaderBytes) return block.raw_address;
  {
    absl::MutexLock lock(&mu_);
    auto cit = contexts_.find(block.context);
    if (cit == contexts_.end()) return block.raw_address;
    auto it = cit->second.blocks.find(block.raw_address);
    if (it == cit->second.blocks.end()) return block.raw_address;
    // The header is not canary: out of the front zone's checks before it is
    // written (a check in between only checks fewer bytes).
    it->second.front_begin =
        std::max(it->second.front_begin, block.raw_address + kIpcHeaderBytes);
    cit->second.TablesStale();
  }
  // A synchronous copy: without the lock.
  uint64_t header[kIpcHeaderBytes / 8] = {kIpcMagic, front, block.bytes};
  ops_->Write(block.context, block.raw_address, header, sizeof(header));
  return block.raw_address;
}

uint64_t GuardManager::IpcUserAddress(uint64_t context, uint64_t raw_base,
                                      uint64_t* user_bytes) {
  if (user_bytes != nullptr) *user_bytes = 0;
  if (ops_ == nullptr) return raw_base;
  uint64_t header[3] = {};
  if (!ops_->Read(context, raw_base, header, sizeof(header))) return raw_base;
  if (header[0] != kIpcMagic || header[1] % 256 != 0 ||
      header[1] > (uint64_t{1} << 20)) {
    return raw_base;
  }
  if (user_bytes != nullptr) *user_bytes = header[2];
  return raw_base + header[1];
}

std::vector<GuardManager::PoolCharge> GuardManager::StreamOrderedCharges()
    const {
  std::vector<PoolCharge> out;
  if (ops_ == nullptr) return out;
  absl::MutexLock lock(&mu_);
  for (const auto& [context, c] : contexts_) {
    for (const auto& [raw, b] : c.blocks) {
      if (!StreamOrdered(b.record.api)) continue;
      out.push_back({raw, b.held ? b.record.raw_bytes
                                 : b.record.raw_bytes - b.record.bytes});
    }
  }
  for (const auto& [pool, bytes] : lingering_pool_bytes_) {
    out.push_back({0, bytes, pool});
  }
  return out;
}

uint64_t GuardManager::HeldBytes(int device) const {
  if (ops_ == nullptr) return 0;
  absl::MutexLock lock(&mu_);
  uint64_t held = 0;
  for (const auto& [context, c] : contexts_) {
    if (c.device == device) held += c.held_footprint;
  }
  return held;
}

GuardStats GuardManager::Stats() const {
  absl::MutexLock lock(&mu_);
  GuardStats s = stats_;
  s.reuse_misses = reuse_misses_.load(std::memory_order_relaxed);
  s.unguarded_oom = unguarded_oom_.load();
  s.unguarded_refused = unguarded_refused_.load();
  s.unguarded_shareable = unguarded_shareable_.load();
  s.unguarded_capture = unguarded_capture_.load();
  s.held_bytes = 0;
  for (const auto& [context, c] : contexts_) {
    s.held_bytes += c.held_bytes + c.releasing_bytes + c.reusable_bytes;
  }
  return s;
}

void GuardManager::NoteLaunchDeferred(uint64_t context, uint64_t stream,
                                      uint32_t kernel,
                                      const std::vector<ArgWord>* arg_words) {
  NoteLaunch(context, kernel);
  if (!MayCheckKernel(kernel)) return;
  if (arg_words != nullptr && arg_words->empty()) return;  // reaches nothing
  std::optional<std::vector<ArgWord>> words;
  if (arg_words != nullptr) words = *arg_words;
  absl::MutexLock lock(&owed_mu_);
  owed_.push_back(OwedCheck{context, stream, kernel, std::move(words)});
  owed_count_.fetch_add(1, std::memory_order_release);
}

void GuardManager::SettleOwedChecks(std::vector<GuardFinding>* findings) {
  if (owed_count_.load(std::memory_order_acquire) == 0) return;
  std::vector<OwedCheck> owed;
  {
    absl::MutexLock lock(&owed_mu_);
    owed.swap(owed_);
    owed_count_.store(0, std::memory_order_release);
  }
  for (const OwedCheck& o : owed) {
    CheckAfterLaunch(o.context, o.stream, o.kernel,
                     o.arg_words ? &*o.arg_words : nullptr, findings);
  }
}

}  // namespace gmt
