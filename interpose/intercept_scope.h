// InterceptScope: the reentrancy guard every shim opens first.
//
// Only the outermost intercepted call on a thread records anything. That gives
// "counted once" for free: cudaMalloc's own call into cuMemAlloc_v2 runs at
// depth 2 and just forwards; so do calls made by the tool itself and by code
// running under a shim (backtrace, dlopen, the loader).
#ifndef GMT_INTERPOSE_INTERCEPT_SCOPE_H_
#define GMT_INTERPOSE_INTERCEPT_SCOPE_H_

#include "lib/engine.h"

namespace gmt {

// Initial-exec TLS: no allocation or lock on first access, which matters in a
// preloaded library called from anywhere.
extern thread_local int t_intercept_depth
    __attribute__((tls_model("initial-exec")));

class InterceptScope {
 public:
  InterceptScope() : outermost_(t_intercept_depth++ == 0) {}
  ~InterceptScope() { --t_intercept_depth; }
  InterceptScope(const InterceptScope&) = delete;
  InterceptScope& operator=(const InterceptScope&) = delete;

  // True when this call should be recorded: outermost, and tracking is on.
  // Creates the engine on the first such call.
  bool Recording() const { return outermost_ && Engine::Get().tracking(); }

 private:
  const bool outermost_;
};

}  // namespace gmt

#endif  // GMT_INTERPOSE_INTERCEPT_SCOPE_H_
