#include "lib/launch/param_layout.h"

#include <atomic>

namespace gmt {
namespace {
std::atomic<ParamLayoutSource*> g_source{nullptr};
}  // namespace

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
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = layouts_.find(key);
    if (it != layouts_.end()) return it->second.get();
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
      case ParamLayoutSource::Answer::kNotNow:
        return nullptr;
    }
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = layouts_.try_emplace(key, std::move(layout));
  if (first != nullptr) *first = inserted;
  return it->second.get();
}

}  // namespace gmt
