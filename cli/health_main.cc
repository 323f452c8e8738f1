// `gpumemtrace health`: the GPU health reading of lib/health/health.h on its
// own, without a program: every value with its unit, and the warnings.
//
// Exit status: 0 every value read is normal, 1 at least one warning, 2 bad
// usage, 3 health unavailable (no NVML, NVML failed, no such device).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "lib/health/health.h"
#include "lib/report/health_render.h"

namespace gmt::cli {
namespace {

constexpr char kHealthUsage[] =
    R"(usage: gpumemtrace health [--json] [--device N]

Reads GPU health through NVML (libnvidia-ml.so.1, loaded at run time): memory
total/used/reserved, ECC mode and corrected/uncorrected counts (volatile and
aggregate), retired pages and pending retirement, remapped rows, GPU and
memory temperatures with their limits, clock-event (throttle) reasons, and the
driver's version, with a plain warning for each abnormal value. A value the
GPU or driver does not report is printed as "not supported" (or the NVML
error), never as normal.

  --json       print the reading as JSON instead of text
  --device N   only NVML device N (nvidia-smi's index)

Exit status: 0 healthy, 1 warnings, 2 bad usage, 3 unavailable (no NVML,
NVML failed, or no such device).
)";

}  // namespace

int HealthMain(int argc, char** argv) {
  bool json = false;
  int device = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kHealthUsage, stdout);
      return 0;
    }
    if (arg == "--json") {
      json = true;
    } else if (arg == "--device" || arg.rfind("--device=", 0) == 0) {
      std::string value;
      if (arg == "--device") {
        if (i + 1 >= argc)
          return UsageError("health", "--device needs a number");
        value = argv[++i];
      } else {
        value = arg.substr(9);
      }
      if (!absl::SimpleAtoi(value, &device) || device < 0) {
        return UsageError("health", absl::StrCat("--device: '", value,
                                                 "' is not a device index"));
      }
    } else {
      return UsageError("health", absl::StrCat("unknown argument '", arg, "'"));
    }
  }
  const HealthReading reading = ReadHealth(device);
  const bool warned = !HealthWarnings(reading).empty();
  if (json) {
    const std::string text = HealthReadingJson(reading).dump(
        2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
  } else {
    std::fputs(reading.available ? "GPU health (NVML):\n" : "", stdout);
    std::fputs(RenderHealthText(reading, /*verbose=*/true).c_str(), stdout);
  }
  std::fflush(stdout);
  if (!reading.available) return 3;
  return warned ? 1 : 0;
}

}  // namespace gmt::cli
