// Kernel names, interned: a launch record keeps a 32-bit id, not a string.
//
// Thread safety: every member is thread-safe.
#ifndef GMT_LIB_STACKS_KERNEL_NAMES_H_
#define GMT_LIB_STACKS_KERNEL_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gmt {

class KernelNames {
 public:
  // The id of `name` (the same id for the same name); ids start at 1.
  uint32_t Intern(absl::string_view name);
  // The name of `id`; "?" for an unknown id.
  std::string Name(uint32_t id) const;
  // The name of `id` copied into `out` (NUL-terminated, cut to `size`), for a
  // signal handler: no allocation, and false rather than wait when the table
  // is busy (its lock may be held by the thread that crashed).
  bool TryCopyName(uint32_t id, char* out, size_t size) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, uint32_t> ids_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmt

#endif  // GMT_LIB_STACKS_KERNEL_NAMES_H_
