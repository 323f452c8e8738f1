// lib/report/report_json_parse.h: a saved JSON report read back into
// ReportData. Round trips through the real writers (RenderJson, RenderText) and
// every kind of bad input, each refused with a message naming the place.
#include "lib/report/report_json_parse.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/core/clock.h"
#include "lib/report/report.h"
#include "nlohmann/json.hpp"

namespace gmt {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr StackId kLeakStack = 7;
constexpr StackId kErrorStack = 8;
constexpr StackId kAllocStack = 9;
constexpr StackId kFreeStack = 10;

std::vector<SymbolizedFrame> Stack(const std::string& function, int line) {
  return {SymbolizedFrame{0x401000, function, "/src/app.cu", line, "app"},
          // Not symbolized: no file, so the writer prints no file/line.
          SymbolizedFrame{0x7f00dead0000, "", "", 0, "libfoo.so"}};
}

// Every field the JSON writer prints, with values unlike the defaults.
ReportData FullReport() {
  ReportData d;
  d.version = "1.2.3";
  d.pid = 31337;
  d.argv = {"./app", "--n", "3"};
  d.reason = "exit";
  d.devices.push_back(
      {0, "NVIDIA H200", 150ull << 30, 12ull << 20, 8ull << 20, 5, 3});
  d.devices.push_back({1, "", 0, 4096, 0, 1, 1});
  d.host = {-1, "", 0, 1 << 20, 0, 1, 0};
  d.summary = {6, 4, 8ull << 20, 2, 3, 9ull << 20, 1, 5, 6};
  d.leak_check = true;

  ReportData::Leak leak;
  leak.api = Api::kCudaMalloc;
  leak.kind = MemoryKind::kDevice;
  leak.device = 0;
  leak.stack = kLeakStack;
  leak.bytes = 8ull << 20;
  leak.count = 2;
  leak.address = 0x7f0000200000;
  leak.suppression = "leak:make_buffers";
  d.leaks.push_back(leak);
  ReportData::Leak pinned;
  pinned.api = Api::kCudaMallocHost;
  pinned.kind = MemoryKind::kPinnedHost;
  pinned.device = -1;
  pinned.bytes = 1 << 20;
  pinned.count = 1;
  pinned.address = 0x7e0000000000;
  pinned.released_by = "cudaDeviceReset";
  d.leaks.push_back(pinned);

  ErrorRecord oob;
  oob.kind = ErrorKind::kOobWrite;
  oob.api = Api::kCudaFree;
  oob.address = 0x7f0000400000;
  oob.offset = 1000;
  oob.bytes = 12;
  oob.stack = kErrorStack;
  oob.thread = 2;
  oob.time_ns = -SinceStartNs(0) + 1234567891;  // 1.234567891 s
  oob.cuda_result = 0;
  oob.cuda_result_name = "cudaSuccess";
  oob.detail = "12 bytes after the end";
  oob.has_range = true;
  oob.first_offset = 1000;
  oob.last_offset = 1011;
  oob.changed_bytes = 12;
  oob.kernels = {"fill(float*, long)", "other()"};
  oob.kernels_omitted = 3;
  oob.check = "sync";
  oob.suspects_checked = true;
  AllocationRecord block;
  block.address = 0x7f0000400000;
  block.bytes = 1000;
  block.api = Api::kCudaMalloc;
  block.kind = MemoryKind::kDevice;
  block.device = 0;
  block.thread = 1;
  block.time_ns = -SinceStartNs(0) + 500000000;  // 0.5 s
  block.stack = kAllocStack;
  oob.allocation = block;
  d.errors.push_back(oob);

  ErrorRecord twice;
  twice.kind = ErrorKind::kDoubleFree;
  twice.api = Api::kCudaFree;
  twice.address = 0x7f0000500000;
  twice.offset = -16;
  twice.bytes = 4096;
  twice.cuda_result = 1;
  twice.cuda_result_name = "cudaErrorInvalidValue";
  twice.call = "cudaFree";
  twice.suppression = "double-free:release_twice";
  twice.allocation = block;
  FreedRecord first;
  first.allocation = block;
  first.free_api = Api::kCudaFree;
  first.free_thread = 4;
  first.free_stack = kFreeStack;
  twice.previous_free = first;
  d.errors.push_back(twice);
  d.errors_dropped = 17;

  d.guard = {true, "kernel", 10, 1, 2, 30, 1, 0, 1 << 20, 4096, 2};
  d.suppressions.push_back({"leak:make_buffers", "/tmp/s.supp", 3, 1});
  d.stacks[kLeakStack] = Stack("make_buffers(int)", 12);
  d.stacks[kErrorStack] = Stack("sync_point()", 40);
  d.stacks[kAllocStack] = Stack("alloc_one()", 10);
  d.stacks[kFreeStack] = Stack("release_once()", 20);
  d.notes = {"first note", "second note"};
  return d;
}

ReportData ParseOk(const std::string& text) {
  ReportData d;
  std::string error;
  EXPECT_TRUE(ParseReportJson(text, &d, &error)) << error << "\n" << text;
  return d;
}

std::string ParseError(const std::string& text) {
  ReportData d;
  std::string error;
  EXPECT_FALSE(ParseReportJson(text, &d, &error)) << text;
  EXPECT_FALSE(error.empty());
  return error;
}

// A valid report with one field replaced (a JSON pointer) by `value`.
std::string WithField(const std::string& pointer, const json& value) {
  json doc = json::parse(RenderJson(FullReport()));
  doc[json::json_pointer(pointer)] = value;
  return doc.dump();
}

TEST(ReportJsonParseTest, JsonRoundTripIsExact) {
  const std::string original = RenderJson(FullReport());
  const ReportData parsed = ParseOk(original);
  EXPECT_EQ(RenderJson(parsed), original);
}

TEST(ReportJsonParseTest, TextOfTheParsedReportEqualsTheOriginalText) {
  const ReportData data = FullReport();
  const ReportData parsed = ParseOk(RenderJson(data));
  EXPECT_EQ(RenderText(parsed, 0), RenderText(data, 0));
  EXPECT_EQ(RenderText(parsed, 1), RenderText(data, 1));
}

TEST(ReportJsonParseTest, ReadsTheFieldsBack) {
  const ReportData d = ParseOk(RenderJson(FullReport()));
  EXPECT_EQ(d.pid, 31337);
  ASSERT_EQ(d.argv.size(), 3u);
  EXPECT_EQ(d.argv[2], "3");
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(d.devices[0].total_bytes, 150ull << 30);
  ASSERT_EQ(d.leaks.size(), 2u);
  EXPECT_EQ(d.leaks[0].api, Api::kCudaMalloc);
  EXPECT_EQ(d.leaks[1].kind, MemoryKind::kPinnedHost);
  EXPECT_EQ(d.leaks[1].released_by, "cudaDeviceReset");
  EXPECT_EQ(d.leaks[0].address, 0x7f0000200000u);
  ASSERT_EQ(d.errors.size(), 2u);
  EXPECT_EQ(d.errors[0].kind, ErrorKind::kOobWrite);
  EXPECT_TRUE(d.errors[0].has_range);
  EXPECT_EQ(d.errors[0].last_offset, 1011);
  EXPECT_TRUE(d.errors[0].suspects_checked);
  EXPECT_FALSE(d.errors[1].suspects_checked);
  EXPECT_THAT(RenderText(d, 0),
              HasSubstr("these kernels are now checked after each launch "
                        "(suspect_checks)"));
  EXPECT_EQ(SinceStartNs(d.errors[0].time_ns), 1234567891);
  EXPECT_EQ(d.errors[1].offset, -16);
  ASSERT_TRUE(d.errors[1].previous_free.has_value());
  EXPECT_EQ(d.errors[1].previous_free->free_thread, 4u);
  const auto& frames = d.stacks.at(d.errors[1].previous_free->free_stack);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "release_once()");
  EXPECT_EQ(frames[0].line, 20);
  EXPECT_EQ(frames[1].module, "libfoo.so");
  EXPECT_EQ(d.guard.check, "kernel");
  EXPECT_EQ(d.summary.suppressed_leaks, 6u);
  ASSERT_EQ(d.suppressions.size(), 1u);
  EXPECT_EQ(d.suppressions[0].line, 3);
}

TEST(ReportJsonParseTest, MinimalAndDesignExampleReportsRead) {
  const ReportData d = ParseOk(R"({"tool": "gpumemtrace"})");
  EXPECT_TRUE(d.leaks.empty());
  // DESIGN §5's example, as written there (numbers for addresses too).
  const ReportData e = ParseOk(R"json({
    "tool": "gpumemtrace", "version": "x.y.z", "pid": 123, "argv": ["./app"],
    "devices": [{"index": 0, "name": "NVIDIA H200", "total_bytes": 0,
                 "peak_bytes": 0, "health": {"available": false}}],
    "summary": {"allocations": 0, "frees": 0, "live_bytes_at_exit": 0,
                "errors": 0, "leaks": 0},
    "leaks": [{"api": "cudaMalloc", "bytes": 0, "count": 1, "address": 4096,
               "device": 0, "state": "lost",
               "stack": [{"function": "main", "file": "app.cu", "line": 12,
                          "module": "app"}]}],
    "errors": [{"kind": "oob-write", "address": "0x1000", "offset": 4000,
                "bytes": 4, "kernels": ["k()"], "stack": []}]})json");
  ASSERT_EQ(e.leaks.size(), 1u);
  EXPECT_EQ(e.leaks[0].address, 4096u);
  EXPECT_EQ(e.stacks.at(e.leaks[0].stack)[0].function, "main");
  ASSERT_EQ(e.errors.size(), 1u);
  EXPECT_EQ(e.errors[0].stack, kNoStack);
}

TEST(ReportJsonParseTest, UnknownFieldsAreIgnored) {
  json doc = json::parse(RenderJson(FullReport()));
  doc["from_the_future"] = {{"x", 1}};
  doc["leaks"][0]["new_leak_field"] = "x";
  doc["errors"][0]["new_field"] = json::array({1, 2});
  const ReportData d = ParseOk(doc.dump());
  EXPECT_EQ(RenderJson(d), RenderJson(FullReport()));
}

TEST(ReportJsonParseTest, LeakStateReachableViaAndRangeRoundTrip) {
  ReportData data = FullReport();
  data.leaks[0].state = "reachable";
  data.leaks[0].reachable_via = "globals of app (word at 0x1000)";
  data.leaks[0].nvtx_range = "train/forward";
  const ReportData d = ParseOk(RenderJson(data));
  EXPECT_EQ(d.leaks[0].state, "reachable");
  EXPECT_EQ(d.leaks[0].reachable_via, "globals of app (word at 0x1000)");
  EXPECT_EQ(d.leaks[0].nvtx_range, "train/forward");
}

TEST(ReportJsonParseTest, UnknownApiNameBecomesUnknownWithANote) {
  const ReportData d = ParseOk(WithField("/leaks/0/api", "cuMemAllocFuture"));
  EXPECT_EQ(d.leaks[0].api, Api::kUnknown);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_THAT(d.notes.back(), HasSubstr("leaks[0].api"));
  EXPECT_THAT(d.notes.back(), HasSubstr("cuMemAllocFuture"));
}

TEST(ReportJsonParseTest, NotJsonSaysWhere) {
  EXPECT_THAT(ParseError("{\"tool\": \"gpumemtrace\","), HasSubstr("not JSON"));
  EXPECT_THAT(ParseError(""), HasSubstr("not JSON"));
  EXPECT_THAT(ParseError("\xff\xfe"), HasSubstr("not JSON"));
}

TEST(ReportJsonParseTest, ForeignDocumentsAreRefused) {
  EXPECT_THAT(ParseError("[1, 2]"), HasSubstr("not a gpumemtrace report"));
  EXPECT_THAT(ParseError("42"), HasSubstr("not a gpumemtrace report"));
  EXPECT_THAT(ParseError(R"({"tool": "valgrind"})"),
              HasSubstr("not a gpumemtrace report"));
  EXPECT_THAT(ParseError(R"({"tool": 1})"),
              HasSubstr("not a gpumemtrace report"));
  EXPECT_THAT(ParseError(R"({"active": true, "allocations": []})"),
              HasSubstr("report --diff"));
}

TEST(ReportJsonParseTest, WrongTypesNameTheField) {
  struct Case {
    const char* pointer;
    json value;
    const char* message;
  } cases[] = {
      {"/pid", "123", "pid: expected an integer"},
      {"/pid", 1ull << 40, "pid: out of range"},
      {"/argv", "./app", "argv: expected an array of strings"},
      {"/argv/1", 5, "argv[1]: expected a string"},
      {"/devices", json::object(), "devices: expected an array"},
      {"/devices/1/total_bytes", -1,
       "devices[1].total_bytes: expected an "
       "unsigned integer"},
      {"/devices/0/total_bytes", 1.5, "devices[0].total_bytes"},
      {"/host", json::array(), "host: expected an object"},
      {"/summary/leaks", "3", "summary.leaks: expected an unsigned integer"},
      {"/leak_check", 1, "leak_check: expected true or false"},
      {"/leaks/0", 3, "leaks[0]: expected an object"},
      {"/leaks/0/address", "0xZZ", "leaks[0].address: expected an address"},
      {"/leaks/0/address", "0x", "leaks[0].address"},
      {"/leaks/0/address", "0x1234567890abcdef0", "leaks[0].address"},
      {"/leaks/0/address", -5, "leaks[0].address"},
      {"/leaks/0/stack", "main", "leaks[0].stack: expected an array"},
      {"/leaks/0/stack/0/line", "12", "leaks[0].stack[0].line"},
      {"/leaks/0/stack/1", json::array(),
       "leaks[0].stack[1]: expected an "
       "object"},
      {"/errors/0/kind", "oob-read",
       "errors[0].kind: unknown error kind "
       "'oob-read'"},
      {"/errors/0/offset", 1e300, "errors[0].offset: expected an integer"},
      {"/errors/0/time_s", "soon", "errors[0].time_s: expected a number"},
      {"/errors/0/time_s", 1e300, "errors[0].time_s: out of range"},
      {"/errors/0/kernels/1", json::object(), "errors[0].kernels[1]"},
      {"/errors/0/allocation/bytes", true,
       "errors[0].allocation.bytes: expected an unsigned integer"},
      {"/errors/1/first_free/thread", -1,
       "errors[1].first_free.thread: out "
       "of range"},
      {"/errors/0/thread", 1ull << 33, "errors[0].thread: out of range"},
      {"/guard/enabled", "yes", "guard.enabled: expected true or false"},
      {"/suppressions/0/hits", "1", "suppressions[0].hits"},
      {"/notes", json::array({1}), "notes[0]: expected a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    EXPECT_THAT(ParseError(WithField(c.pointer, c.value)),
                HasSubstr(c.message));
  }
}

TEST(ReportJsonParseTest, AnErrorWithoutAKindIsRefused) {
  json doc = json::parse(RenderJson(FullReport()));
  doc["errors"][0].erase("kind");
  EXPECT_THAT(ParseError(doc.dump()), HasSubstr("errors[0].kind: missing"));
}

TEST(ReportJsonParseTest, NullMeansAbsent) {
  const ReportData d = ParseOk(WithField("/leaks/0/released_by", nullptr));
  EXPECT_EQ(d.leaks[0].released_by, "");
}

}  // namespace
}  // namespace gmt
