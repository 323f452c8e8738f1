// Fuzz harness: saved JSON reports read back (lib/report/report_json_parse.h),
// as `gpumemtrace report FILE.json` does.
//
// Input: the file's bytes.
// Invariants:
//   1. ParseReportJson never crashes or throws; a refusal has a message.
//   2. What it accepts renders (RenderJson, RenderText) without crashing, and
//      the rendered JSON reads back and renders to the same text (a fixed
//      point after one round: numbers may be normalized once, e.g. an
//      address given as a number comes back as "0x...").
#include <string>

#include "lib/report/report.h"
#include "lib/report/report_json_parse.h"
#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gmt::ReportData report;
  std::string error;
  if (!gmt::ParseReportJson(text, &report, &error)) {
    GMT_FUZZ_CHECK(!error.empty(), "refused without a message");
    return 0;
  }
  const std::string json = gmt::RenderJson(report);
  const std::string human = gmt::RenderText(report, 0);
  GMT_FUZZ_CHECK(!human.empty(), "empty text report");

  gmt::ReportData again;
  GMT_FUZZ_CHECK(gmt::ParseReportJson(json, &again, &error),
                 "the writer's own output is refused: %s", error.c_str());
  const std::string json_again = gmt::RenderJson(again);
  GMT_FUZZ_CHECK(json_again == json, "not a fixed point:\n%s\n---\n%s",
                 json.c_str(), json_again.c_str());
  return 0;
}
