#include "lib/torch/allocator_conf.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "lib/core/log.h"

namespace gmt {
namespace {

constexpr absl::string_view kAsyncBackend = "cudaMallocAsync";

// The backend a configuration names ("" when none). PyTorch's syntax:
// comma-separated key:value pairs, spaces around either ignored.
std::string BackendOf(absl::string_view conf) {
  std::string backend;
  for (absl::string_view item : absl::StrSplit(conf, ',')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(kv.first) == "backend") {
      backend = std::string(absl::StripAsciiWhitespace(kv.second));
    }
  }
  return backend;
}

}  // namespace

TorchModePlan PlanTorchMode(const char* cuda_conf, const char* generic_conf) {
  TorchModePlan plan;
  struct Var {
    const char* name;
    const char* value;
  };
  const Var vars[] = {{kTorchCudaConfVar, cuda_conf},
                      {kTorchConfVar, generic_conf}};
  bool any_set = false;
  for (const Var& v : vars) {
    if (v.value == nullptr) continue;
    const absl::string_view conf = absl::StripAsciiWhitespace(v.value);
    if (conf.empty()) continue;
    any_set = true;
    const std::string backend = BackendOf(conf);
    if (backend == kAsyncBackend) continue;
    if (!backend.empty()) {
      plan.set.clear();
      plan.refusal = absl::StrCat(
          "torch mode: ", v.name, " asks for backend:", backend,
          ", so PyTorch keeps cutting tensors out of shared segments and they "
          "are not guarded one by one; leave the backend out (or set "
          "backend:cudaMallocAsync) for tensor mode");
      return plan;
    }
    plan.set.emplace_back(v.name,
                          absl::StrCat(conf, ",backend:", kAsyncBackend));
  }
  if (!any_set) {
    plan.set.emplace_back(kTorchCudaConfVar,
                          absl::StrCat("backend:", kAsyncBackend));
  }
  return plan;
}

TorchModePlan ApplyTorchModeAtLoad() {
  TorchModePlan plan =
      PlanTorchMode(std::getenv(kTorchCudaConfVar), std::getenv(kTorchConfVar));
  if (!plan.refusal.empty()) {
    LogError("%s", plan.refusal.c_str());
    return plan;
  }
  for (const auto& [name, value] : plan.set) {
    setenv(name.c_str(), value.c_str(), /*overwrite=*/1);
    LogNote(1, "torch mode: %s=%s", name.c_str(), value.c_str());
  }
  return plan;
}

}  // namespace gmt
