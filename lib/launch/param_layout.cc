#include "lib/launch/param_layout.h"

#include <atomic>

#include "lib/core/clock.h"

namespace gmt {
namespace {
std::atomic<ParamLayoutSource*> g_source{nullptr};
std::atomic<uint64_t> g_next_cache_id{1};
}  // namespace

ParamLayoutCache::ParamLayoutCache()
    : id_(g_next_cache_id.fetch_add(1, std::memory_order_relaxed)) {}

void SetParamLayoutSource(ParamLayoutSource* source) {
  g_source.store(source, std::memory_order_release);
}

ParamLayoutSource* GetParamLayoutSource() {
  return g_source.load(std::memory_order_acquire);
}

const ParamLayout* ParamLayoutCache::Get(ParamLayoutSource* source,
                                         KernelHandleKind kind,
                                         const void* function, bool* first) {
  if (first != nullptr) *first = false;
  if (function == nullptr) return nullptr;
  const Key key{function, kind};
  // The answer this thread got last: a loop launching one kernel asks for
  // the same layout at every launch. Answers are never removed or moved.
  struct Last {
    uint64_t cache = 0;
    Key key{nullptr, KernelHandleKind::kDriver};
    const ParamLayout* layout = nullptr;
  };
  thread_local Last t_last;
  if (t_last.cache == id_ && t_last.key == key) return t_last.layout;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = layouts_.find(key);
    if (it != layouts_.end()) {
      t_last = Last{id_, key, it->second.get()};
      return it->second.get();
    }
    // "Not now" a moment ago: not asked again yet (the source's question
    // may be dear, as resolving a driver not loaded yet is).
    if (auto nn = not_now_until_.find(key);
        nn != not_now_until_.end() && NowNs() < nn->second) {
      return nullptr;
    }
  }
  std::unique_ptr<ParamLayout> layout;
  if (source != nullptr) {
    auto asked = std::make_unique<ParamLayout>();
    switch (source->Query(kind, function, asked.get())) {
      case ParamLayoutSource::Answer::kKnown:
        layout = std::move(asked);
        break;
      case ParamLayoutSource::Answer::kUnknown:
        break;
      case ParamLayoutSource::Answer::kNotNow: {
        absl::MutexLock lock(&mu_);
        not_now_until_[key] = NowNs() + kNotNowRetryNs;
        return nullptr;
      }
    }
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = layouts_.try_emplace(key, std::move(layout));
  if (first != nullptr) *first = inserted;
  return it->second.get();
}

}  // namespace gmt
