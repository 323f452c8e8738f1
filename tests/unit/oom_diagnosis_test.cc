// OOM diagnosis: the pure diagnosis and the burst limiter.
#include "lib/health/oom_diagnosis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/report/report.h"

namespace gmt {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

AllocationRecord Block(uint64_t bytes, StackId stack, int device = 0,
                       Api api = Api::kCudaMalloc,
                       MemoryKind kind = MemoryKind::kDevice) {
  AllocationRecord r;
  r.bytes = bytes;
  r.stack = stack;
  r.device = device;
  r.api = api;
  r.kind = kind;
  return r;
}

std::string Name(StackId id) {
  return id == 7 ? "fill_card (app.cu:42)" : "other_site";
}

OomInput FullCard() {
  OomInput in;
  in.api = Api::kCudaMalloc;
  in.requested = 2 * kGiB;
  in.device = 0;
  in.device_name = "NVIDIA H200";
  in.device_free = kGiB / 2;
  in.device_total = 140 * kGiB;
  in.self_pid = 100;
  for (int i = 0; i < 60; ++i) in.live.push_back(Block(2 * kGiB, 7));
  in.live.push_back(Block(kGiB, 8));
  in.live.push_back(Block(kGiB, 8));
  in.live.push_back(Block(5 * kGiB, 9, /*device=*/1));  // another device
  in.live.push_back(Block(kGiB, 9, 0, Api::kCudaMallocHost,
                          MemoryKind::kPinnedHost));  // not device memory
  in.processes = {{100, "self", 126 * kGiB}, {200, "python3", 3 * kGiB}};
  return in;
}

TEST(DiagnoseOom, GroupsHoldersLargestFirstAndNamesTheLargest) {
  OomDiagnosis d = DiagnoseOom(FullCard(), Name);
  EXPECT_EQ(d.requested, 2 * kGiB);
  EXPECT_EQ(*d.device_total, 140 * kGiB);
  EXPECT_EQ(*d.device_free, kGiB / 2);
  EXPECT_EQ(d.process_bytes, 122 * kGiB);
  EXPECT_EQ(d.process_blocks, 62u);
  ASSERT_EQ(d.holders.size(), 2u);
  EXPECT_EQ(d.holders[0].stack, 7u);
  EXPECT_EQ(d.holders[0].bytes, 120 * kGiB);
  EXPECT_EQ(d.holders[0].count, 60u);
  EXPECT_EQ(d.holders[1].stack, 8u);
  EXPECT_EQ(d.holders[1].count, 2u);
  // This process is not "another process".
  ASSERT_EQ(d.other_processes.size(), 1u);
  EXPECT_EQ(d.other_processes[0].pid, 200u);
  EXPECT_EQ(d.other_processes[0].name, "python3");
  EXPECT_NE(
      d.reading.find("cudaMalloc of 2.0 GiB failed on device 0 (NVIDIA H200)"),
      std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("512.0 MiB free of 140.0 GiB"), std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("(87% of the card)"), std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("the largest holder is fill_card (app.cu:42) with "
                           "120.0 GiB in 60 cudaMalloc blocks"),
            std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("1 other process holds 3.0 GiB"), std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("This program itself filled the card"),
            std::string::npos)
      << d.reading;
}

TEST(DiagnoseOom, GuardedBlocksCountTheirRawSize) {
  OomInput in = FullCard();
  in.live.clear();
  AllocationRecord b = Block(1000, 7);
  b.raw_bytes = 4096;
  in.live.push_back(b);
  OomDiagnosis d = DiagnoseOom(in, Name);
  EXPECT_EQ(d.process_bytes, 4096u);
}

TEST(DiagnoseOom, OtherProcessesHoldingTheCardAreBlamed) {
  OomInput in = FullCard();
  in.live = {Block(kGiB, 7)};
  in.processes = {{300, "trainer", 130 * kGiB}, {301, "", std::nullopt}};
  OomDiagnosis d = DiagnoseOom(in, Name);
  ASSERT_EQ(d.other_processes.size(), 2u);
  EXPECT_EQ(d.other_processes[0].pid, 300u);
  EXPECT_FALSE(d.other_processes[1].bytes.has_value());
  EXPECT_NE(d.reading.find("2 other processes hold 130.0 GiB (some amounts "
                           "hidden by NVML); the largest is pid 300 (trainer)"),
            std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("mostly held by other processes"), std::string::npos)
      << d.reading;
}

TEST(DiagnoseOom, MissingFiguresAreSaid) {
  OomInput in = FullCard();
  in.device_free.reset();
  in.device_total.reset();
  in.meminfo_status = "no current CUDA context";
  in.processes.clear();
  in.processes_status = "NVML unavailable: libnvidia-ml.so.1 not found";
  OomDiagnosis d = DiagnoseOom(in, Name);
  EXPECT_NE(d.reading.find("(free/total memory unknown: no current CUDA "
                           "context)"),
            std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("Other processes: not visible (NVML unavailable"),
            std::string::npos)
      << d.reading;
  EXPECT_EQ(d.other_processes_status,
            "NVML unavailable: libnvidia-ml.so.1 not found");
}

TEST(DiagnoseOom, RequestLargerThanTheCard) {
  OomInput in = FullCard();
  in.live.clear();
  in.requested = 1000 * kGiB;
  in.device_free = 139 * kGiB;
  in.processes = {};
  OomDiagnosis d = DiagnoseOom(in, Name);
  EXPECT_NE(d.reading.find("larger than the whole card"), std::string::npos)
      << d.reading;
  EXPECT_NE(d.reading.find("No other process uses this GPU"), std::string::npos)
      << d.reading;
  EXPECT_TRUE(d.holders.empty());
}

TEST(DiagnoseOom, KeepsTheLargestHolders) {
  OomInput in = FullCard();
  in.live.clear();
  for (StackId s = 1; s <= 15; ++s) in.live.push_back(Block(s * kGiB, s));
  in.max_holders = 10;
  OomDiagnosis d = DiagnoseOom(in, Name);
  ASSERT_EQ(d.holders.size(), 10u);
  EXPECT_EQ(d.holders_omitted, 5u);
  EXPECT_EQ(d.holders[0].stack, 15u);
  EXPECT_EQ(d.holders[9].stack, 6u);
}

TEST(OomBurstLimiter, OncePerBurstPerDevice) {
  OomBurstLimiter limiter(/*quiet_ns=*/1000);
  uint64_t earlier = 99;
  EXPECT_TRUE(limiter.ShouldReport(0, 10'000, &earlier));
  EXPECT_EQ(earlier, 0u);
  EXPECT_FALSE(limiter.ShouldReport(0, 10'500, &earlier));
  EXPECT_FALSE(limiter.ShouldReport(0, 11'400, &earlier));  // burst goes on
  EXPECT_TRUE(limiter.ShouldReport(1, 11'400, &earlier));   // another device
  EXPECT_EQ(limiter.suppressed(), 2u);
  EXPECT_TRUE(limiter.ShouldReport(0, 12'400, &earlier));  // quiet long enough
  EXPECT_EQ(earlier, 2u);
}

TEST(OomReport, JsonAndTextCarryTheDiagnosis) {
  ReportData data;
  data.pid = 1;
  ErrorRecord e;
  e.kind = ErrorKind::kOom;
  e.api = Api::kCudaMalloc;
  e.cuda_result = 2;
  e.cuda_result_name = "cudaErrorMemoryAllocation";
  e.oom = DiagnoseOom(FullCard(), Name);
  e.detail = e.oom->reading;
  data.errors.push_back(e);
  nlohmann::json j = nlohmann::json::parse(RenderJson(data));
  const nlohmann::json& o = j["errors"][0];
  EXPECT_EQ(o["kind"], "oom");
  EXPECT_EQ(o["requested"], 2 * kGiB);
  EXPECT_EQ(o["device_free"], kGiB / 2);
  EXPECT_EQ(o["device_total"], 140 * kGiB);
  EXPECT_EQ(o["process_bytes"], 122 * kGiB);
  ASSERT_EQ(o["holders"].size(), 2u);
  EXPECT_EQ(o["holders"][0]["bytes"], 120 * kGiB);
  EXPECT_EQ(o["holders"][0]["count"], 60);
  EXPECT_TRUE(o["holders"][0]["stack"].is_array());
  ASSERT_EQ(o["other_processes"].size(), 1u);
  EXPECT_EQ(o["other_processes"][0]["pid"], 200);
  EXPECT_EQ(o["other_processes"][0]["name"], "python3");
  EXPECT_EQ(o["reading"], e.oom->reading);
  const std::string text = RenderErrorText(e, {}, 1);
  EXPECT_NE(text.find("ERROR: oom"), std::string::npos) << text;
  EXPECT_NE(text.find("holder #1: 120.0 GiB in 60 cudaMalloc blocks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("other process: pid 200 python3: 3.0 GiB"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gmt
