// The growth callback the program registered with gmt_set_growth_callback()
// (include/gmt/gmt.h; stored by lib/engine/public_growth_api.cc), called by the
// engine when a call site is flagged (lib/engine/engine_leaks.cc).
#ifndef GMT_LIB_ENGINE_GROWTH_CALLBACK_H_
#define GMT_LIB_ENGINE_GROWTH_CALLBACK_H_

#include <cstdint>

namespace gmt {

// Calls the registered callback, if any, with these figures. `site` is the
// flagged call site's innermost frame as text. Thread-safe.
void NotifyGrowthCallback(const char* site, uint64_t stack_id,
                          uint64_t first_bytes, uint64_t last_bytes,
                          uint32_t rises, double seconds);

}  // namespace gmt

#endif  // GMT_LIB_ENGINE_GROWTH_CALLBACK_H_
