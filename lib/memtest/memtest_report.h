// The result of a memtest run as plain data, and its writers: the JSON
// report (`--json`), the text summary (stderr) and the exit status. Pure
// functions of the data, unit-tested in tests/unit/memtest_report_test.cc.
//
// JSON shape (fields may only be added):
//   {"tool": "gpumemtrace", "command": "memtest", "version": "x.y.z",
//    "device": {"index", "name", "pci_bus_id", "total_bytes", "free_bytes"},
//    "config": {"size_bytes", "patterns": [...], "passes", "seed"},
//    "chunks": [{"address": "0x...", "bytes", "region_offset"}],
//    "copy": {"bytes", "seconds", "gbps"} | null,
//    "tests": [{"pattern", "pass", "verify_sweeps", "tested_bytes",
//               "traffic_bytes", "seconds", "tested_gbps", "traffic_gbps",
//               "copy_ratio", "errors"}],
//    "errors": [{"pattern", "pass", "step", "step_pattern", "address",
//                "chunk", "region_offset", "expected", "actual", "xor",
//                "flipped_bits": [..], "second_read", "class"}],
//    "summary": {"errors", "errors_listed", "stored_corruption",
//                "flaky_read", "unstable", "ecc_uncorrected_delta",
//                "result": "pass" | "fail"},
//    "health": {"before": {...}, "after": {...}},
//    "injection": {...} (test runs only), "failure": "..." (when it stopped)}
// Addresses and 64-bit values are "0x%016x" strings (exact in every JSON
// reader); GB/s are 1e9 bytes per second.
#ifndef GMT_LIB_MEMTEST_MEMTEST_REPORT_H_
#define GMT_LIB_MEMTEST_MEMTEST_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/memtest/config.h"
#include "nlohmann/json.hpp"

namespace gmt::memtest {

// What a second read of a mismatched word says about it.
enum class ReadClass {
  kStoredCorruption,  // it still holds the wrong value: the bits are stored
  kFlakyRead,         // it holds the right value now: the first read was wrong
  kUnstable,          // neither: the word changes between reads
};
ReadClass ClassifySecondRead(uint64_t expected, uint64_t actual,
                             uint64_t second_read);
// "stored-corruption", "flaky-read", "unstable".
const char* ReadClassName(ReadClass c);
// Bit positions set in `x`, lowest first.
std::vector<int> SetBits(uint64_t x);

struct Chunk {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t region_offset = 0;  // bytes of the chunks before it
  uint64_t first_index = 0;    // region_offset / 8
};

struct MismatchRecord {
  Test test = Test::kWalking1;
  int pass = 0;
  int step = 0;  // index in PlanTest(test, pass, seed)
  GmtMemtestPattern step_pattern{};
  uint64_t address = 0;
  int chunk = 0;
  uint64_t region_offset = 0;
  uint64_t expected = 0;
  uint64_t actual = 0;
  uint64_t second_read = 0;
  ReadClass read_class = ReadClass::kStoredCorruption;
};

struct TestTiming {
  Test test = Test::kWalking1;
  int pass = 0;
  int verify_sweeps = 0;
  uint64_t tested_bytes = 0;   // region bytes x verify sweeps
  uint64_t traffic_bytes = 0;  // bytes read + bytes written by all steps
  double seconds = 0;          // all steps, launch to completion
  uint64_t errors = 0;         // mismatched words, listed or not
};

// NVML counters of one moment; each is absent when the GPU or driver does not
// report it.
struct HealthSnapshot {
  bool available = false;
  std::string reason;  // why not, when !available
  std::optional<uint64_t> ecc_volatile_corrected, ecc_volatile_uncorrected;
  std::optional<uint64_t> ecc_aggregate_corrected, ecc_aggregate_uncorrected;
  std::optional<uint64_t> remapped_correctable, remapped_uncorrectable;
  std::optional<bool> remap_pending, remap_failure;
};

// Uncorrected ECC errors counted during the test (volatile counters), 0 when
// either snapshot lacks them.
uint64_t EccUncorrectedDelta(const HealthSnapshot& before,
                             const HealthSnapshot& after);

struct CopyBandwidth {
  uint64_t bytes = 0;  // copied (each byte read once and written once)
  double seconds = 0;
};

struct MemtestReport {
  MemtestConfig config;
  int device_index = 0;
  std::string device_name;
  std::string pci_bus_id;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t tested_bytes = 0;  // the region: sum of the chunks
  std::vector<Chunk> chunks;
  std::optional<CopyBandwidth> copy;
  std::vector<TestTiming> tests;
  std::vector<MismatchRecord> errors;  // at most config.max_errors
  uint64_t total_errors = 0;           // every mismatched word
  HealthSnapshot health_before, health_after;
  std::optional<uint64_t> injected_address;  // test runs only
  std::string failure;        // why the run stopped early, "" when it did not
  bool setup_failed = false;  // the failure came before any test ran
};

double Gbps(uint64_t bytes, double seconds);
nlohmann::json MemtestJson(const MemtestReport& report);
// The human summary: one line per test, then the errors (up to 20), then
// PASS/FAIL.
std::string MemtestText(const MemtestReport& report);
// 0 pass, 1 memory errors / uncorrected ECC during the run / failure mid-run,
// 2 setup failure.
int MemtestExitCode(const MemtestReport& report);

}  // namespace gmt::memtest

#endif  // GMT_LIB_MEMTEST_MEMTEST_REPORT_H_
