// `gpumemtrace explain-dump FILE`: reads a CUDA GPU core dump and prints what
// it says about the fault (lib/gpu_fault/): per faulting warp the exception,
// kernel+offset, source line, faulting block and threads, and the address
// the faulting instruction used when nvdisasm can decode it.
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/gpu_fault/fault_text.h"
#include "lib/gpu_fault/gpu_core_dump.h"

namespace gmt::cli {

int ExplainDumpMain(int argc, char** argv) {
  constexpr const char* kCommand = "explain-dump";
  std::string path;
  gpu_fault::ExplainOptions explain;
  gpu_fault::FaultTextOptions text;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    // The value of a flag that takes one, or nullptr when it is missing.
    auto value = [&]() -> const char* {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(ExplainDumpUsage().c_str(), stdout);
      return 0;
    } else if (arg == "--nvdisasm") {
      const char* v = value();
      if (v == nullptr) return UsageError(kCommand, "--nvdisasm needs a path");
      explain.nvdisasm = v;
    } else if (arg == "--no-disassemble") {
      explain.disassemble = false;
    } else if (arg == "--max-warps") {
      const char* v = value();
      int n = 0;
      if (v == nullptr || !absl::SimpleAtoi(v, &n) || n < 0) {
        return UsageError(kCommand, "--max-warps needs a count (0 for all)");
      }
      text.max_warps = n == 0 ? 1 << 30 : n;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError(kCommand, absl::StrCat("unknown flag '", arg, "'"));
    } else if (path.empty()) {
      path = arg;
    } else {
      return UsageError(kCommand, "one dump at a time");
    }
  }
  if (path.empty()) return UsageError(kCommand, "no dump file given");
  absl::StatusOr<gpu_fault::GpuCoreDump> dump =
      gpu_fault::ReadGpuCoreDumpFile(path);
  if (!dump.ok()) {
    std::fprintf(stderr, "gpumemtrace explain-dump: error: %s\n",
                 std::string(dump.status().message()).c_str());
    return 1;
  }
  const std::string report = gpu_fault::RenderGpuFaultText(
      gpu_fault::ExplainGpuFaults(*dump, explain), text);
  std::fputs(report.c_str(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace gmt::cli
