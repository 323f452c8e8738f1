#include "lib/memtest/runner.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmt::memtest {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string GiB(uint64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
}

// Allocates `bytes` as chunks of at most `max_chunk`, halving the chunk size
// down to kGranule when the device refuses; stops early (keeping what it got)
// when even that fails.
void AllocateChunks(MemtestDevice& device, uint64_t bytes, uint64_t max_chunk,
                    std::vector<Chunk>* chunks) {
  uint64_t chunk = std::max(max_chunk & ~(kGranule - 1), kGranule);
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t want = std::min(chunk, bytes - done);
    uint64_t address = 0;
    if (device.Allocate(want, &address).ok()) {
      chunks->push_back(Chunk{address, want, done, done / 8});
      done += want;
    } else if (chunk > kGranule) {
      chunk = std::max((chunk / 2) & ~(kGranule - 1), kGranule);
    } else {
      break;
    }
  }
}

class Run {
 public:
  Run(MemtestDevice& device, const MemtestConfig& config,
      const RunnerHooks& hooks, MemtestReport* report)
      : d_(device), config_(config), hooks_(hooks), r_(*report) {}

  ~Run() {
    for (const Chunk& c : r_.chunks) d_.Free(c.address);
  }

  void Go() {
    if (!Setup()) {
      r_.setup_failed = true;
      return;
    }
    r_.health_before = ReadHealth();
    MeasureCopy();
    const bool warm = WarmUp();
    for (int pass = 0; warm && pass < config_.passes && r_.failure.empty();
         ++pass) {
      for (Test test : config_.tests) {
        if (!RunTest(test, pass)) break;
      }
    }
    if (hooks_.progress != nullptr) hooks_.progress->Finish();
    r_.health_after = ReadHealth();
  }

 private:
  bool Fail(absl::string_view what, const absl::Status& status) {
    r_.failure = absl::StrCat(what, ": ", status.message());
    return false;
  }

  HealthSnapshot ReadHealth() {
    if (hooks_.read_health) return hooks_.read_health();
    HealthSnapshot none;
    none.reason = "no NVML reader";
    return none;
  }

  bool Setup() {
    r_.config = config_;
    r_.device_index = d_.Index();
    r_.device_name = d_.Name();
    r_.pci_bus_id = d_.PciBusId();
    absl::Status s = d_.MemInfo(&r_.free_bytes, &r_.total_bytes);
    if (!s.ok()) return Fail("cuMemGetInfo", s);
    const uint64_t bytes = ResolveSize(config_.size, r_.free_bytes, kGranule);
    if (!config_.size.percent && config_.size.bytes > r_.free_bytes) {
      r_.failure = absl::StrCat("--size ", GiB(config_.size.bytes),
                                " is more than the free ", GiB(r_.free_bytes));
      return false;
    }
    if (bytes == 0) {
      r_.failure = absl::StrCat(
          "nothing to test: --size resolves to less "
          "than 2 MiB (free: ",
          GiB(r_.free_bytes), ")");
      return false;
    }
    AllocateChunks(d_, bytes, hooks_.max_chunk_bytes, &r_.chunks);
    for (const Chunk& c : r_.chunks) r_.tested_bytes += c.bytes;
    if (r_.chunks.empty()) {
      r_.failure = absl::StrCat("could not allocate any device memory (wanted ",
                                GiB(bytes), ")");
      return false;
    }
    if (config_.inject) {
      const uint64_t offset = config_.inject->offset;
      if (offset + 8 > r_.tested_bytes) {
        r_.failure = absl::StrCat("injection offset ", offset,
                                  " is outside the tested region of ",
                                  r_.tested_bytes, " bytes");
        return false;
      }
      for (const Chunk& c : r_.chunks) {
        if (offset >= c.region_offset && offset < c.region_offset + c.bytes) {
          r_.injected_address = c.address + (offset - c.region_offset);
        }
      }
    }
    s = d_.ResetLogs(r_.chunks.size());
    if (!s.ok()) return Fail("allocating the mismatch logs", s);
    for (Test t : config_.tests) {
      total_steps_ += PlanTest(t, 0, config_.seed).size() *
                      static_cast<uint64_t>(config_.passes);
    }
    return true;
  }

  void MeasureCopy() {
    if (!config_.measure_copy) return;
    const Chunk& c = *std::max_element(
        r_.chunks.begin(), r_.chunks.end(),
        [](const Chunk& a, const Chunk& b) { return a.bytes < b.bytes; });
    const uint64_t n =
        std::min((c.bytes / 2) & ~uint64_t{255}, uint64_t{1} << 30);
    if (n == 0) return;
    constexpr int kReps = 5;
    absl::Status s = d_.Copy(c.address + n, c.address, n);  // warm-up
    if (s.ok()) s = d_.Synchronize();
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < kReps && s.ok(); ++i)
      s = d_.Copy(c.address + n, c.address, n);
    if (s.ok()) s = d_.Synchronize();
    if (!s.ok()) {
      // Not fatal: the patterns still run, without a reference.
      return;
    }
    r_.copy = CopyBandwidth{n * kReps, SecondsSince(t0)};
  }

  // One untimed write and verify over the start of the first chunk, so that
  // the first timed pattern does not pay for loading the kernels (lazy
  // module loading) and for the clocks coming up: seen on the H200, walking1,
  // the first test, at 1.8 TB/s against 2.17 for walking0, its twin. A
  // mismatch here is not reported: every test sweeps this memory again.
  bool WarmUp() {
    const Chunk& c = r_.chunks.front();
    const uint64_t vectors =
        std::min<uint64_t>(c.bytes, uint64_t{1} << 30) / 16;
    const GmtMemtestPattern p{GMT_MEMTEST_CONST, 0, 0, 0};
    absl::Status s = d_.Write(p, c.address, vectors, c.first_index);
    if (s.ok()) s = d_.Verify(p, p, 0, c.address, vectors, c.first_index, 0);
    if (s.ok()) s = d_.Synchronize();
    if (s.ok()) s = d_.ResetLogs(r_.chunks.size());
    if (!s.ok()) return Fail("warm-up sweep", s);
    return true;
  }

  bool InjectNow(Test test, int pass) const {
    return config_.inject && !injected_ && pass == 0 &&
           config_.inject->test == test && r_.injected_address.has_value();
  }

  // Runs one pattern's steps over all chunks. False when the device failed.
  bool RunTest(Test test, int pass) {
    const std::vector<Step> steps = PlanTest(test, pass, config_.seed);
    TestTiming t;
    t.test = test;
    t.pass = pass;
    t.verify_sweeps = VerifySweeps(test);
    bool restore_after_verify = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& step = steps[i];
      const Clock::time_point t0 = Clock::now();
      if (step.kind == Step::kWrite) {
        for (const Chunk& c : r_.chunks) {
          absl::Status s =
              d_.Write(step.pattern, c.address, c.bytes / 16, c.first_index);
          if (!s.ok()) return Fail("launching gmt_memtest_write", s);
        }
        absl::Status s = d_.Synchronize();
        if (!s.ok()) return Fail("gmt_memtest_write", s);
        t.seconds += SecondsSince(t0);
        t.traffic_bytes += r_.tested_bytes;
        if (InjectNow(test, pass)) {
          // TEST ONLY: the fault-injection hook, outside the timed part.
          s = d_.Flip(*r_.injected_address, config_.inject->mask);
          if (s.ok()) s = d_.Synchronize();
          if (!s.ok()) return Fail("gmt_memtest_flip (injection)", s);
          injected_ = true;
          restore_after_verify = config_.inject->flaky;
        }
      } else {
        absl::Status s = d_.ResetLogs(r_.chunks.size());
        const bool down = (step.flags & GMT_MEMTEST_DESCENDING) != 0;
        for (size_t k = 0; k < r_.chunks.size() && s.ok(); ++k) {
          const size_t slot = down ? r_.chunks.size() - 1 - k : k;
          const Chunk& c = r_.chunks[slot];
          s = d_.Verify(step.pattern, step.next, step.flags, c.address,
                        c.bytes / 16, c.first_index, slot);
        }
        if (!s.ok()) return Fail("launching gmt_memtest_verify", s);
        s = d_.Synchronize();
        if (!s.ok()) return Fail("gmt_memtest_verify", s);
        t.seconds += SecondsSince(t0);
        const bool rewrite = (step.flags & GMT_MEMTEST_REWRITE) != 0;
        t.tested_bytes += r_.tested_bytes;
        t.traffic_bytes += r_.tested_bytes * (rewrite ? 2 : 1);
        if (restore_after_verify) {
          // TEST ONLY: a flaky fault is gone by the second read.
          s = d_.Flip(*r_.injected_address, config_.inject->mask);
          if (s.ok()) s = d_.Synchronize();
          if (!s.ok()) return Fail("gmt_memtest_flip (restore)", s);
          restore_after_verify = false;
        }
        if (!Collect(test, pass, static_cast<int>(i), step, &t)) return false;
      }
      ++steps_done_;
      Report(test, pass, t, /*done=*/false);
    }
    r_.tests.push_back(t);
    Report(test, pass, t, /*done=*/true);
    return true;
  }

  // Reads the logs of a verify step; reads each recorded word again.
  bool Collect(Test test, int pass, int step_index, const Step& step,
               TestTiming* t) {
    std::vector<GmtMemtestLog> logs;
    absl::Status s = d_.ReadLogs(r_.chunks.size(), &logs);
    if (!s.ok()) return Fail("reading the mismatch logs", s);
    std::vector<MismatchRecord> found;
    for (size_t slot = 0; slot < logs.size(); ++slot) {
      const GmtMemtestLog& log = logs[slot];
      if (log.mismatches == 0) continue;
      t->errors += log.mismatches;
      r_.total_errors += log.mismatches;
      const uint64_t n =
          std::min<uint64_t>(log.mismatches, GMT_MEMTEST_LOG_CAPACITY);
      const Chunk& c = r_.chunks[slot];
      for (uint64_t k = 0; k < n; ++k) {
        const GmtMemtestMismatch& m = log.records[k];
        MismatchRecord e;
        e.test = test;
        e.pass = pass;
        e.step = step_index;
        e.step_pattern = step.pattern;
        e.address = m.address;
        e.chunk = static_cast<int>(slot);
        e.region_offset = c.region_offset + (m.address - c.address);
        e.expected = m.expected;
        e.actual = m.actual;
        found.push_back(e);
      }
    }
    std::sort(found.begin(), found.end(),
              [](const MismatchRecord& a, const MismatchRecord& b) {
                return a.address < b.address;
              });
    for (MismatchRecord& e : found) {
      // The second read: after the whole verify sweep finished (other chunks
      // streamed through the caches meanwhile), through a copy.
      s = d_.ReadWord(e.address, &e.second_read);
      if (!s.ok()) return Fail("second read", s);
      e.read_class = ClassifySecondRead(e.expected, e.actual, e.second_read);
      if ((step.flags & GMT_MEMTEST_REWRITE) != 0) {
        // The kernel left this word as read; give it the value the rest of
        // the sweep got, so the next step does not report it again.
        s = d_.WriteWord(e.address, step.next.value);
        if (!s.ok()) return Fail("rewriting a mismatched word", s);
      }
      if (r_.errors.size() < static_cast<size_t>(config_.max_errors)) {
        r_.errors.push_back(e);
      }
    }
    return true;
  }

  void Report(Test test, int pass, const TestTiming& t, bool done) {
    if (hooks_.progress == nullptr) return;
    ProgressState p;
    p.fraction = total_steps_ == 0 ? 1.0
                                   : static_cast<double>(steps_done_) /
                                         static_cast<double>(total_steps_);
    p.test = TestName(test);
    p.pass = pass;
    p.gbps = Gbps(t.tested_bytes, t.seconds);
    p.errors = r_.total_errors;
    if (done) {
      hooks_.progress->TestDone(p);
    } else {
      hooks_.progress->Update(p);
    }
  }

  MemtestDevice& d_;
  const MemtestConfig& config_;
  const RunnerHooks& hooks_;
  MemtestReport& r_;
  uint64_t total_steps_ = 0;
  uint64_t steps_done_ = 0;
  bool injected_ = false;
};

}  // namespace

MemtestReport RunMemtest(MemtestDevice& device, const MemtestConfig& config,
                         const RunnerHooks& hooks) {
  MemtestReport report;
  report.config = config;
  {
    Run run(device, config, hooks, &report);
    run.Go();
  }
  return report;
}

}  // namespace gmt::memtest
