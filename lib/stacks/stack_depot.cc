#include "lib/stacks/stack_depot.h"

#include <cstring>

#include "absl/hash/hash.h"

namespace gmt {
namespace {

uint64_t HashFrames(const uintptr_t* frames, int count) {
  return absl::HashOf(absl::MakeConstSpan(frames, static_cast<size_t>(count)));
}

}  // namespace

StackDepot::StackDepot() = default;

uintptr_t* StackDepot::AllocateFrames(int count) {
  // Frames live in large leaked blocks: one allocation per 64 Ki frames instead
  // of one per stack.
  constexpr size_t kBlockFrames = size_t{64} * 1024;
  absl::MutexLock lock(&arena_mu_);
  if (arena_left_ < static_cast<size_t>(count)) {
    size_t frames = std::max(kBlockFrames, static_cast<size_t>(count));
    arena_ = new uintptr_t[frames];
    arena_left_ = frames;
  }
  uintptr_t* out = arena_;
  arena_ += count;
  arena_left_ -= static_cast<size_t>(count);
  return out;
}

StackId StackDepot::FindRecent(uint64_t hash, const uintptr_t* frames,
                               int count) const {
  const uint64_t slot =
      recent_[hash & ((1u << kRecentBits) - 1)].load(std::memory_order_acquire);
  if ((slot >> 32) != (hash >> 32)) return kNoStack;
  const auto id = static_cast<StackId>(slot);
  const Entry* e = Find(id);
  if (e != nullptr && e->count == static_cast<uint32_t>(count) &&
      std::memcmp(e->frames, frames, sizeof(uintptr_t) * count) == 0) {
    return id;
  }
  return kNoStack;
}

StackId StackDepot::Put(const uintptr_t* frames, int count) {
  if (count <= 0) return kNoStack;
  const uint64_t hash = HashFrames(frames, count);
  if (const StackId id = FindRecent(hash, frames, count); id != kNoStack) {
    return id;
  }
  std::atomic<uint64_t>& recent = recent_[hash & ((1u << kRecentBits) - 1)];
  const uint64_t tag = hash & ~uint64_t{0xffffffff};
  const uint32_t shard_index = static_cast<uint32_t>(hash >> (64 - kShardBits));
  Shard& shard = shards_[shard_index];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.by_hash.find(hash);
  if (it != shard.by_hash.end()) {
    const Entry* e = Find(it->second);
    if (e != nullptr && e->count == static_cast<uint32_t>(count) &&
        std::memcmp(e->frames, frames, sizeof(uintptr_t) * count) == 0) {
      recent.store(tag | it->second, std::memory_order_release);
      return it->second;
    }
  }
  const uint32_t index = shard.next_index;
  const uint32_t chunk = index / kChunkSize;
  if (chunk >= kMaxChunks) return kNoStack;  // 2^27 stacks in one shard
  Entry* entries = shard.chunks[chunk].load(std::memory_order_acquire);
  if (entries == nullptr) {
    entries = new Entry[kChunkSize]();
    shard.chunks[chunk].store(entries, std::memory_order_release);
  }
  uintptr_t* copy = AllocateFrames(count);
  std::memcpy(copy, frames, sizeof(uintptr_t) * count);
  entries[index % kChunkSize] = Entry{copy, static_cast<uint32_t>(count)};
  shard.next_index = index + 1;
  const StackId id = (shard_index << kIndexBits) | index;
  shard.by_hash.try_emplace(hash, id);
  size_.fetch_add(1, std::memory_order_relaxed);
  recent.store(tag | id, std::memory_order_release);
  return id;
}

const StackDepot::Entry* StackDepot::Find(StackId id) const {
  if (id == kNoStack) return nullptr;
  const uint32_t shard_index = id >> kIndexBits;
  const uint32_t index = id & ((1u << kIndexBits) - 1);
  const uint32_t chunk = index / kChunkSize;
  if (index == 0 || chunk >= kMaxChunks) return nullptr;
  const Entry* entries =
      shards_[shard_index].chunks[chunk].load(std::memory_order_acquire);
  if (entries == nullptr) return nullptr;
  const Entry& e = entries[index % kChunkSize];
  return e.frames == nullptr ? nullptr : &e;
}

StackView StackDepot::Get(StackId id) const {
  const Entry* e = Find(id);
  if (e == nullptr) return {};
  return StackView(e->frames, e->count);
}

size_t StackDepot::size() const {
  return size_.load(std::memory_order_relaxed);
}

}  // namespace gmt
