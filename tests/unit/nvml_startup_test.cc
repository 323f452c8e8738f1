// NVML off the program's critical path (lib/health/nvml_startup.h): started
// on a background thread at the first CUDA call, waited for by reports with a
// bound, absent from a forked child. Against the stand-in NVML of
// fake_nvml.cc, whose nvmlInit takes FAKE_NVML_INIT_MS. CTest runs each test
// in a process of its own, so each starts with NVML not loaded.
#include "lib/health/nvml_startup.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "lib/engine/engine.h"
#include "lib/health/health.h"

namespace gmt {
namespace {

int ThreadsOfThisProcess() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
    closedir(dir);
  }
  return n;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

class NvmlStartup : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("GMT_NVML_LIBRARY", GMT_FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_INIT_MS", "400", 1);
  }
  // An engine that reports nothing by itself; `first_cuda_call` as if the
  // program had made its first CUDA call (which starts NVML).
  static std::unique_ptr<Engine> QuietEngine(bool first_cuda_call) {
    Options o;
    o.report = ReportFormats();
    o.print_errors = false;
    auto engine = std::make_unique<Engine>(o);
    if (first_cuda_call) engine->OnCudaVersions(12080, 12080);
    return engine;
  }
};

TEST_F(NvmlStartup, StartReturnsAtOnceAndAReportWaitsForIt) {
  const auto t0 = std::chrono::steady_clock::now();
  StartNvmlInBackground(/*watch_xid=*/true);
  EXPECT_LT(MsSince(t0), 100) << "nvmlInit ran on the caller's thread";
  EXPECT_EQ(WaitForNvmlStart(0), NvmlStart::kRunning);
  EXPECT_TRUE(NvmlStartInProgress());  // what a crash waits on
  EXPECT_EQ(WaitForNvmlStart(5000), NvmlStart::kDone);
  EXPECT_FALSE(NvmlStartInProgress());
  const HealthReading r = ReadHealth();
  EXPECT_TRUE(r.available) << r.reason;
  EXPECT_TRUE(r.xid_watched) << r.xid_status;
}

TEST_F(NvmlStartup, NothingStartsBeforeTheFirstCudaCall) {
  const int threads = ThreadsOfThisProcess();
  auto engine = QuietEngine(/*first_cuda_call=*/false);
  EXPECT_EQ(WaitForNvmlStart(0), NvmlStart::kNotStarted);
  EXPECT_EQ(ThreadsOfThisProcess(), threads);
  engine->OnCudaVersions(12080, 12080);  // the first CUDA call
  EXPECT_EQ(WaitForNvmlStart(0), NvmlStart::kRunning);
  EXPECT_EQ(WaitForNvmlStart(5000), NvmlStart::kDone);
}

TEST_F(NvmlStartup, ReportSaysHealthWasNotReadWhileNvmlStarts) {
  setenv("FAKE_NVML_INIT_MS", "3000", 1);
  auto engine = QuietEngine(/*first_cuda_call=*/true);
  const auto t0 = std::chrono::steady_clock::now();
  ReportData r = engine->BuildReport("request");
  EXPECT_LT(MsSince(t0), 2000) << "the report waited for nvmlInit";
  EXPECT_TRUE(r.health_read);
  EXPECT_FALSE(r.health.available);
  EXPECT_NE(r.health.reason.find("still starting"), std::string::npos)
      << r.health.reason;
  EXPECT_EQ(WaitForNvmlStart(10000), NvmlStart::kDone);
  r = engine->BuildReport("request");
  EXPECT_TRUE(r.health.available) << r.health.reason;
}

// A GPU fault's Xid reaches NVML a moment after the program got the sticky
// error: the report written at that error waits for it (bounded); a report
// at another moment does not.
TEST_F(NvmlStartup, ReportAtACudaErrorWaitsForTheFaultsXid) {
  setenv("FAKE_NVML_INIT_MS", "0", 1);
  setenv("FAKE_NVML_XID_AFTER_MS", "300", 1);
  auto engine = QuietEngine(/*first_cuda_call=*/true);
  ASSERT_EQ(WaitForNvmlStart(5000), NvmlStart::kDone);
  ReportData early = engine->BuildReport("request");
  EXPECT_TRUE(early.health.xids.empty()) << "the Xid came at once";
  const auto t0 = std::chrono::steady_clock::now();
  ReportData r = engine->BuildReport("cuda-error");
  EXPECT_LT(MsSince(t0), 1500);
  ASSERT_EQ(r.health.xids.size(), 1u) << r.health.xid_status;
  EXPECT_EQ(r.health.xids[0].xid, 79u);
}

// With the driver's GPU core dump armed, NVML in the process made the driver
// refuse the dump ("not supported with late attach") and the faulting
// program spin in its next synchronization (H200, driver 580: 4 of 6 runs
// with NVML's health reading alone, 6 of 6 with the Xid event wait too, 0 of
// 6 with health=0): NVML is not started at the first CUDA call, reports
// before exit say why health was not read, and the exit report reads it
// (with the Xid watcher off).
TEST_F(NvmlStartup, AnArmedGpuDumpKeepsNvmlAwayUntilTheExitReport) {
  setenv("FAKE_NVML_INIT_MS", "0", 1);
  setenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1", 1);
  auto engine = QuietEngine(/*first_cuda_call=*/true);
  EXPECT_EQ(WaitForNvmlStart(0), NvmlStart::kNotStarted);
  ReportData r = engine->BuildReport("cuda-error");
  EXPECT_FALSE(r.health.available);
  EXPECT_NE(r.health.reason.find("GPU core dump is armed"), std::string::npos)
      << r.health.reason;
  EXPECT_EQ(WaitForNvmlStart(0), NvmlStart::kNotStarted);
  r = engine->BuildReport("exit");
  unsetenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  EXPECT_TRUE(r.health.available) << r.health.reason;
  EXPECT_FALSE(r.health.xid_watched);
  EXPECT_NE(r.health.xid_status.find("GPU core dump is armed"),
            std::string::npos)
      << r.health.xid_status;
}

TEST_F(NvmlStartup, ForkedChildNeitherWaitsNorStartsAThread) {
  StartNvmlInBackground(/*watch_xid=*/true);  // still in nvmlInit
  const pid_t child = fork();
  if (child == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    int failures = 0;
    failures += WaitForNvmlStart(2000) != NvmlStart::kNotStarted;
    failures += MsSince(t0) > 500;
    StartNvmlInBackground(/*watch_xid=*/true);
    failures += ThreadsOfThisProcess() != 1;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(WaitForNvmlStart(5000), NvmlStart::kDone);
}

}  // namespace
}  // namespace gmt
