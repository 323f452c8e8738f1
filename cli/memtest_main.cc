// `gpumemtrace memtest`: the GPU memory tester (lib/memtest/runner.h) on the
// real driver, with its report as text and JSON.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "lib/memtest/config.h"
#include "lib/memtest/cuda_device.h"
#include "lib/memtest/nvml_counters.h"
#include "lib/memtest/runner.h"

namespace gmt::cli {
namespace {

int SetupError(const std::string& message) {
  std::fprintf(stderr, "gpumemtrace memtest: error: %s\n", message.c_str());
  return 2;
}

// Writes the JSON report; false (with a message) when it cannot.
bool WriteJson(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "gpumemtrace memtest: error: cannot write %s\n",
                 path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int MemtestMain(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const char* inject_env = std::getenv("GMT_MEMTEST_INJECT");
  const memtest::MemtestParse parse =
      memtest::ParseMemtestArgs(args, inject_env ? inject_env : "");
  if (!parse.ok()) {
    std::fprintf(stderr,
                 "usage: gpumemtrace memtest [FLAGS] (--help for the list)\n"
                 "gpumemtrace memtest: error: %s\n",
                 parse.error.c_str());
    return 2;
  }
  const memtest::MemtestConfig& config = parse.config;
  if (config.help) {
    std::fputs(memtest::MemtestUsage().c_str(), stdout);
    return 0;
  }
  if (config.inject) {
    std::fprintf(stderr,
                 "gpumemtrace memtest: TEST ONLY fault injection is on: bits "
                 "will be flipped on purpose\n");
  }
  absl::StatusOr<std::unique_ptr<memtest::MemtestDevice>> device =
      memtest::OpenCudaMemtestDevice(config.device);
  if (!device.ok()) {
    return SetupError(std::string(device.status().message()));
  }
  const bool bar = config.progress == memtest::ProgressMode::kAlways ||
                   (config.progress == memtest::ProgressMode::kAuto &&
                    isatty(STDERR_FILENO) != 0);
  memtest::Progress progress(stderr, bar);
  memtest::RunnerHooks hooks;
  hooks.progress =
      config.progress == memtest::ProgressMode::kNever ? nullptr : &progress;
  const std::string bus = (*device)->PciBusId();
  hooks.read_health = [bus] { return memtest::ReadNvmlHealth(bus); };
  const memtest::MemtestReport report =
      memtest::RunMemtest(**device, config, hooks);
  device->reset();  // frees the context's resources before printing

  std::FILE* text_out = config.json_path == "-" ? stderr : stdout;
  if (!report.setup_failed) {
    const std::string text = memtest::MemtestText(report);
    std::fputs(text.c_str(), text_out);
    std::fflush(text_out);
  }
  bool written = true;
  if (!config.json_path.empty()) {
    written = WriteJson(config.json_path,
                        memtest::MemtestJson(report).dump(2) + "\n");
  }
  if (report.setup_failed) return SetupError(report.failure);
  const int code = memtest::MemtestExitCode(report);
  return code == 0 && !written ? 2 : code;
}

}  // namespace gmt::cli
