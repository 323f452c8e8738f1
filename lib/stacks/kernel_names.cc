#include "lib/stacks/kernel_names.h"

namespace gmt {

uint32_t KernelNames::Intern(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = ids_.try_emplace(
      std::string(name), static_cast<uint32_t>(names_.size() + 1));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

std::string KernelNames::Name(uint32_t id) const {
  absl::MutexLock lock(&mu_);
  if (id == 0 || id > names_.size()) return "?";
  return names_[id - 1];
}

bool KernelNames::TryCopyName(uint32_t id, char* out, size_t size) const {
  if (size == 0 || !mu_.TryLock()) return false;
  const char* name =
      id == 0 || id > names_.size() ? "?" : names_[id - 1].c_str();
  size_t i = 0;
  for (; name[i] != '\0' && i + 1 < size; ++i) out[i] = name[i];
  out[i] = '\0';
  mu_.Unlock();
  return true;
}

}  // namespace gmt
