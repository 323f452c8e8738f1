// The reports to look at, on made-up data (viz_sample_data.h): the Chrome
// trace (parsed, events checked), the PyTorch snapshot pickle (bytes; the
// full read-back is check_torch_snapshot.py), the HTML page (escaping, plot
// elements, embedded series), the JSON report's timeline, and the options.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/core/options.h"
#include "lib/report/pickle_writer.h"
#include "lib/report/report.h"
#include "lib/report/report_viz_util.h"
#include "tests/unit/viz_sample_data.h"

namespace gmt {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

std::vector<json> EventsOf(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

TEST(ChromeTraceTest, ProcessPerDeviceCountersAndLifetimes) {
  const json trace = json::parse(RenderChromeTrace(MakeVizSample()));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<int, std::string> processes;
  for (const json& e : EventsOf(trace, "M")) {
    if (e["name"] == "process_name") {
      processes[e["pid"].get<int>()] = e["args"]["name"];
    }
  }
  EXPECT_EQ(processes,
            (std::map<int, std::string>{{1, "GPU 0 (NVIDIA H200)"},
                                        {2, "GPU 1 (NVIDIA H200)"},
                                        {1000, "pinned host memory"}}));

  std::map<int, std::vector<std::pair<double, uint64_t>>> counters;
  for (const json& e : EventsOf(trace, "C")) {
    EXPECT_EQ(e["name"], "bytes in use");
    counters[e["pid"].get<int>()].push_back(
        {e["ts"].get<double>(), e["args"]["bytes"].get<uint64_t>()});
  }
  using V = std::vector<std::pair<double, uint64_t>>;
  EXPECT_EQ(
      counters[1],
      (V{{1000.0, 4 * kVizMiB}, {2000.0, 5 * kVizMiB}, {3000.0, kVizMiB}}));
  EXPECT_EQ(counters[2], (V{{4000.0, 2 * kVizMiB}}));
  EXPECT_EQ(counters[1000], (V{{5000.0, 4096}, {6000.0, 0}}));

  const std::vector<json> begins = EventsOf(trace, "b");
  const std::vector<json> ends = EventsOf(trace, "e");
  ASSERT_EQ(begins.size(), 4u);
  ASSERT_EQ(ends.size(), 4u);
  std::map<std::string, json> end_by_id;
  for (const json& e : ends) end_by_id[e["id"]] = e;
  int live = 0;
  for (const json& b : begins) {
    ASSERT_TRUE(end_by_id.contains(b["id"])) << b.dump();
    const json& e = end_by_id[b["id"]];
    EXPECT_EQ(e["name"], b["name"]);
    EXPECT_EQ(e["pid"], b["pid"]);
    EXPECT_LE(b["ts"].get<double>(), e["ts"].get<double>());
    ASSERT_TRUE(b["args"]["stack"].is_array());
    if (b["args"].value("live_at_report", false)) {
      ++live;
      EXPECT_EQ(e["ts"].get<double>(), 6000.0) << "ends at the last event";
    }
    if (b["args"]["address"] == "0x7f0000000000") {
      EXPECT_EQ(b["name"], "train_step(float*, int) (train.cu:42)");
      EXPECT_EQ(b["cat"], "cudaMalloc");
      EXPECT_EQ(b["args"]["bytes"], 4 * kVizMiB);
      EXPECT_EQ(b["ts"].get<double>(), 1000.0);
      EXPECT_EQ(e["ts"].get<double>(), 3000.0);
      EXPECT_THAT(b["args"]["stack"][0].get<std::string>(),
                  HasSubstr("train_step(float*, int) at /src/train.cu:42"));
      EXPECT_FALSE(b["args"].contains("live_at_report"));
    }
    if (b["args"]["address"] == "0x7e0000000000") {
      EXPECT_EQ(b["pid"], 2);
      EXPECT_EQ(b["cat"], "cudaMallocAsync");
      EXPECT_EQ(b["args"]["stream"], "0x55");
    }
  }
  EXPECT_EQ(live, 2);
  EXPECT_EQ(trace["otherData"]["events_recorded"], 6);
  EXPECT_EQ(trace["otherData"]["events_dropped"], 0);
}

TEST(ChromeTraceTest, WithoutTimelineStillValid) {
  ReportData data = MakeVizSample();
  data.timeline = ReportData::Timeline{};
  const json trace = json::parse(RenderChromeTrace(data));
  EXPECT_TRUE(EventsOf(trace, "b").empty());
  EXPECT_TRUE(EventsOf(trace, "C").empty());
  EXPECT_EQ(EventsOf(trace, "M").size(), 6u);  // name + sort index, 3 devices
  EXPECT_EQ(trace["otherData"]["timeline_recorded"], false);
}

TEST(ChromeTraceTest, FreeWithoutItsAllocationIsLeftOut) {
  ReportData data = MakeVizSample();
  data.timeline.events.erase(data.timeline.events.begin());  // alloc dropped
  const json trace = json::parse(RenderChromeTrace(data));
  EXPECT_EQ(EventsOf(trace, "b").size(), 3u);
  EXPECT_EQ(EventsOf(trace, "e").size(), 3u);
}

TEST(TorchSnapshotTest, IsAProtocolTwoPickleWithTheSnapshotKeys) {
  const std::string p = RenderTorchSnapshot(MakeVizSample());
  ASSERT_GE(p.size(), 3u);
  EXPECT_EQ(p.substr(0, 2), std::string("\x80\x02", 2));
  EXPECT_EQ(p.back(), '.');
  for (const char* key :
       {"segments", "device_traces", "total_size", "allocated_size",
        "active_size", "requested_size", "segment_type", "segment_pool_id",
        "is_expandable", "blocks", "active_allocated", "segment_alloc",
        "free_requested", "free_completed", "segment_free", "time_us",
        "filename", "train_step(float*, int)"}) {
    EXPECT_THAT(p, HasSubstr(key)) << key;
  }
  // Memoized: each key string is written once however often it is used.
  EXPECT_EQ(Count(p, "free_completed"), 1u);
  EXPECT_EQ(Count(p, "train_step(float*, int)"), 1u);
  // Pinned host memory has no place in a CUDA snapshot.
  EXPECT_THAT(p, Not(HasSubstr("libbad")));
}

TEST(PickleWriterTest, EncodesIntsByRange) {
  PickleWriter w;
  w.BeginList();
  w.Int(5);
  w.Int(300);
  w.Int(-2);
  w.Int(int64_t{1} << 40);
  w.UInt(~uint64_t{0});
  w.EndList();
  const std::string p = w.Finish();
  const std::string expected = std::string("\x80\x02](K\x05M\x2c\x01", 9) +
                               std::string("J\xfe\xff\xff\xff", 5) +
                               std::string("\x8a\x08\0\0\0\0\0\x01\0\0", 10) +
                               std::string(
                                   "\x8a\x09\xff\xff\xff\xff\xff\xff"
                                   "\xff\xff\x00",
                                   11) +
                               "e.";
  EXPECT_EQ(p, expected);
}

TEST(ValidUtf8Test, ReplacesBadBytesKeepsGoodOnes) {
  EXPECT_EQ(ValidUtf8("abc"), "abc");
  EXPECT_EQ(ValidUtf8("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(ValidUtf8("a\xff\xfe"
                      "b"),
            "a??b");
  EXPECT_EQ(ValidUtf8("\xe2\x82"), "??");       // truncated
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), "??");       // overlong
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "???");  // surrogate
  EXPECT_EQ(ValidUtf8("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
}

TEST(HtmlReportTest, SelfContainedEscapedWithPlotsAndTables) {
  const std::string html = RenderHtml(MakeVizSample());
  EXPECT_THAT(html, StartsWith("<!DOCTYPE html>"));
  for (const char* id :
       {"memory-plot-0", "memory-plot-1", "memory-plot-host"}) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<svg id=\"", id, "\"")));
  }
  // Nothing fetched from the network: no external script, style or image.
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  // The program's text is escaped.
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, HasSubstr("--name=&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("leak_here&lt;Tag&amp;lt;&amp;&gt;"));
  EXPECT_THAT(html, HasSubstr("/src/a&lt;b&gt;.cu:7"));
  EXPECT_THAT(html, HasSubstr("freed before &lt;twice&gt;"));
  EXPECT_THAT(html, HasSubstr("[libbad??name.so]"));
  // Balanced structure.
  for (const char* tag : {"table", "details", "svg", "script", "ol", "tr"}) {
    EXPECT_EQ(Count(html, absl::StrCat("<", tag, ">")) +
                  Count(html, absl::StrCat("<", tag, " ")),
              Count(html, absl::StrCat("</", tag, ">")))
        << tag;
  }
  for (const char* table :
       {"summary", "devices", "call-sites", "leaks", "errors"}) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<table id=\"", table, "\"")));
  }
  // The embedded series, as the page's script reads it.
  const std::string open = "<script type=\"application/json\" id=\"gmt-data\">";
  size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  begin += open.size();
  const size_t end = html.find("</script>", begin);
  const json data = json::parse(html.substr(begin, end - begin));
  ASSERT_EQ(data["series"]["0"].size(), 3u);
  EXPECT_EQ(data["series"]["0"][1][1], 5 * kVizMiB);
  EXPECT_EQ(data["series"]["-1"].size(), 2u);
  // Top call sites: train_step peaks at 4 MiB, above leak_here's 1 MiB.
  const size_t sites = html.find("<table id=\"call-sites\"");
  const size_t train =
      html.find("train_step(float*, int) (train.cu:42)", sites);
  const size_t leak = html.find("leak_here", sites);
  ASSERT_NE(train, std::string::npos);
  ASSERT_NE(leak, std::string::npos);
  EXPECT_LT(train, leak);
  EXPECT_THAT(html, HasSubstr("<td class=\"n\">4.0 MiB</td>"));
}

TEST(HtmlReportTest, ScriptCannotBeClosedByData) {
  ReportData data = MakeVizSample();
  data.timeline.series[0].clear();
  data.devices[0].name = "</script><b>";
  const std::string html = RenderHtml(data);
  EXPECT_THAT(html, Not(HasSubstr("</script><b>")));
  EXPECT_THAT(html, HasSubstr("GPU 0 (&lt;/script&gt;&lt;b&gt;)"));
}

TEST(HtmlReportTest, WithoutTimelineUsesTheLeaks) {
  ReportData data = MakeVizSample();
  data.timeline = ReportData::Timeline{};
  const std::string html = RenderHtml(data);
  EXPECT_THAT(html, HasSubstr("No timeline was recorded"));
  EXPECT_THAT(html, Not(HasSubstr("<svg id=")));
  const size_t sites = html.find("<table id=\"call-sites\"");
  ASSERT_NE(sites, std::string::npos);
  EXPECT_NE(html.find("leak_here", sites), std::string::npos);
}

TEST(JsonTimelineTest, SeriesAddedOnlyWhenRecorded) {
  json j = json::parse(RenderJson(MakeVizSample()));
  ASSERT_TRUE(j.contains("timeline"));
  EXPECT_EQ(j["timeline"]["events_recorded"], 6);
  EXPECT_EQ(j["timeline"]["events_dropped"], 0);
  EXPECT_EQ(j["timeline"]["series"]["0"][2], json::array({3000000, kVizMiB}));
  ReportData data = MakeVizSample();
  data.timeline = ReportData::Timeline{};
  EXPECT_FALSE(json::parse(RenderJson(data)).contains("timeline"));
}

TEST(VizOptionsTest, FormatsPathsAndTimelineSize) {
  ParseResult r = ParseOptions(
      "report=text,json,html,trace,torch:timeline_events=0:"
      "html_path=a.html:trace_path=t.json:torch_path=s.pickle");
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_TRUE(r.options.report.Has(ReportFormat::kHtml));
  EXPECT_TRUE(r.options.report.Has(ReportFormat::kTrace));
  EXPECT_TRUE(r.options.report.Has(ReportFormat::kTorch));
  ReportFormats pdf;
  std::string why;
  EXPECT_FALSE(ParseOptionValue("pdf", &pdf, &why));
  EXPECT_EQ(r.options.timeline_events, 0);
  EXPECT_EQ(r.options.html_path, "a.html");
  EXPECT_EQ(Options{}.timeline_events, 1 << 20);

  for (const char* bad :
       {"report=html,pdf", "timeline_events=-1", "timeline_events=100000000",
        "html_path=", "torch_path="}) {
    ParseResult b = ParseOptions(bad);
    ASSERT_EQ(b.errors.size(), 1u) << bad;
    const std::string key(bad, std::string(bad).find('='));
    EXPECT_THAT(b.errors[0], HasSubstr(key)) << bad;
  }
}

}  // namespace
}  // namespace gmt
