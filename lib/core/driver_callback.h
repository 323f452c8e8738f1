// Whether the calling thread is inside a CUPTI callback, i.e. inside a driver
// call the program made. Set by the CUPTI subscriber around its
// handlers; read by the engine, which then neither flushes CUPTI's activity
// buffers nor waits for the GPU there.
//
//   DriverCallbackScope scope;        // in the subscriber's callback
//   if (!InDriverCallback()) Flush();  // in the engine
#ifndef GMT_LIB_CORE_DRIVER_CALLBACK_H_
#define GMT_LIB_CORE_DRIVER_CALLBACK_H_

namespace gmt {

inline thread_local int t_driver_callback_depth = 0;

inline bool InDriverCallback() { return t_driver_callback_depth != 0; }

class DriverCallbackScope {
 public:
  DriverCallbackScope() { ++t_driver_callback_depth; }
  ~DriverCallbackScope() { --t_driver_callback_depth; }
  DriverCallbackScope(const DriverCallbackScope&) = delete;
  DriverCallbackScope& operator=(const DriverCallbackScope&) = delete;
};

}  // namespace gmt

#endif  // GMT_LIB_CORE_DRIVER_CALLBACK_H_
