// `gpumemtrace memtest` flags -> what to test. Pure functions of their
// arguments (the environment is passed in), unit-tested in
// tests/unit/memtest_config_test.cc.
//
//   gpumemtrace memtest [--device N] [--size 90%|10G] [--patterns LIST]
//                       [--passes N] [--seed N] [--json FILE|-]
//                       [--max-errors N] [--no-copy-bandwidth]
//                       [--progress auto|always|never] [--inject SPEC]
#ifndef GMT_LIB_MEMTEST_CONFIG_H_
#define GMT_LIB_MEMTEST_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lib/memtest/plan.h"

namespace gmt::memtest {

// How much memory to test: a share of the free memory, or a byte count.
struct SizeSpec {
  bool percent = true;
  double percent_of_free = 90;  // (0, 100]
  uint64_t bytes = 0;

  friend bool operator==(const SizeSpec&, const SizeSpec&) = default;
};

// "90%", "10G", "512M", "64K", "1.5G", "4096" (bytes). Suffixes K/M/G/T
// (optionally followed by "iB" or "B") are powers of 1024.
absl::StatusOr<SizeSpec> ParseSize(absl::string_view text);

// Bytes to test for `spec` with `free_bytes` free: rounded down to `granule`
// (a power of two).
uint64_t ResolveSize(const SizeSpec& spec, uint64_t free_bytes,
                     uint64_t granule);

// TEST ONLY: the fault-injection hook. After the first write of `test` in
// pass 0, XOR the 64-bit word at byte `offset` of the tested region (the
// chunks in allocation order) with `mask`; `flaky`: XOR it back right after
// the verify, so the second read sees the right value.
//   "<test>:<offset>:<mask>[:flaky]", offset and mask decimal or 0x-hex.
struct Injection {
  Test test = Test::kWalking1;
  uint64_t offset = 0;
  uint64_t mask = 0;
  bool flaky = false;
};
absl::StatusOr<Injection> ParseInjection(absl::string_view text);

enum class ProgressMode { kAuto, kAlways, kNever };

struct MemtestConfig {
  bool help = false;
  int device = 0;
  SizeSpec size;
  std::vector<Test> tests = AllTests();
  int passes = 1;
  uint64_t seed = 0x6d656d74657374ull;  // "memtest"
  std::string json_path;                // "" none, "-" stdout
  int max_errors = 1000;  // listed in the report (all are counted)
  bool measure_copy = true;
  ProgressMode progress = ProgressMode::kAuto;
  std::optional<Injection> inject;
};

struct MemtestParse {
  MemtestConfig config;
  // Empty on success; else one sentence naming the flag.
  std::string error;
  bool ok() const { return error.empty(); }
};

// Parses the arguments after "memtest". `inject_env` is the value of
// GMT_MEMTEST_INJECT ("" when unset); --inject wins over it.
MemtestParse ParseMemtestArgs(const std::vector<std::string>& args,
                              absl::string_view inject_env);

// `gpumemtrace memtest --help`.
std::string MemtestUsage();

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_CONFIG_H_
