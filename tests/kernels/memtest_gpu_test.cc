// The memtest on a real GPU, through the same run loop as the launcher
// (lib/memtest/runner.cc on lib/memtest/cuda_device.cc):
//   1. clean: 2 GiB (argv[1] GiB), every pattern, no error;
//   2. a stored fault injected into each pattern (256 MiB, the fault in the
//      second chunk): one error, at the injected address, expected/actual
//      differing by the mask, classified stored-corruption;
//   3. a flaky fault (random and movinv): classified flaky-read;
//   4. the throughput of run 1 per pattern against cuMemcpyDtoD, one line each
//      (parsed by benchmarks/gpu/memtest_bench.sh):
//        memtest pattern=<p> tested_gbps=<x> traffic_gbps=<y> copy_gbps=<z>
//                ratio=<x/z>
//
// Exit status: 0 all passed, 1 a check failed, 77 no CUDA driver or device
// (CTest SKIP_RETURN_CODE). Links no CUDA library.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/memtest/cuda_device.h"
#include "lib/memtest/runner.h"

namespace {

using gmt::memtest::MemtestConfig;
using gmt::memtest::MemtestReport;
using MTest = gmt::memtest::Test;

int failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

MemtestConfig Config(uint64_t bytes, std::vector<MTest> tests) {
  MemtestConfig c;
  c.size.percent = false;
  c.size.bytes = bytes;
  c.tests = std::move(tests);
  return c;
}

void CheckInjected(gmt::memtest::MemtestDevice& d, MTest test, bool flaky) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  gmt::memtest::RunnerHooks hooks;
  hooks.max_chunk_bytes = 128 * kMiB;
  MemtestConfig c = Config(256 * kMiB, {test});
  c.measure_copy = false;
  const uint64_t offset = 128 * kMiB + 4096 + 8;  // in the second chunk
  const uint64_t mask = 0x8000000000010001ull;
  c.inject = gmt::memtest::Injection{test, offset, mask, flaky};
  const MemtestReport r = gmt::memtest::RunMemtest(d, c, hooks);
  const std::string tag = std::string(gmt::memtest::TestName(test)) +
                          (flaky ? " flaky" : " stored") + ": ";
  if (r.failure != "" || r.chunks.size() < 2 || r.errors.size() != 1) {
    Check(false, tag + "expected exactly one error, got " +
                     std::to_string(r.total_errors) +
                     " (failure: " + r.failure + ")");
    return;
  }
  const auto& e = r.errors[0];
  Check(e.address == r.chunks[1].address + 4096 + 8 &&
            r.injected_address == e.address,
        tag + "address is the injected one");
  Check((e.expected ^ e.actual) == mask, tag + "expected xor actual == mask");
  Check(e.read_class == (flaky ? gmt::memtest::ReadClass::kFlakyRead
                               : gmt::memtest::ReadClass::kStoredCorruption),
        tag + "classified " + gmt::memtest::ReadClassName(e.read_class));
  Check(gmt::memtest::MemtestExitCode(r) == 1, tag + "exit code 1");
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 2.0;
  absl::StatusOr<std::unique_ptr<gmt::memtest::MemtestDevice>> device =
      gmt::memtest::OpenCudaMemtestDevice(0);
  if (!device.ok()) {
    std::printf("SKIP: %s\n", std::string(device.status().message()).c_str());
    return 77;
  }
  gmt::memtest::MemtestDevice& d = **device;
  std::printf("device 0: %s (%s)\n", d.Name().c_str(), d.PciBusId().c_str());

  const uint64_t bytes = static_cast<uint64_t>(gib * (1ull << 30));
  const MemtestReport clean = gmt::memtest::RunMemtest(
      d, Config(bytes, gmt::memtest::AllTests()), gmt::memtest::RunnerHooks{});
  Check(clean.failure.empty(), "clean run finished: " + clean.failure);
  Check(clean.total_errors == 0,
        "clean run: " + std::to_string(clean.total_errors) + " errors");
  const double copy =
      clean.copy ? gmt::memtest::Gbps(clean.copy->bytes, clean.copy->seconds)
                 : 0;
  for (const auto& t : clean.tests) {
    const double tested = gmt::memtest::Gbps(t.tested_bytes, t.seconds);
    std::printf(
        "memtest pattern=%s tested_gbps=%.1f traffic_gbps=%.1f copy_gbps=%.1f "
        "ratio=%.3f bytes=%llu\n",
        std::string(gmt::memtest::TestName(t.test)).c_str(), tested,
        gmt::memtest::Gbps(t.traffic_bytes, t.seconds), copy,
        copy > 0 ? tested / copy : 0,
        static_cast<unsigned long long>(clean.tested_bytes));
  }
  for (MTest t : gmt::memtest::AllTests()) CheckInjected(d, t, /*flaky=*/false);
  CheckInjected(d, MTest::kRandom, /*flaky=*/true);
  CheckInjected(d, MTest::kMovinv, /*flaky=*/true);
  std::printf("%d check(s) failed\n", failures);
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
