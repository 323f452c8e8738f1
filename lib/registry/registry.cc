#include "lib/registry/registry.h"

namespace gmt {

Registry::Registry(size_t freed_capacity) : freed_capacity_(freed_capacity) {}

size_t Registry::ShardOf(uint64_t address) {
  // CUDA pointers are 256-byte aligned and often 2 MiB apart: mix the bits
  // (a Fibonacci hash) before taking the top ones.
  return static_cast<size_t>((address * 0x9E3779B97F4A7C15ull) >> 58);
}

bool Registry::Indexed(const AllocationRecord& record) {
  return record.kind == MemoryKind::kDevice ||
         record.kind == MemoryKind::kManaged ||
         record.kind == MemoryKind::kPinnedHost ||
         record.kind == MemoryKind::kRegisteredHost;
}

void Registry::IndexInsert(const AllocationRecord& record) {
  if (!Indexed(record)) return;
  absl::MutexLock lock(&range_mu_);
  ranges_[record.extent_begin()] = Extent{record.extent_end(), record.address};
}

void Registry::IndexErase(const AllocationRecord& record) {
  if (!Indexed(record)) return;
  absl::MutexLock lock(&range_mu_);
  auto it = ranges_.find(record.extent_begin());
  if (it != ranges_.end() && it->second.address == record.address) {
    ranges_.erase(it);
  }
}

std::optional<AllocationRecord> Registry::Insert(
    const AllocationRecord& record) {
  Shard& shard = shards_[ShardOf(record.address)];
  absl::MutexLock lock(&shard.mu);
  auto [it, inserted] = shard.live.try_emplace(record.address, record);
  if (inserted) {
    IndexInsert(record);
    return std::nullopt;
  }
  AllocationRecord previous = it->second;
  IndexErase(previous);
  it->second = record;
  IndexInsert(record);
  return previous;
}

std::optional<AllocationRecord> Registry::Erase(uint64_t address) {
  Shard& shard = shards_[ShardOf(address)];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.live.find(address);
  if (it == shard.live.end()) return std::nullopt;
  AllocationRecord record = it->second;
  IndexErase(record);
  shard.live.erase(it);
  return record;
}

std::optional<AllocationRecord> Registry::Find(uint64_t address) const {
  const Shard& shard = shards_[ShardOf(address)];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.live.find(address);
  if (it == shard.live.end()) return std::nullopt;
  return it->second;
}

std::optional<AllocationRecord> Registry::FindContaining(
    uint64_t address) const {
  uint64_t key = 0;
  {
    absl::MutexLock lock(&range_mu_);
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return std::nullopt;
    --it;
    if (address >= it->second.end) return std::nullopt;
    key = it->second.address;
  }
  // The block may have gone in between: then Find answers nothing.
  std::optional<AllocationRecord> record = Find(key);
  if (record &&
      (address < record->extent_begin() || address >= record->extent_end())) {
    return std::nullopt;
  }
  return record;
}

Registry::TakeResult Registry::Take(uint64_t address, uint32_t kind_mask,
                                    const FreedRecord& freed_template) {
  TakeResult result;
  uint64_t sequence = 0;
  {
    Shard& shard = shards_[ShardOf(address)];
    absl::MutexLock lock(&shard.mu);
    auto it = shard.live.find(address);
    if (it == shard.live.end()) return result;
    result.record = it->second;
    if ((KindBit(it->second.kind) & kind_mask) == 0) {
      result.outcome = TakeResult::Outcome::kWrongKind;
      return result;
    }
    result.outcome = TakeResult::Outcome::kTaken;
    IndexErase(it->second);
    shard.live.erase(it);
    if (freed_capacity_ == 0) return result;
    FreedRecord freed = freed_template;
    freed.allocation = result.record;
    sequence = RememberLocked(shard, freed);
  }
  PushFifo(address, sequence);
  return result;
}

void Registry::RememberFreed(const FreedRecord& freed) {
  if (freed_capacity_ == 0) return;
  const uint64_t address = freed.allocation.address;
  uint64_t sequence = 0;
  {
    Shard& shard = shards_[ShardOf(address)];
    absl::MutexLock lock(&shard.mu);
    sequence = RememberLocked(shard, freed);
  }
  PushFifo(address, sequence);
}

uint64_t Registry::RememberLocked(Shard& shard, const FreedRecord& freed) {
  const uint64_t sequence =
      next_sequence_.fetch_add(1, std::memory_order_relaxed);
  shard.freed[freed.allocation.address] = Shard::Freed{freed, sequence};
  return sequence;
}

void Registry::PushFifo(uint64_t address, uint64_t sequence) {
  std::pair<uint64_t, uint64_t> evicted;
  {
    absl::MutexLock lock(&fifo_mu_);
    if (fifo_.size() < freed_capacity_) {
      fifo_.emplace_back(address, sequence);
      return;
    }
    evicted = fifo_[fifo_head_];
    fifo_[fifo_head_] = {address, sequence};
    fifo_head_ = (fifo_head_ + 1) % fifo_.size();
  }
  Shard& shard = shards_[ShardOf(evicted.first)];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.freed.find(evicted.first);
  if (it != shard.freed.end() && it->second.sequence == evicted.second) {
    shard.freed.erase(it);
  }
}

std::optional<FreedRecord> Registry::FindFreed(uint64_t address) const {
  const Shard& shard = shards_[ShardOf(address)];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.freed.find(address);
  if (it == shard.freed.end()) return std::nullopt;
  return it->second.record;
}

std::vector<AllocationRecord> Registry::EraseIf(
    const std::function<bool(const AllocationRecord&)>& pred) {
  std::vector<AllocationRecord> removed;
  for (Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    for (auto it = shard.live.begin(); it != shard.live.end();) {
      if (pred(it->second)) {
        IndexErase(it->second);
        removed.push_back(it->second);
        shard.live.erase(it++);
      } else {
        ++it;
      }
    }
  }
  return removed;
}

std::vector<AllocationRecord> Registry::Live() const {
  std::vector<AllocationRecord> out;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    for (const auto& [address, record] : shard.live) out.push_back(record);
  }
  return out;
}

int Registry::TryVisitLive(
    absl::FunctionRef<void(const AllocationRecord&)> visit) const {
  int skipped = 0;
  for (const Shard& shard : shards_) {
    if (!shard.mu.TryLock()) {
      ++skipped;
      continue;
    }
    for (const auto& [address, record] : shard.live) visit(record);
    shard.mu.Unlock();
  }
  return skipped;
}

size_t Registry::live_count() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    n += shard.live.size();
  }
  return n;
}

}  // namespace gmt
