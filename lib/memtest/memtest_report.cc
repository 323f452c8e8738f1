#include "lib/memtest/memtest_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gmt::memtest {
namespace {

std::string Hex(uint64_t v) { return absl::StrFormat("0x%016x", v); }

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json HealthJson(const HealthSnapshot& h) {
  if (!h.available) return {{"available", false}, {"reason", h.reason}};
  return {{"available", true},
          {"ecc",
           {{"volatile_corrected", OrNull(h.ecc_volatile_corrected)},
            {"volatile_uncorrected", OrNull(h.ecc_volatile_uncorrected)},
            {"aggregate_corrected", OrNull(h.ecc_aggregate_corrected)},
            {"aggregate_uncorrected", OrNull(h.ecc_aggregate_uncorrected)}}},
          {"remapped_rows",
           {{"correctable", OrNull(h.remapped_correctable)},
            {"uncorrectable", OrNull(h.remapped_uncorrectable)},
            {"pending", OrNull(h.remap_pending)},
            {"failure", OrNull(h.remap_failure)}}}};
}

struct ClassCounts {
  uint64_t stored = 0, flaky = 0, unstable = 0;
};
ClassCounts CountClasses(const std::vector<MismatchRecord>& errors) {
  ClassCounts c;
  for (const MismatchRecord& e : errors) {
    switch (e.read_class) {
      case ReadClass::kStoredCorruption:
        ++c.stored;
        break;
      case ReadClass::kFlakyRead:
        ++c.flaky;
        break;
      case ReadClass::kUnstable:
        ++c.unstable;
        break;
    }
  }
  return c;
}

bool Failed(const MemtestReport& r) {
  return r.total_errors > 0 ||
         EccUncorrectedDelta(r.health_before, r.health_after) > 0 ||
         !r.failure.empty();
}

}  // namespace

ReadClass ClassifySecondRead(uint64_t expected, uint64_t actual,
                             uint64_t second_read) {
  if (second_read == expected) return ReadClass::kFlakyRead;
  if (second_read == actual) return ReadClass::kStoredCorruption;
  return ReadClass::kUnstable;
}

const char* ReadClassName(ReadClass c) {
  switch (c) {
    case ReadClass::kStoredCorruption:
      return "stored-corruption";
    case ReadClass::kFlakyRead:
      return "flaky-read";
    case ReadClass::kUnstable:
      return "unstable";
  }
  return "?";
}

std::vector<int> SetBits(uint64_t x) {
  std::vector<int> bits;
  for (int b = 0; b < 64; ++b) {
    if ((x >> b) & 1) bits.push_back(b);
  }
  return bits;
}

uint64_t EccUncorrectedDelta(const HealthSnapshot& before,
                             const HealthSnapshot& after) {
  if (!before.ecc_volatile_uncorrected || !after.ecc_volatile_uncorrected) {
    return 0;
  }
  return *after.ecc_volatile_uncorrected > *before.ecc_volatile_uncorrected
             ? *after.ecc_volatile_uncorrected -
                   *before.ecc_volatile_uncorrected
             : 0;
}

double Gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

nlohmann::json MemtestJson(const MemtestReport& r) {
  nlohmann::json j;
  j["tool"] = "gpumemtrace";
  j["command"] = "memtest";
#ifdef GMT_VERSION
  j["version"] = GMT_VERSION;
#endif
  j["device"] = {{"index", r.device_index},
                 {"name", r.device_name},
                 {"pci_bus_id", r.pci_bus_id},
                 {"total_bytes", r.total_bytes},
                 {"free_bytes", r.free_bytes}};
  nlohmann::json patterns = nlohmann::json::array();
  for (Test t : r.config.tests) patterns.push_back(TestName(t));
  j["config"] = {{"size_bytes", r.tested_bytes},
                 {"patterns", patterns},
                 {"passes", r.config.passes},
                 {"seed", Hex(r.config.seed)}};
  nlohmann::json chunks = nlohmann::json::array();
  for (const Chunk& c : r.chunks) {
    chunks.push_back({{"address", Hex(c.address)},
                      {"bytes", c.bytes},
                      {"region_offset", c.region_offset}});
  }
  j["chunks"] = chunks;
  const double copy_gbps = r.copy ? Gbps(r.copy->bytes, r.copy->seconds) : 0;
  if (r.copy) {
    j["copy"] = {{"bytes", r.copy->bytes},
                 {"seconds", r.copy->seconds},
                 {"gbps", copy_gbps}};
  } else {
    j["copy"] = nullptr;
  }
  nlohmann::json tests = nlohmann::json::array();
  for (const TestTiming& t : r.tests) {
    const double tested = Gbps(t.tested_bytes, t.seconds);
    tests.push_back(
        {{"pattern", TestName(t.test)},
         {"pass", t.pass},
         {"verify_sweeps", t.verify_sweeps},
         {"tested_bytes", t.tested_bytes},
         {"traffic_bytes", t.traffic_bytes},
         {"seconds", t.seconds},
         {"tested_gbps", tested},
         {"traffic_gbps", Gbps(t.traffic_bytes, t.seconds)},
         {"copy_ratio", copy_gbps > 0 ? nlohmann::json(tested / copy_gbps)
                                      : nlohmann::json(nullptr)},
         {"errors", t.errors}});
  }
  j["tests"] = tests;
  nlohmann::json errors = nlohmann::json::array();
  for (const MismatchRecord& e : r.errors) {
    const uint64_t x = e.expected ^ e.actual;
    errors.push_back({{"pattern", TestName(e.test)},
                      {"pass", e.pass},
                      {"step", e.step},
                      {"step_pattern", DescribePattern(e.step_pattern)},
                      {"address", Hex(e.address)},
                      {"chunk", e.chunk},
                      {"region_offset", e.region_offset},
                      {"expected", Hex(e.expected)},
                      {"actual", Hex(e.actual)},
                      {"xor", Hex(x)},
                      {"flipped_bits", SetBits(x)},
                      {"second_read", Hex(e.second_read)},
                      {"class", ReadClassName(e.read_class)}});
  }
  j["errors"] = errors;
  const ClassCounts classes = CountClasses(r.errors);
  j["summary"] = {{"errors", r.total_errors},
                  {"errors_listed", r.errors.size()},
                  {"stored_corruption", classes.stored},
                  {"flaky_read", classes.flaky},
                  {"unstable", classes.unstable},
                  {"ecc_uncorrected_delta",
                   EccUncorrectedDelta(r.health_before, r.health_after)},
                  {"result", Failed(r) ? "fail" : "pass"}};
  j["health"] = {{"before", HealthJson(r.health_before)},
                 {"after", HealthJson(r.health_after)}};
  if (r.config.inject) {
    const Injection& inj = *r.config.inject;
    j["injection"] = {{"test_only", true},
                      {"pattern", TestName(inj.test)},
                      {"region_offset", inj.offset},
                      {"mask", Hex(inj.mask)},
                      {"flaky", inj.flaky},
                      {"address", r.injected_address
                                      ? nlohmann::json(Hex(*r.injected_address))
                                      : nlohmann::json(nullptr)}};
  }
  if (!r.failure.empty()) j["failure"] = r.failure;
  return j;
}

std::string MemtestText(const MemtestReport& r) {
  std::string out = absl::StrFormat(
      "memtest: device %d (%s), %.2f GiB in %zu chunk(s)\n", r.device_index,
      r.device_name, static_cast<double>(r.tested_bytes) / (1ull << 30),
      r.chunks.size());
  const double copy_gbps = r.copy ? Gbps(r.copy->bytes, r.copy->seconds) : 0;
  if (r.copy) {
    absl::StrAppendFormat(&out, "  copy (cuMemcpyDtoD)  %9.1f GB/s\n",
                          copy_gbps);
  }
  for (const TestTiming& t : r.tests) {
    const double tested = Gbps(t.tested_bytes, t.seconds);
    absl::StrAppendFormat(&out, "  %-9s pass %-3d %9.1f GB/s tested",
                          TestName(t.test), t.pass, tested);
    if (copy_gbps > 0)
      absl::StrAppendFormat(&out, " (%.2fx copy)", tested / copy_gbps);
    absl::StrAppendFormat(&out, "  %7.3fs  %d error(s)\n", t.seconds, t.errors);
  }
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < r.errors.size() && i < kShown; ++i) {
    const MismatchRecord& e = r.errors[i];
    const uint64_t x = e.expected ^ e.actual;
    absl::StrAppendFormat(
        &out,
        "  BAD %s pass %d: address 0x%x (region offset %d) expected 0x%016x "
        "actual 0x%016x xor 0x%016x bits [%s] second read 0x%016x: %s\n",
        TestName(e.test), e.pass, e.address, e.region_offset, e.expected,
        e.actual, x, absl::StrJoin(SetBits(x), ","), e.second_read,
        ReadClassName(e.read_class));
  }
  if (r.errors.size() > kShown) {
    absl::StrAppendFormat(&out, "  ... %d more listed in the JSON report\n",
                          r.errors.size() - kShown);
  }
  if (r.total_errors > r.errors.size()) {
    absl::StrAppendFormat(&out, "  %d mismatched word(s) not listed\n",
                          r.total_errors - r.errors.size());
  }
  const uint64_t ecc = EccUncorrectedDelta(r.health_before, r.health_after);
  if (ecc > 0) {
    absl::StrAppendFormat(
        &out, "  %d uncorrected ECC error(s) during the test\n", ecc);
  }
  if (!r.health_before.available) {
    absl::StrAppendFormat(&out, "  ECC/remapped rows: not available (%s)\n",
                          r.health_before.reason);
  } else {
    // "a -> b" per counter, "n/a" where the GPU does not report it.
    auto pair = [](const std::optional<uint64_t>& a,
                   const std::optional<uint64_t>& b) {
      auto one = [](const std::optional<uint64_t>& v) {
        return v ? absl::StrCat(*v) : std::string("n/a");
      };
      return absl::StrCat(one(a), " -> ", one(b));
    };
    const HealthSnapshot& a = r.health_before;
    const HealthSnapshot& b = r.health_after;
    absl::StrAppendFormat(
        &out,
        "  ECC volatile corrected %s, uncorrected %s; remapped rows "
        "correctable %s, uncorrectable %s\n",
        pair(a.ecc_volatile_corrected, b.ecc_volatile_corrected),
        pair(a.ecc_volatile_uncorrected, b.ecc_volatile_uncorrected),
        pair(a.remapped_correctable, b.remapped_correctable),
        pair(a.remapped_uncorrectable, b.remapped_uncorrectable));
  }
  if (!r.failure.empty())
    absl::StrAppendFormat(&out, "  stopped: %s\n", r.failure);
  absl::StrAppendFormat(&out, "memtest: %s (%d error(s))\n",
                        Failed(r) ? "FAIL" : "PASS", r.total_errors);
  return out;
}

int MemtestExitCode(const MemtestReport& r) {
  if (r.setup_failed) return 2;
  return Failed(r) ? 1 : 0;
}

}  // namespace gmt::memtest
