#include "lib/core/tool_time.h"

#include <atomic>

#include "absl/strings/str_format.h"

namespace gmt {
namespace {

std::atomic<int64_t> g_ns[static_cast<int>(ToolPhase::kCount)];

double Ms(ToolPhase phase) {
  return static_cast<double>(ToolTimeNs(phase)) / 1e6;
}

}  // namespace

void AddToolTime(ToolPhase phase, int64_t ns) {
  if (ns > 0) {
    g_ns[static_cast<int>(phase)].fetch_add(ns, std::memory_order_relaxed);
  }
}

int64_t ToolTimeNs(ToolPhase phase) {
  return g_ns[static_cast<int>(phase)].load(std::memory_order_relaxed);
}

std::string ToolTimeText() {
  const double engine = Ms(ToolPhase::kEngine);
  const double cupti = Ms(ToolPhase::kCupti);
  const double guard = Ms(ToolPhase::kGuardSetup);
  const double scan = Ms(ToolPhase::kExitScan);
  const double health = Ms(ToolPhase::kExitHealth);
  const double report = Ms(ToolPhase::kExitReport);
  // The report's time includes its wait for NVML.
  return absl::StrFormat(
      "start-up %.1f ms (engine %.1f, CUPTI %.1f, guard kernels %.1f), exit "
      "%.1f ms (reachability %.1f, report %.1f, of which waiting for NVML "
      "%.1f)",
      engine + cupti + guard, engine, cupti, guard, scan + report, scan, report,
      health);
}

}  // namespace gmt
