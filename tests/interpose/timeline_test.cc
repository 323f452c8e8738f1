// The timeline through the real interposition path (fake CUDA runtime): every
// tracked alloc and free becomes an event, a small ring keeps the newest and
// counts the rest as dropped while the bytes-in-use series stays exact, and
// report=html,trace,torch write their files where their options say.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using TimelineTest = InterposeTest;

std::string AllFormats(const std::string& extra) {
  return "report=json,html,trace,torch:report_path=<dir>/r.%p.json:"
         "html_path=<dir>/h.%p.html:trace_path=<dir>/t.%p.json:"
         "torch_path=<dir>/s.%p.pickle" +
         extra;
}

std::string Dir(const RunResult& r) {
  return std::filesystem::path(r.report_path).parent_path();
}

std::string Path(const RunResult& r, const std::string& prefix,
                 const std::string& ext) {
  return Dir(r) + "/" + prefix + "." + std::to_string(r.pid) + "." + ext;
}

int Count(const json& trace, const std::string& ph) {
  int n = 0;
  for (const json& e : trace["traceEvents"]) n += e["ph"] == ph;
  return n;
}

// Runs check_torch_snapshot.py on `file` (a skip when there is no python3).
int CheckPickle(const std::string& file, const std::string& args) {
  const std::string cmd = "python3 " GMT_SOURCE_DIR
                          "/tests/unit/check_torch_snapshot.py '" +
                          file + "' " + args;
  return std::system(cmd.c_str());
}

TEST_F(TimelineTest, EveryEventOfManyThreadsIsKept) {
  RunOptions options;
  options.gmt_options = AllFormats("");
  // 8 threads x 400 alloc/free pairs, then 2 leaked 128-byte blocks each.
  RunResult r = Run(GMT_STORM_PROGRAM, {"8", "400", "2"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& t = r.report["timeline"];
  ASSERT_TRUE(t.is_object()) << r.report.dump(1);
  const uint64_t allocations = r.report["summary"]["allocations"];
  const uint64_t frees = r.report["summary"]["frees"];
  EXPECT_EQ(allocations, 8u * 400 + 16);
  EXPECT_EQ(t["events_recorded"].get<uint64_t>(), allocations + frees);
  EXPECT_EQ(t["events_dropped"], 0);
  EXPECT_EQ(t["capacity"], 1 << 20);
  const json& series = t["series"]["0"];
  ASSERT_FALSE(series.empty());
  EXPECT_LE(series.size(), 2000u);
  EXPECT_EQ(series.back()[1], 16 * 128) << "the leaks are what is left";

  const json trace = json::parse(ReadFile(Path(r, "t", "json")));
  EXPECT_EQ(Count(trace, "b"), int(allocations));
  EXPECT_EQ(Count(trace, "e"), int(allocations));
  EXPECT_GT(Count(trace, "C"), 0);
  int live = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "b" && e["args"].value("live_at_report", false)) {
      ++live;
      EXPECT_EQ(e["args"]["bytes"], 128);
      EXPECT_NE(e["name"].get<std::string>().find("StormLeak"),
                std::string::npos)
          << e.dump();
    }
  }
  EXPECT_EQ(live, 16);

  const std::string html = ReadFile(Path(r, "h", "html"));
  EXPECT_NE(html.find("<svg id=\"memory-plot-0\""), std::string::npos);
  EXPECT_NE(html.find("StormLeak"), std::string::npos);

  const std::string pickle = Path(r, "s", "pickle");
  ASSERT_TRUE(std::filesystem::exists(pickle));
  EXPECT_EQ(CheckPickle(pickle, "--live 16 --events " +
                                    std::to_string(5 * allocations - 16 * 3)),
            0);
}

TEST_F(TimelineTest, SmallRingKeepsTheNewestAndTheExactLevel) {
  RunOptions options;
  options.gmt_options = AllFormats(":timeline_events=100");
  // One thread: 1000 pairs, then 3 leaks; the ring (128 slots) keeps the end.
  RunResult r = Run(GMT_STORM_PROGRAM, {"1", "1000", "3"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& t = r.report["timeline"];
  EXPECT_EQ(t["capacity"], 128);
  EXPECT_EQ(t["events_recorded"], 2003);
  EXPECT_EQ(t["events_dropped"], 2003 - 128);
  EXPECT_EQ(t["series"]["0"].back()[1], 3 * 128);
  bool noted = false;
  for (const json& n : r.report["notes"]) {
    noted |= n.get<std::string>().find(
                 "timeline: kept the newest 128 of 2003") != std::string::npos;
  }
  EXPECT_TRUE(noted) << r.report["notes"].dump();

  const json trace = json::parse(ReadFile(Path(r, "t", "json")));
  EXPECT_EQ(trace["otherData"]["events_dropped"], 2003 - 128);
  // 128 events kept, ending alloc, free, ..., alloc x3: 64 or 65 allocations
  // kept; a leading free whose allocation was dropped has no lifetime.
  EXPECT_GE(Count(trace, "b"), 64);
  EXPECT_LE(Count(trace, "b"), 65);
  EXPECT_EQ(Count(trace, "b"), Count(trace, "e"));
  EXPECT_EQ(CheckPickle(Path(r, "s", "pickle"), "--live 3 --max-events 320"),
            0);
}

TEST_F(TimelineTest, ZeroDisablesTheEventsNotTheReports) {
  RunOptions options;
  options.gmt_options = AllFormats(":timeline_events=0");
  RunResult r = Run(GMT_STORM_PROGRAM, {"1", "50", "1"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report.contains("timeline"));
  // The other formats still come, from what is live at the end.
  const std::string html = ReadFile(Path(r, "h", "html"));
  EXPECT_NE(html.find("No timeline was recorded"), std::string::npos);
  EXPECT_NE(html.find("StormLeak"), std::string::npos);
  const json trace = json::parse(ReadFile(Path(r, "t", "json")));
  EXPECT_EQ(Count(trace, "b"), 0);
  EXPECT_EQ(CheckPickle(Path(r, "s", "pickle"), "--live 1 --events 0"), 0);
}

TEST_F(TimelineTest, UnwritablePathFallsBackToTmpdir) {
  RunOptions options;
  options.gmt_options =
      "report=json,html:report_path=<dir>/r.%p.json:"
      "html_path=/nonexistent-dir/h.%p.html";
  options.env.push_back({"TMPDIR", tmp()});
  RunResult r = Run(GMT_STORM_PROGRAM, {"1", "10", "1"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::string marker = "html report written to ";
  const size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const size_t begin = at + marker.size();
  const std::string fallback =
      r.err.substr(begin, r.err.find(' ', begin) - begin);
  EXPECT_NE(fallback.find("/h." + std::to_string(r.pid) + ".html"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::exists(fallback)) << r.err;
  EXPECT_NE(ReadFile(fallback).find("<svg id=\"memory-plot-0\""),
            std::string::npos);
}

}  // namespace
}  // namespace gmt_test
