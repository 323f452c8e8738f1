#include "lib/memtest/config.h"

#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmt::memtest {
namespace {

// Decimal or 0x-hex, the whole string.
bool ParseUint64(absl::string_view text, uint64_t* out) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return false;
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    return absl::SimpleHexAtoi(text.substr(2), out) && text.size() > 2;
  }
  return absl::SimpleAtoi(text, out);
}

bool ParseInt(absl::string_view text, int lo, int hi, int* out) {
  int v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v)) return false;
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

absl::StatusOr<SizeSpec> ParseSize(absl::string_view text) {
  const std::string original(text);
  text = absl::StripAsciiWhitespace(text);
  SizeSpec spec;
  if (absl::ConsumeSuffix(&text, "%")) {
    double pct = 0;
    if (!absl::SimpleAtod(text, &pct) || !(pct > 0) || pct > 100) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", original, "' is not a share of free memory in (0%, 100%]"));
    }
    spec.percent = true;
    spec.percent_of_free = pct;
    return spec;
  }
  uint64_t unit = 1;
  std::string lower = absl::AsciiStrToLower(text);
  absl::string_view rest = lower;
  if (!absl::ConsumeSuffix(&rest, "ib")) absl::ConsumeSuffix(&rest, "b");
  if (!rest.empty()) {
    switch (rest.back()) {
      case 'k':
        unit = uint64_t{1} << 10;
        break;
      case 'm':
        unit = uint64_t{1} << 20;
        break;
      case 'g':
        unit = uint64_t{1} << 30;
        break;
      case 't':
        unit = uint64_t{1} << 40;
        break;
      default:
        break;
    }
    if (unit != 1) rest.remove_suffix(1);
  }
  double number = 0;
  const bool digits_only =
      !rest.empty() &&
      rest.find_first_not_of("0123456789.") == absl::string_view::npos;
  if (!digits_only || !absl::SimpleAtod(rest, &number) || !(number > 0) ||
      number * static_cast<double>(unit) >= 18e18) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", original,
        "' is not a size (examples: 90%, 10G, 512M, 1.5GiB, 4096)"));
  }
  spec.percent = false;
  spec.bytes =
      static_cast<uint64_t>(std::floor(number * static_cast<double>(unit)));
  return spec;
}

uint64_t ResolveSize(const SizeSpec& spec, uint64_t free_bytes,
                     uint64_t granule) {
  uint64_t bytes = spec.bytes;
  if (spec.percent) {
    bytes = static_cast<uint64_t>(static_cast<long double>(free_bytes) *
                                  spec.percent_of_free / 100.0L);
  }
  return bytes & ~(granule - 1);
}

absl::StatusOr<Injection> ParseInjection(absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "': ", why,
                     " (form: <pattern>:<byte offset>:<bit mask>[:flaky])"));
  };
  if (parts.size() != 3 && parts.size() != 4) return bad("wrong field count");
  Injection inj;
  const std::optional<Test> test = TestFromName(parts[0]);
  if (!test.has_value())
    return bad(absl::StrCat("unknown pattern '", parts[0], "'"));
  inj.test = *test;
  if (!ParseUint64(parts[1], &inj.offset)) return bad("bad byte offset");
  if (inj.offset % 8 != 0)
    return bad("the byte offset must be a multiple of 8");
  if (!ParseUint64(parts[2], &inj.mask)) return bad("bad bit mask");
  if (inj.mask == 0) return bad("the bit mask must not be 0");
  if (parts.size() == 4) {
    if (parts[3] != "flaky") return bad("the 4th field can only be 'flaky'");
    inj.flaky = true;
  }
  return inj;
}

MemtestParse ParseMemtestArgs(const std::vector<std::string>& args,
                              absl::string_view inject_env) {
  MemtestParse out;
  MemtestConfig& c = out.config;
  std::string inject_text(inject_env);
  std::string inject_source = "GMT_MEMTEST_INJECT";
  for (size_t i = 0; i < args.size() && out.ok(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (const size_t eq = flag.find('=');
        absl::StartsWith(flag, "--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto take = [&]() -> std::optional<std::string> {
      if (value.has_value()) return value;
      if (i + 1 < args.size()) return args[++i];
      out.error = absl::StrCat(flag, ": a value is needed");
      return std::nullopt;
    };
    auto flag_error = [&](absl::string_view v, absl::string_view why) {
      out.error = absl::StrCat(flag, ": '", v, "' ", why);
    };
    if (flag == "-h" || flag == "--help") {
      c.help = true;
    } else if (flag == "--no-copy-bandwidth") {
      c.measure_copy = false;
    } else if (flag == "--device") {
      const auto v = take();
      if (v && !ParseInt(*v, 0, 1023, &c.device)) {
        flag_error(*v, "is not a device index");
      }
    } else if (flag == "--size") {
      const auto v = take();
      if (v) {
        absl::StatusOr<SizeSpec> s = ParseSize(*v);
        if (s.ok()) {
          c.size = *s;
        } else {
          out.error = absl::StrCat(flag, ": ", s.status().message());
        }
      }
    } else if (flag == "--patterns") {
      const auto v = take();
      if (v) {
        absl::StatusOr<std::vector<Test>> t = ParseTestList(*v);
        if (t.ok()) {
          c.tests = *t;
        } else {
          out.error = absl::StrCat(flag, ": ", t.status().message());
        }
      }
    } else if (flag == "--passes") {
      const auto v = take();
      if (v && !ParseInt(*v, 1, 1000000, &c.passes)) {
        flag_error(*v, "is not a pass count in [1, 1000000]");
      }
    } else if (flag == "--seed") {
      const auto v = take();
      if (v && !ParseUint64(*v, &c.seed)) flag_error(*v, "is not a number");
    } else if (flag == "--json") {
      const auto v = take();
      if (v && v->empty())
        flag_error(*v, "is not a file name (use - for stdout)");
      if (v && !v->empty()) c.json_path = *v;
    } else if (flag == "--max-errors") {
      const auto v = take();
      if (v && !ParseInt(*v, 0, 100000000, &c.max_errors)) {
        flag_error(*v, "is not a count in [0, 100000000]");
      }
    } else if (flag == "--progress") {
      const auto v = take();
      if (v) {
        if (*v == "auto") {
          c.progress = ProgressMode::kAuto;
        } else if (*v == "always") {
          c.progress = ProgressMode::kAlways;
        } else if (*v == "never") {
          c.progress = ProgressMode::kNever;
        } else {
          flag_error(*v, "is not one of auto, always, never");
        }
      }
    } else if (flag == "--inject") {
      const auto v = take();
      if (v) {
        inject_text = *v;
        inject_source = "--inject";
      }
    } else {
      out.error = absl::StrCat("unknown flag '", args[i], "'");
    }
  }
  if (out.ok() && !inject_text.empty()) {
    absl::StatusOr<Injection> inj = ParseInjection(inject_text);
    if (!inj.ok()) {
      out.error = absl::StrCat(inject_source, ": ", inj.status().message());
    } else {
      bool selected = false;
      for (Test t : c.tests) selected = selected || t == inj->test;
      if (!selected) {
        out.error =
            absl::StrCat(inject_source, ": pattern '", TestName(inj->test),
                         "' is not among the selected --patterns");
      } else {
        c.inject = *inj;
      }
    }
  }
  return out;
}

std::string MemtestUsage() {
  return R"(usage: gpumemtrace memtest [FLAGS]

Tests GPU memory: writes patterns over a chosen amount of free device memory,
reads them back and reports every word that did not hold its value, with a
second read to tell stored corruption from a flaky read, and the ECC and
remapped-row counters (NVML) before and after.

  --device N          CUDA device index (default 0)
  --size S            how much to test: a share of the free memory ("90%",
                      the default) or a size ("10G", "512M", "1.5GiB")
  --patterns LIST     comma-separated, or "all" (default):
                        walking1  walking ones (per 64-bit word, the bit
                                  rotates with the word index and the pass)
                        walking0  walking zeros
                        address   own address, then its complement
                        movinv    moving inversions (check p, write ~p
                                  upwards; check ~p, write p downwards)
                        mod20     modulo-20, all 20 offsets
                        random    counter-based random values
  --passes N          repeat the selected patterns N times (default 1)
  --seed N            seed of the random pattern and later-pass constants
  --json FILE         write the JSON report to FILE ("-": stdout)
  --max-errors N      errors listed in full in the report (default 1000;
                      all are counted)
  --no-copy-bandwidth skip the device-to-device copy measurement
  --progress MODE     auto (a bar on a terminal, lines otherwise), always,
                      never
  --inject SPEC       TEST ONLY: flip bits in the test buffer to check the
                      tester itself. SPEC = <pattern>:<byte offset>:<bit
                      mask>[:flaky]; also read from GMT_MEMTEST_INJECT.
                      "flaky" restores the word after the verify.

Exit status: 0 no error, 1 a memory error (or uncorrected ECC errors during
the test, or a CUDA failure mid-run), 2 bad usage or setup failure.
)";
}

}  // namespace gmt::memtest
