// The intercept depth: how many intercepted or tool-made CUDA calls are open
// on the calling thread. Only a call the program makes at depth 0 is recorded
// (interpose/intercept_scope.h); cudart's own call into the driver, the tool's
// own CUDA work (lib/platform/tool_driver.h) and code running under a shim
// (backtrace, dlopen, the loader) all run one level deeper and just forward.
#ifndef GMT_LIB_CORE_INTERCEPT_DEPTH_H_
#define GMT_LIB_CORE_INTERCEPT_DEPTH_H_

namespace gmt {

// Initial-exec TLS: no allocation or lock on first access, which matters in a
// preloaded library called from anywhere. constinit: its callers need no TLS
// wrapper (GCC's check of whether the variable has a dynamic initializer,
// whose flags its -fsanitize=null check then misread as a null address: a
// false report in every sanitized build of an inline check).
extern constinit thread_local int t_intercept_depth
    __attribute__((tls_model("initial-exec")));

// Opens one level for its lifetime.
class InterceptLevel {
 public:
  InterceptLevel() : outermost_(t_intercept_depth++ == 0) {}
  ~InterceptLevel() { --t_intercept_depth; }
  InterceptLevel(const InterceptLevel&) = delete;
  InterceptLevel& operator=(const InterceptLevel&) = delete;

  // Whether no other level was open when this one was.
  bool outermost() const { return outermost_; }

 private:
  const bool outermost_;
};

}  // namespace gmt

#endif  // GMT_LIB_CORE_INTERCEPT_DEPTH_H_
