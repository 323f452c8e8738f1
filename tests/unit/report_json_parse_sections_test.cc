// lib/report/report_json_parse.h, section by section: each section the JSON
// writer emits (health, reachability, growth, oom, crash, timeline,
// nvtx_ranges, suppressions, thread ids) reads back so that RenderJson and
// RenderText of the parsed report equal those of the original; reports without
// the sections still read; a malformed section is refused with a message naming
// the field. (The report's older fields: tests/cli/report_json_parse_test.cc.)
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/core/clock.h"
#include "lib/report/report.h"
#include "lib/report/report_json_parse.h"
#include "nlohmann/json.hpp"
#include "tests/cli/report_parse_sample.h"

namespace gmt {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

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

struct Section {
  const char* name;
  void (*add)(ReportData&);
  // A piece of the JSON and of the text that only the section produces.
  const char* json_part;
  const char* text_part;
};

const Section kSections[] = {
    {"reachability", sample::AddReachability, "\"heap_chunks\": 1234",
     "reachability: definitely lost"},
    {"growth", sample::AddGrowth, "\"stack_id\": 11", "GROWTH: 1.0 MiB ->"},
    {"oom", sample::AddOom, "\"holders_omitted\": 3", "holder #1: 4.0 MiB"},
    {"threads", sample::AddThreads, "\"thread_os_ids\"", "T3 (tid 5003)"},
    {"health", sample::AddHealth, "\"xid_events\"", "GPU health (NVML):"},
    {"health_unavailable", sample::AddHealthUnavailable, "NVML not found",
     "GPU health: unavailable: NVML not found"},
    {"timeline", sample::AddTimeline, "\"events_dropped\": 12", ""},
    {"nvtx_ranges", sample::AddNvtxRanges, "\"nvtx_ranges\"", "BY NVTX RANGE"},
    {"nvtx_mem", sample::AddNvtxMem, "\"zero_size\": 1",
     "NVTX region 'activations' of a pool (heap 0x1234 'arena') inside the "
     "cudaMalloc block 0x7f0000200000"},
    {"suppressions", sample::AddSuppressions, "\"rule\": \"oom:*\"",
     "suppressed: 2 errors, 5 leaked blocks"},
    {"signal_crash", sample::AddSignalCrash, "\"fault_offset\": 16",
     "CRASH: SIGSEGV (SEGV_ACCERR) at address 0x7e0000001010"},
    {"cuda_error_crash", sample::AddCudaErrorCrash,
     "\"cuda_error\": \"cudaErrorIllegalAddress\"",
     "CRASH: cudaDeviceSynchronize returned cudaErrorIllegalAddress"},
};

void PrintTo(const Section& s, std::ostream* os) { *os << s.name; }

class SectionRoundTrip : public ::testing::TestWithParam<Section> {};

TEST_P(SectionRoundTrip, JsonAndTextOfTheParsedReportAreTheOriginals) {
  const Section& s = GetParam();
  ReportData data = sample::Base();
  s.add(data);
  const std::string original = RenderJson(data);
  // The section is there to be read (and absent from a report without it).
  EXPECT_THAT(original, HasSubstr(s.json_part));
  EXPECT_THAT(RenderJson(sample::Base()), Not(HasSubstr(s.json_part)));
  const ReportData parsed = ParseOk(original);
  EXPECT_EQ(RenderJson(parsed), original);
  const std::string text = RenderText(data, 0);
  EXPECT_THAT(text, HasSubstr(s.text_part));
  EXPECT_EQ(RenderText(parsed, 0), text);
  EXPECT_EQ(RenderText(parsed, 1), RenderText(data, 1));
}

INSTANTIATE_TEST_SUITE_P(EverySection, SectionRoundTrip,
                         ::testing::ValuesIn(kSections),
                         [](const ::testing::TestParamInfo<Section>& info) {
                           return std::string(info.param.name);
                         });

TEST(ReportJsonParseSectionsTest, FullReportRoundTripsExactly) {
  const ReportData data = sample::Full();
  const std::string original = RenderJson(data);
  const ReportData parsed = ParseOk(original);
  EXPECT_EQ(RenderJson(parsed), original);
  EXPECT_EQ(RenderText(parsed, 0), RenderText(data, 0));
  EXPECT_EQ(RenderText(parsed, 50), RenderText(data, 50));
  // And once more: a fixed point.
  EXPECT_EQ(RenderJson(ParseOk(RenderJson(parsed))), original);
}

TEST(ReportJsonParseSectionsTest, ReadsTheSectionsBackFieldByField) {
  const ReportData d = ParseOk(RenderJson(sample::Full()));
  // Numbers past 2^53 are not rounded.
  EXPECT_EQ(d.devices[0].total_bytes, sample::kMax);
  EXPECT_EQ(d.devices[0].peak_bytes, sample::kHuge);
  EXPECT_EQ(d.reachability.bytes_scanned, sample::kMax);
  EXPECT_EQ(d.reachability.lost_bytes, sample::kHuge);
  EXPECT_EQ(d.reachability.ms, 12.345678901234567);
  EXPECT_TRUE(d.reachability.truncated);
  EXPECT_EQ(d.reachability.threads_unknown, 1u);

  ASSERT_EQ(d.growth.size(), 3u);
  EXPECT_EQ(d.growth_samples, 77u);
  EXPECT_EQ(d.growth[0].stack, sample::kGrowthStack);  // the id is kept
  EXPECT_EQ(d.growth[0].last_bytes, sample::kHuge);
  EXPECT_EQ(d.growth[0].last_s, 7.000000001);
  EXPECT_EQ(d.growth[1].last_s, 0.30000000000000004);
  EXPECT_EQ(d.stacks.at(sample::kGrowthStack)[0].function, "grow_cache(int)");
  EXPECT_EQ(d.growth[2].stack, sample::kUnsymbolized);
  EXPECT_FALSE(d.stacks.contains(sample::kUnsymbolized));
  // Fresh ids of other stacks never take a named one.
  for (const ReportData::Leak& leak : d.leaks) {
    EXPECT_NE(leak.stack, sample::kGrowthStack2);
    EXPECT_NE(leak.stack, sample::kUnsymbolized);
  }

  const ErrorRecord* oom = nullptr;
  for (const ErrorRecord& e : d.errors) {
    if (e.kind == ErrorKind::kOom) oom = &e;
  }
  ASSERT_NE(oom, nullptr);
  ASSERT_TRUE(oom->oom.has_value());
  EXPECT_EQ(oom->oom->requested, uint64_t{64} << 30);
  EXPECT_EQ(oom->oom->device_free, sample::kHuge);
  EXPECT_FALSE(oom->oom->device_total.has_value());
  EXPECT_EQ(oom->oom->process_bytes, sample::kMax);
  ASSERT_EQ(oom->oom->holders.size(), 2u);
  EXPECT_EQ(d.stacks.at(oom->oom->holders[0].stack)[0].function,
            "FillDevice()");
  EXPECT_EQ(oom->oom->holders[1].api, Api::kCuMemAlloc);
  ASSERT_EQ(oom->oom->other_processes.size(), 2u);
  EXPECT_EQ(oom->oom->other_processes[0].bytes, uint64_t{4} << 30);
  EXPECT_FALSE(oom->oom->other_processes[1].bytes.has_value());
  EXPECT_EQ(oom->oom->earlier_in_burst, 2u);

  ASSERT_TRUE(d.thread_os_ids.has_value());
  EXPECT_EQ(d.thread_os_ids->at(3), 5003);

  ASSERT_TRUE(d.health_read);
  const HealthReading& h = d.health;
  EXPECT_TRUE(h.available);
  EXPECT_TRUE(h.xid_watched);
  EXPECT_EQ(h.xid_status, "watched on 2 devices");
  ASSERT_EQ(h.xids.size(), 3u);
  EXPECT_EQ(h.xids[1].device, 5);
  EXPECT_EQ(h.xids[1].xid, 48u);
  EXPECT_EQ(h.xids[1].time_s, 2.25);
  EXPECT_EQ(*h.versions.driver.value, "570.86.15");
  EXPECT_FALSE(h.versions.cu_driver_cuda.ok());
  EXPECT_EQ(h.versions.cu_driver_cuda.status, "not seen yet");
  ASSERT_EQ(h.devices.size(), 2u);
  EXPECT_EQ(h.devices[0].uuid, "GPU-0000-0");
  EXPECT_EQ(*h.devices[0].memory_total.value, sample::kMax);
  EXPECT_EQ(h.devices[0].memory_reserved.status, "not supported");
  EXPECT_TRUE(h.devices[0].remapped_rows.value->pending);
  EXPECT_EQ(h.devices[1].remapped_rows.status, "error: Unknown Error");
  EXPECT_EQ(h.devices[1].clock_event_reasons.status, "");

  const ReportData::Crash& c = d.crash;
  ASSERT_TRUE(c.present);
  EXPECT_EQ(c.signal, 11);
  EXPECT_TRUE(c.has_fault_address);
  ASSERT_TRUE(c.has_fault_block);
  EXPECT_EQ(c.fault_block.stack, sample::kGrowthStack);
  EXPECT_EQ(c.fault_block.kind, MemoryKind::kManaged);
  EXPECT_EQ(c.fault_offset, 16);
  ASSERT_EQ(c.recent_kernels.size(), 2u);
  EXPECT_EQ(c.recent_kernels[0].stream, 0x10u);
  EXPECT_EQ(c.recent_kernels[0].time_s, 1.000001);
  EXPECT_EQ(c.launches_seen, sample::kHuge);
  ASSERT_EQ(c.live.size(), 2u);
  EXPECT_EQ(c.live[1].stack, 999u);
  EXPECT_EQ(c.live[1].bytes, sample::kHuge);
  EXPECT_EQ(c.call, "cudaDeviceSynchronize");
  EXPECT_EQ(c.skipped.size(), 2u);

  EXPECT_FALSE(d.timeline.recorded);  // no events in a re-read report
  EXPECT_EQ(d.timeline.recorded_events, sample::kHuge);
  ASSERT_EQ(d.timeline.series.size(), 3u);
  EXPECT_EQ(d.timeline.series.at(0)[2].live_bytes, sample::kMax);
  EXPECT_EQ(d.timeline.series.at(-1)[0].time_ns, -5);
  EXPECT_TRUE(d.timeline.series.at(1).empty());

  ASSERT_EQ(d.nvtx_ranges.size(), 2u);
  EXPECT_EQ(d.nvtx_ranges[0].name, "train/forward");
  EXPECT_EQ(d.nvtx_ranges[0].bytes, sample::kHuge);
  ASSERT_EQ(d.suppressions.size(), 2u);
  EXPECT_EQ(d.suppressions[1].line, 4);

  EXPECT_TRUE(d.nvtx_mem.used);
  EXPECT_EQ(d.nvtx_mem.regions_registered, sample::kHuge);
  EXPECT_EQ(d.nvtx_mem.live_region_bytes, sample::kMax);
  ASSERT_EQ(d.nvtx_mem.problems.size(), 2u);
  EXPECT_EQ(d.nvtx_mem.problems[1].first, "zero_size");
  const ReportData::Leak* region = nullptr;
  for (const ReportData::Leak& leak : d.leaks) {
    if (leak.api == Api::kNvtxRegion && leak.pool_block != 0) region = &leak;
  }
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->pool_api, Api::kCudaMalloc);
  EXPECT_EQ(region->heap, 0x1234u);
  EXPECT_EQ(region->heap_name, "arena");
  EXPECT_EQ(region->region_name, "activations");
  EXPECT_EQ(d.leaks[0].nvtx_region_bytes, 8192u);
}

// A live report: the thread ids come from this process and are saved.
TEST(ReportJsonParseSectionsTest, ThreadIdsOfALiveReportAreSaved) {
  ReportData data = sample::Base();
  ErrorRecord e;
  e.kind = ErrorKind::kInvalidFree;
  e.api = Api::kCudaFree;
  e.thread = CurrentThreadIndex();
  e.detail = "not an allocation";
  data.errors.push_back(e);
  const std::string text = RenderText(data, 0);
  ASSERT_THAT(text, HasSubstr(" (tid "));
  const std::string original = RenderJson(data);
  EXPECT_THAT(original, HasSubstr("\"thread_os_ids\""));
  const ReportData parsed = ParseOk(original);
  EXPECT_EQ(RenderText(parsed, 0), text);
  EXPECT_EQ(RenderJson(parsed), original);
}

// The timeline section of a run that recorded nothing is kept as it was.
TEST(ReportJsonParseSectionsTest, EmptyTimelineSectionIsKept) {
  ReportData data = sample::Base();
  data.timeline.recorded = true;
  data.timeline.capacity = 64;
  const std::string original = RenderJson(data);
  ASSERT_THAT(original, HasSubstr("\"timeline\""));
  EXPECT_EQ(RenderJson(ParseOk(original)), original);
}

// Reports written before a section existed read, with the section's
// defaults.
TEST(ReportJsonParseSectionsTest, ReportsWithoutTheNewSectionsRead) {
  const json full = json::parse(RenderJson(sample::Full()));
  for (const char* key :
       {"health", "reachability", "growth", "growth_samples", "timeline",
        "crash", "nvtx_ranges", "nvtx_mem", "thread_os_ids", "suppressions"}) {
    SCOPED_TRACE(key);
    json doc = full;
    ASSERT_TRUE(doc.contains(key));
    doc.erase(key);
    const ReportData d = ParseOk(doc.dump());
    // What the rest says is still read.
    EXPECT_EQ(d.devices.size(), 2u);
    EXPECT_EQ(d.leaks.size(), full["leaks"].size());
  }
  json doc = full;
  for (const char* key : {"health", "reachability", "growth", "timeline",
                          "crash", "nvtx_ranges", "thread_os_ids"}) {
    doc.erase(key);
  }
  for (json& e : doc["errors"]) {
    for (const char* key :
         {"requested", "device", "device_free", "device_total",
          "meminfo_status", "process_bytes", "process_blocks", "holders",
          "holders_omitted", "other_processes", "other_processes_status",
          "reading", "unreported_previous_burst"}) {
      e.erase(key);
    }
  }
  const ReportData d = ParseOk(doc.dump());
  EXPECT_FALSE(d.health_read);
  EXPECT_FALSE(d.reachability.ran);
  EXPECT_TRUE(d.growth.empty());
  EXPECT_FALSE(d.crash.present);
  EXPECT_TRUE(d.timeline.series.empty());
  EXPECT_FALSE(d.timeline.from_json);
  for (const ErrorRecord& e : d.errors) EXPECT_FALSE(e.oom.has_value());
  // Threads without saved ids print without one.
  EXPECT_THAT(RenderText(d, 0), HasSubstr("by thread T2 here"));
}

// Reports written before health.xid_events existed had Xid events only per
// listed device.
TEST(ReportJsonParseSectionsTest, OlderHealthTakesXidEventsFromTheDevices) {
  ReportData data = sample::Base();
  sample::AddHealth(data);
  json doc = json::parse(RenderJson(data));
  doc["health"].erase("xid_events");
  doc["health"].erase("xid_watched");
  const ReportData d = ParseOk(doc.dump());
  ASSERT_EQ(d.health.xids.size(), 2u);  // device 5's was never saved
  EXPECT_EQ(d.health.xids[0].device, 0);
  EXPECT_EQ(d.health.xids[0].xid, 79u);
  EXPECT_EQ(d.health.xids[1].device, 1);
  EXPECT_EQ(d.health.xids[1].time_s, 3.0);
}

std::string WithField(const std::string& pointer, const json& value) {
  json doc = json::parse(RenderJson(sample::Full()));
  doc[json::json_pointer(pointer)] = value;
  return doc.dump();
}

std::string Without(const std::string& pointer) {
  json doc = json::parse(RenderJson(sample::Full()));
  const json::json_pointer p(pointer);
  doc[p.parent_pointer()].erase(p.back());
  return doc.dump();
}

// The index of the oom error in sample::Full()'s "errors".
std::string OomError() {
  const json doc = json::parse(RenderJson(sample::Full()));
  for (size_t i = 0; i < doc["errors"].size(); ++i) {
    if (doc["errors"][i]["kind"] == "oom")
      return "/errors/" + std::to_string(i);
  }
  ADD_FAILURE() << "no oom error";
  return "/errors/0";
}

TEST(ReportJsonParseSectionsTest, MalformedSectionsNameTheField) {
  const std::string oom = OomError();
  const std::string at = "errors[" + oom.substr(oom.rfind('/') + 1) + "]";
  struct Case {
    std::string pointer;
    json value;
    std::string message;
  } cases[] = {
      // Numbers: integers only, within the field's type.
      {"/summary/leaked_bytes", json::parse("18446744073709551616"),
       "summary.leaked_bytes: expected an unsigned integer"},
      {"/reachability/bytes_scanned", 1e3,
       "reachability.bytes_scanned: expected an unsigned integer"},
      // health
      {"/health", "ok", "health: expected an object"},
      {"/health/available", "yes", "health.available: expected true or false"},
      {"/health/devices", json::object(), "health.devices: expected an array"},
      {"/health/devices/0", 1, "health.devices[0]: expected an object"},
      {"/health/devices/0/gpu_temp_c", -1,
       "health.devices[0].gpu_temp_c: out of range"},
      {"/health/devices/0/gpu_temp_c", 1ull << 33,
       "health.devices[0].gpu_temp_c: out of range"},
      {"/health/devices/0/memory_total_bytes", 1.0,
       "health.devices[0].memory_total_bytes: expected an unsigned integer"},
      {"/health/devices/0/ecc_enabled", 1,
       "health.devices[0].ecc_enabled: expected true or false"},
      {"/health/devices/0/missing/memory_temp_c", 5,
       "health.devices[0].missing.memory_temp_c: expected a string"},
      {"/health/devices/0/missing", json::array(),
       "health.devices[0].missing: expected an object"},
      {"/health/devices/0/remapped_rows", "x",
       "health.devices[0].remapped_rows: expected an object"},
      {"/health/devices/0/remapped_rows/pending", "no",
       "health.devices[0].remapped_rows.pending: expected true or false"},
      {"/health/versions/driver_version", 570,
       "health.versions.driver_version: expected a string"},
      {"/health/versions/runtime_cuda_version", "12.4",
       "health.versions.runtime_cuda_version: expected an integer"},
      {"/health/xid_events/1/xid", "79",
       "health.xid_events[1].xid: expected an unsigned integer"},
      {"/health/xid_events/0/time_s", "soon",
       "health.xid_events[0].time_s: expected a number"},
      {"/health/xid_events/0/device", 1ull << 40,
       "health.xid_events[0].device: out of range"},
      {"/health/xid_watched", "yes",
       "health.xid_watched: expected true or false"},
      // reachability
      {"/reachability", json::array(), "reachability: expected an object"},
      {"/reachability/ms", "fast", "reachability.ms: expected a number"},
      {"/reachability/lost_bytes", -1,
       "reachability.lost_bytes: expected an unsigned integer"},
      {"/reachability/truncated", 1,
       "reachability.truncated: expected true or false"},
      // growth
      {"/growth", json::object(), "growth: expected an array"},
      {"/growth/0", "site", "growth[0]: expected an object"},
      {"/growth/0/rises", 1ull << 32, "growth[0].rises: out of range"},
      {"/growth/0/first_s", "x", "growth[0].first_s: expected a number"},
      {"/growth/0/stack_id", -3, "growth[0].stack_id: out of range"},
      {"/growth/1/stack_id", sample::kGrowthStack,
       "growth[1].stack: differs from the stack of growth[0] (same stack_id "
       "11)"},
      {"/growth/0/stack/0/line", "30", "growth[0].stack[0].line"},
      {"/growth/0/stack_id", 0,
       "growth[0].stack: frames given for stack_id 0 (none)"},
      {"/growth_samples", -1, "growth_samples: expected an unsigned integer"},
      // timeline
      {"/timeline", 5, "timeline: expected an object"},
      {"/timeline/capacity", 1.5,
       "timeline.capacity: expected an unsigned integer"},
      {"/timeline/series", json::array(),
       "timeline.series: expected an object"},
      {"/timeline/series/0", json::object(),
       "timeline.series.0: expected an array of points"},
      {"/timeline/series/0/1", json::array({1}),
       "timeline.series.0[1]: expected [time_ns, live_bytes]"},
      {"/timeline/series/0/0/1", -5,
       "timeline.series.0[0][1]: expected an unsigned integer"},
      {"/timeline/series/0/0/0", "t",
       "timeline.series.0[0][0]: expected an integer"},
      {"/timeline/series/gpu", json::array(),
       "timeline.series.gpu: expected a device index as the key"},
      {"/timeline/series/01", json::array(),
       "timeline.series.01: expected a device index as the key"},
      // nvtx_ranges
      {"/nvtx_ranges", "train", "nvtx_ranges: expected an array"},
      {"/nvtx_ranges/0/range", 3, "nvtx_ranges[0].range: expected a string"},
      {"/nvtx_ranges/1/live_bytes", "0",
       "nvtx_ranges[1].live_bytes: expected an unsigned integer"},
      // crash
      {"/crash", json::array(), "crash: expected an object"},
      {"/crash/signal", "SIGSEGV", "crash.signal: expected an integer"},
      {"/crash/signal", 0, "crash.signal_name: given without a signal"},
      {"/crash/fault_address", "here",
       "crash.fault_address: expected an address"},
      {"/crash/fault_block", 5, "crash.fault_block: expected an object"},
      {"/crash/fault_block/address", "0xZZ",
       "crash.fault_block.address: expected an address"},
      {"/crash/fault_block/stack_id", -1,
       "crash.fault_block.stack_id: out of range"},
      {"/crash/fault_offset", "16", "crash.fault_offset: expected an integer"},
      {"/crash/recent_kernels", json::object(),
       "crash.recent_kernels: expected an array"},
      {"/crash/recent_kernels/0/stream", 5.5,
       "crash.recent_kernels[0].stream: expected an address"},
      {"/crash/recent_kernels/1/time_s", "late",
       "crash.recent_kernels[1].time_s: expected a number"},
      {"/crash/live_allocations/1/stack_id", "x",
       "crash.live_allocations[1].stack_id: expected an integer"},
      {"/crash/live_allocations/0/bytes", -1,
       "crash.live_allocations[0].bytes: expected an unsigned integer"},
      {"/crash/skipped/0", 1, "crash.skipped[0]: expected a string"},
      {"/crash/live_bytes", true,
       "crash.live_bytes: expected an unsigned integer"},
      {"/crash/call", "", "crash.cuda_result: given without the call"},
      // oom
      {oom + "/requested", "big", at + ".requested: expected an unsigned"},
      {oom + "/device_free", -1, at + ".device_free: expected an unsigned"},
      {oom + "/device", "0", at + ".device: expected an integer"},
      {oom + "/holders", json::object(), at + ".holders: expected an array"},
      {oom + "/holders/0", 4, at + ".holders[0]: expected an object"},
      {oom + "/holders/0/stack/0/line", "x", at + ".holders[0].stack[0].line"},
      {oom + "/other_processes/0/pid", -1,
       at + ".other_processes[0].pid: out of range"},
      {oom + "/other_processes/1/bytes", "hidden",
       at + ".other_processes[1].bytes: expected an unsigned integer"},
      {oom + "/unreported_previous_burst", 1.5,
       at + ".unreported_previous_burst: expected an unsigned integer"},
      // nvtx_mem and NVTX regions
      {"/nvtx_mem", json::array(), "nvtx_mem: expected an object"},
      {"/nvtx_mem/live_regions", -3,
       "nvtx_mem.live_regions: expected an unsigned integer"},
      {"/nvtx_mem/problems", json::array(),
       "nvtx_mem.problems: expected an object"},
      {"/nvtx_mem/problems/zero_size", "1",
       "nvtx_mem.problems.zero_size: expected an unsigned integer"},
      {"/leaks/0/nvtx_regions", 1.5,
       "leaks[0].nvtx_regions: expected an unsigned integer"},
      {"/leaks/0/pool_block", "block",
       "leaks[0].pool_block: expected an address"},
      {"/leaks/0/pool_api", 1, "leaks[0].pool_api: expected a string"},
      {"/leaks/0/heap_name", json::array(),
       "leaks[0].heap_name: expected a string"},
      // thread ids
      {"/thread_os_ids", json::object(), "thread_os_ids: expected an array"},
      {"/thread_os_ids/0/tid", "x",
       "thread_os_ids[0].tid: expected an integer"},
      {"/thread_os_ids/1/thread", 1,
       "thread_os_ids[1].thread: thread 1 is listed twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    EXPECT_THAT(ParseError(WithField(c.pointer, c.value)),
                HasSubstr(c.message));
  }
}

TEST(ReportJsonParseSectionsTest, FieldsTheWriterWouldDropAreRefused) {
  EXPECT_THAT(ParseError(Without("/crash/signal")),
              HasSubstr("crash.signal_name: given without a signal"));
  EXPECT_THAT(ParseError(Without("/crash/fault_block")),
              HasSubstr("crash.fault_offset: given without a fault_block"));
  EXPECT_THAT(ParseError(Without("/crash/call")),
              HasSubstr("crash.cuda_result: given without the call"));
}

TEST(ReportJsonParseSectionsTest, NullMeansAbsentInTheNewSections) {
  // A null health figure without a reason keeps the default reason.
  ReportData d = ParseOk(Without("/health/devices/0/missing"));
  EXPECT_FALSE(d.health.devices[0].memory_temp_c.ok());
  EXPECT_EQ(d.health.devices[0].memory_temp_c.status, "not read");
  // fault_block null: the fault is in no tracked block.
  json doc = json::parse(RenderJson(sample::Full()));
  doc["crash"]["fault_block"] = nullptr;
  doc["crash"].erase("fault_offset");
  d = ParseOk(doc.dump());
  EXPECT_FALSE(d.crash.has_fault_block);
  EXPECT_EQ(RenderJson(ParseOk(RenderJson(d))), RenderJson(d));
}

}  // namespace
}  // namespace gmt
