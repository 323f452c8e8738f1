#include "lib/registry.h"

namespace gmt {

Registry::Registry(size_t freed_capacity)
    : freed_per_shard_((freed_capacity + kShards - 1) / kShards) {}

size_t Registry::ShardOf(uint64_t address) {
  // CUDA pointers are 256-byte aligned and often 2 MiB apart: mix the bits
  // (a Fibonacci hash) before taking the top ones.
  return static_cast<size_t>((address * 0x9E3779B97F4A7C15ull) >> 58);
}

std::optional<AllocationRecord> Registry::Insert(const AllocationRecord& record) {
  Shard& shard = shards_[ShardOf(record.address)];
  absl::MutexLock lock(&shard.mu);
  auto [it, inserted] = shard.live.try_emplace(record.address, record);
  if (inserted) return std::nullopt;
  AllocationRecord previous = it->second;
  it->second = record;
  return previous;
}

std::optional<AllocationRecord> Registry::Erase(uint64_t address) {
  Shard& shard = shards_[ShardOf(address)];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.live.find(address);
  if (it == shard.live.end()) return std::nullopt;
  AllocationRecord record = it->second;
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

std::optional<AllocationRecord> Registry::FindContaining(uint64_t address) const {
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    for (const auto& [start, record] : shard.live) {
      if (address >= start && address - start < record.bytes) return record;
    }
  }
  return std::nullopt;
}

Registry::TakeResult Registry::Take(uint64_t address, uint32_t kind_mask,
                                   const FreedRecord& freed_template) {
  TakeResult result;
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
  shard.live.erase(it);
  FreedRecord freed = freed_template;
  freed.allocation = result.record;
  RememberLocked(shard, freed);
  return result;
}

void Registry::RememberFreed(const FreedRecord& freed) {
  const uint64_t address = freed.allocation.address;
  Shard& shard = shards_[ShardOf(address)];
  absl::MutexLock lock(&shard.mu);
  RememberLocked(shard, freed);
}

void Registry::RememberLocked(Shard& shard, const FreedRecord& freed) {
  if (freed_per_shard_ == 0) return;
  const uint64_t address = freed.allocation.address;
  const uint64_t sequence = shard.next_sequence++;
  shard.freed[address] = Shard::Freed{freed, sequence};
  if (shard.fifo.size() < freed_per_shard_) {
    shard.fifo.emplace_back(address, sequence);
    return;
  }
  // Full: evict the oldest slot, unless that address was freed again since
  // (then the newer free stays).
  auto& slot = shard.fifo[shard.fifo_head];
  auto it = shard.freed.find(slot.first);
  if (it != shard.freed.end() && it->second.sequence == slot.second) {
    shard.freed.erase(it);
  }
  slot = {address, sequence};
  shard.fifo_head = (shard.fifo_head + 1) % shard.fifo.size();
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

size_t Registry::live_count() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    n += shard.live.size();
  }
  return n;
}

}  // namespace gmt
