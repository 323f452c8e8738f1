// The parameter layout of a kernel (offset and size of each parameter in the
// buffer the kernel receives), asked once per function handle from a
// ParamLayoutSource (the real driver's cuFuncGetParamInfo /
// cuKernelGetParamInfo, lib/platform/driver_param_layouts.h) and cached.
//
// Without a layout the `kernelParams` array of a launch cannot be read (it has
// no length); callers then treat the launch's reach as unknown.
//
// Thread safety: ParamLayoutCache::Get is thread-safe; the source is asked
// outside the cache's lock (racing first launches of one handle may both ask).
#ifndef GMT_LIB_LAUNCH_PARAM_LAYOUT_H_
#define GMT_LIB_LAUNCH_PARAM_LAYOUT_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "lib/launch/launch_args.h"

namespace gmt {

struct ParamSlot {
  uint32_t offset = 0;  // in the kernel's parameter buffer
  uint32_t size = 0;
};

struct ParamLayout {
  std::vector<ParamSlot> params;
};

class ParamLayoutSource {
 public:
  virtual ~ParamLayoutSource() = default;
  enum class Answer : uint8_t {
    kKnown,    // `layout` is filled (a kernel without parameters: empty)
    kUnknown,  // it cannot be known: a driver older than CUDA 12.4, a
               // handle the driver does not know
    kNotNow,   // not answered now (asking would disturb the program's state);
               // ask again at a later launch
  };
  virtual Answer Query(KernelHandleKind kind, const void* function,
                       ParamLayout* layout) = 0;
};

// The source the engine uses; installed once by the front end (interpose/).
// Null: no layouts (every launch's reach is unknown).
void SetParamLayoutSource(ParamLayoutSource* source);
ParamLayoutSource* GetParamLayoutSource();

class ParamLayoutCache {
 public:
  ParamLayoutCache();
  ParamLayoutCache(const ParamLayoutCache&) = delete;
  ParamLayoutCache& operator=(const ParamLayoutCache&) = delete;

  // The layout of `function`, or null when `source` (may be null) cannot
  // tell; either answer is remembered for the handle (kNotNow is not, but
  // the handle is not asked again for kNotNowRetryNs). `first`
  // (may be null) is set when this call asked the source, so a caller can say
  // once what an unknown layout means. Entries are never removed: a handle CUDA
  // reuses after its module is unloaded keeps the first kernel's layout.
  const ParamLayout* Get(ParamLayoutSource* source, KernelHandleKind kind,
                         const void* function, bool* first = nullptr);

 private:
  using Key = std::pair<const void*, KernelHandleKind>;
  // Launches ask for a layout at every launch (the report at a sticky error
  // shows each launch's arguments): a source that answered "not now" is
  // asked again after this long, not at the next launch.
  static constexpr int64_t kNotNowRetryNs = 50'000'000;
  // Names this cache in each thread's last answer: unique for the process,
  // where an address is not (a cache made where a destroyed one was would
  // have handed out the old one's freed layouts).
  const uint64_t id_;
  mutable absl::Mutex mu_;
  // Null value: asked, unknown. Boxed so answers stay put as the map grows.
  absl::flat_hash_map<Key, std::unique_ptr<const ParamLayout>> layouts_
      ABSL_GUARDED_BY(mu_);
  // When a handle that got "not now" may be asked again (NowNs).
  absl::flat_hash_map<Key, int64_t> not_now_until_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmt

#endif  // GMT_LIB_LAUNCH_PARAM_LAYOUT_H_
