// The crash report's pure parts: the recent-launch ring, the
// sticky-error table, signal names, options, and the crash section writers.
#include <signal.h>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "lib/core/options.h"
#include "lib/core/sticky_errors.h"
#include "lib/engine/crash_handler.h"
#include "lib/registry/recent_launches.h"
#include "lib/report/report.h"
#include "lib/report/report_crash.h"

namespace gmt {
namespace {

TEST(RecentLaunchesTest, KeepsTheNewestInOrder) {
  RecentLaunches log;
  EXPECT_TRUE(log.Newest(16).empty());
  for (uint32_t i = 1; i <= RecentLaunches::kCapacity + 10; ++i) {
    RecentLaunches::Entry e;
    e.kernel = i;
    e.stream = i * 2;
    e.context = 7;
    e.time_ns = i * 100;
    e.site_count = 2;  // where the program made it, raw
    e.site[0] = 0x1000 + i;
    e.site[1] = 0x2000 + i;
    log.Record(e);
  }
  EXPECT_EQ(log.Count(), RecentLaunches::kCapacity + 10);
  std::vector<RecentLaunches::Entry> newest = log.Newest(3);
  ASSERT_EQ(newest.size(), 3u);
  const uint32_t last = RecentLaunches::kCapacity + 10;
  EXPECT_EQ(newest[0].kernel, last - 2);
  EXPECT_EQ(newest[2].kernel, last);
  EXPECT_EQ(newest[2].stream, uint64_t{last} * 2);
  ASSERT_EQ(newest[2].site_count, 2u);
  EXPECT_EQ(newest[2].site[0], uintptr_t{0x1000} + last);
  EXPECT_EQ(newest[2].site[1], uintptr_t{0x2000} + last);
  EXPECT_EQ(newest[2].context, 7u);
  EXPECT_EQ(newest[2].time_ns, int64_t{last} * 100);
  // Never more than the ring holds, oldest first.
  std::vector<RecentLaunches::Entry> all = log.Newest(1000);
  ASSERT_EQ(all.size(), RecentLaunches::kCapacity);
  EXPECT_EQ(all.front().kernel, 11u);
}

TEST(StickyErrorsTest, TableMatchesCudaNumbers) {
  EXPECT_TRUE(IsStickyCudaError(700));
  EXPECT_STREQ(StickyRuntimeErrorName(700), "cudaErrorIllegalAddress");
  EXPECT_STREQ(StickyDriverErrorName(700), "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_STREQ(StickyRuntimeErrorName(719), "cudaErrorLaunchFailure");
  EXPECT_STREQ(StickyDriverErrorName(719), "CUDA_ERROR_LAUNCH_FAILED");
  for (int code : {710, 714, 715, 716, 717, 718}) {
    EXPECT_TRUE(IsStickyCudaError(code)) << code;
  }
  // Not sticky: out of memory, invalid value, not ready, success.
  for (int code : {0, 1, 2, 600, 999}) {
    EXPECT_FALSE(IsStickyCudaError(code)) << code;
  }
}

TEST(CrashHandlerTest, SignalAndCodeNames) {
  EXPECT_STREQ(CrashSignalName(SIGSEGV), "SIGSEGV");
  EXPECT_STREQ(CrashSignalName(SIGABRT), "SIGABRT");
  EXPECT_STREQ(CrashCodeName(SIGSEGV, SEGV_MAPERR), "SEGV_MAPERR");
  EXPECT_STREQ(CrashCodeName(SIGBUS, BUS_ADRERR), "BUS_ADRERR");
  EXPECT_STREQ(CrashCodeName(SIGABRT, SI_TKILL), "SI_TKILL");
  EXPECT_STREQ(CrashCodeName(SIGSEGV, 12345), "");
}

TEST(CrashOptionsTest, BadValuesNameTheKey) {
  ParseResult ok = ParseOptions("crash_signals=SEGV,ABRT:crash_timeout_s=0");
  EXPECT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.options.crash_signals,
            FatalSignals({FatalSignal::kSegv, FatalSignal::kAbrt}));
  ParseResult bad = ParseOptions("crash_signals=SEGV,HUP");
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_NE(bad.errors[0].find("crash_signals"), std::string::npos)
      << bad.errors[0];
  ParseResult range = ParseOptions("crash_timeout_s=-1");
  ASSERT_FALSE(range.errors.empty());
  EXPECT_NE(range.errors[0].find("crash_timeout_s"), std::string::npos);
  EXPECT_TRUE(Options().crash_report);
}

ReportData SignalCrash() {
  ReportData data;
  data.pid = 42;
  data.reason = "crash";
  ReportData::Crash& c = data.crash;
  c.present = true;
  c.kind = "signal";
  c.signal = SIGSEGV;
  c.signal_name = "SIGSEGV";
  c.code = SEGV_ACCERR;
  c.code_name = "SEGV_ACCERR";
  c.fault_address = 0x1010;
  c.has_fault_address = true;
  c.thread = 99;
  c.has_fault_block = true;
  c.fault_block.api = Api::kCudaMallocHost;
  c.fault_block.kind = MemoryKind::kPinnedHost;
  c.fault_block.address = 0x1000;
  c.fault_block.bytes = 4096;
  c.fault_block.device = kHostDevice;
  c.fault_offset = 0x10;
  c.recent_kernels.push_back({"saxpy(float*)", 0x5, 0x9, 1.5});
  c.launches_seen = 3;
  c.live_blocks = 1;
  c.live_bytes = 4096;
  c.live.push_back(c.fault_block);
  c.skipped.push_back("guard zones: not checked");
  return data;
}

TEST(CrashReportTest, JsonHasSignalFieldsAndBlock) {
  nlohmann::json j = CrashJson(SignalCrash());
  EXPECT_EQ(j["kind"], "signal");
  EXPECT_EQ(j["signal"], SIGSEGV);
  EXPECT_EQ(j["signal_name"], "SIGSEGV");
  EXPECT_EQ(j["code_name"], "SEGV_ACCERR");
  EXPECT_EQ(j["fault_address"], "0x1010");
  EXPECT_EQ(j["thread"], 99);
  EXPECT_EQ(j["fault_block"]["api"], "cudaMallocHost");
  EXPECT_EQ(j["fault_offset"], 16);
  ASSERT_EQ(j["recent_kernels"].size(), 1u);
  EXPECT_EQ(j["recent_kernels"][0]["name"], "saxpy(float*)");
  EXPECT_EQ(j["recent_kernels"][0]["stream"], "0x5");
  EXPECT_EQ(j["live_blocks"], 1);
  EXPECT_EQ(j["live_allocations"][0]["bytes"], 4096);
  EXPECT_FALSE(j.contains("call"));  // no sticky error here
  EXPECT_FALSE(j.contains("recent_kernels_note"));
}

TEST(CrashReportTest, JsonOfStickyErrorHasCallAndNoSignal) {
  ReportData data;
  data.crash.present = true;
  data.crash.kind = "cuda-error";
  data.crash.call = "cudaDeviceSynchronize";
  data.crash.cuda_result = 700;
  data.crash.cuda_result_name = "cudaErrorIllegalAddress";
  data.crash.recent_kernels_note = "no kernel launch was seen";
  nlohmann::json j = CrashJson(data);
  EXPECT_EQ(j["call"], "cudaDeviceSynchronize");
  EXPECT_EQ(j["cuda_result"], 700);
  EXPECT_EQ(j["cuda_error"], "cudaErrorIllegalAddress");
  EXPECT_FALSE(j.contains("signal"));
  EXPECT_TRUE(j["recent_kernels"].empty());
  EXPECT_EQ(j["recent_kernels_note"], "no kernel launch was seen");
}

TEST(CrashReportTest, WritersAddTheSectionOnlyWhenPresent) {
  ReportData plain;
  plain.pid = 42;
  plain.reason = "exit";
  EXPECT_FALSE(nlohmann::json::parse(RenderJson(plain)).contains("crash"));
  EXPECT_EQ(RenderText(plain, 0).find("CRASH"), std::string::npos);

  ReportData data = SignalCrash();
  nlohmann::json j = nlohmann::json::parse(RenderJson(data));
  EXPECT_EQ(j["reason"], "crash");
  EXPECT_EQ(j["crash"]["signal_name"], "SIGSEGV");
  std::string text = RenderText(data, 0);
  EXPECT_NE(text.find("==42== CRASH: SIGSEGV (SEGV_ACCERR) at address 0x1010 "
                      "in thread 99"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("16 bytes into the block cudaMallocHost 0x1000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("saxpy(float*)"), std::string::npos) << text;
  EXPECT_NE(text.find("not done: guard zones: not checked"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace gmt
