// InterceptScope: the reentrancy guard every shim opens first.
//
// Only the outermost intercepted call on a thread records anything
// (lib/core/intercept_depth.h). That gives "counted once" for free:
// cudaMalloc's own call into cuMemAlloc_v2 runs at depth 2 and just forwards;
// so do calls made by the tool itself and by code running under a shim
// (backtrace, dlopen, the loader).
#ifndef GMT_INTERPOSE_INTERCEPT_SCOPE_H_
#define GMT_INTERPOSE_INTERCEPT_SCOPE_H_

#include "lib/core/intercept_depth.h"
#include "lib/engine/engine.h"

namespace gmt {

class InterceptScope {
 public:
  InterceptScope() = default;
  InterceptScope(const InterceptScope&) = delete;
  InterceptScope& operator=(const InterceptScope&) = delete;

  // True when this call should be recorded: outermost, and tracking is on.
  // Creates the engine on the first such call.
  bool Recording() const {
    return level_.outermost() && Engine::Get().tracking();
  }

 private:
  InterceptLevel level_;
};

}  // namespace gmt

#endif  // GMT_INTERPOSE_INTERCEPT_SCOPE_H_
