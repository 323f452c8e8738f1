// Kernel launches and synchronizing calls: the tool hears of them and forwards
// every result unchanged (driver and runtime, plain and per-thread builds).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

struct Case {
  const char* program;
  const char* mode;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::string program = info.param.program;
  return std::string(program.find("ptds") != std::string::npos ? "Ptds"
                                                               : "Plain") +
         "_" + info.param.mode;
}

class GuardLaunchTest : public InterposeTest,
                        public testing::WithParamInterface<Case> {};

TEST_P(GuardLaunchTest, ResultsAreForwardedUnchanged) {
  RunResult plain = RunPlain(GetParam().program, {GetParam().mode});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult tool = Run(GetParam().program, {GetParam().mode});
  ASSERT_EQ(tool.exit_code, 0) << tool.Describe();
  ASSERT_TRUE(Contains(tool.out, "done")) << tool.Describe();
  EXPECT_EQ(tool.out, plain.out);
  // A program that only launches and synchronizes has nothing to report.
  ASSERT_TRUE(tool.has_report) << tool.Describe();
  EXPECT_EQ(tool.report["summary"].value("errors", -1), 0) << tool.Describe();
}

// Both outcomes went through each shim: accepted and refused launches, and
// successful synchronizing calls (which the engine hears of).
TEST_P(GuardLaunchTest, AcceptedAndRefusedCallsKeepTheirCodes) {
  RunResult r = Run(GetParam().program, {GetParam().mode});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  if (std::string(GetParam().mode) == "driver") {
    for (const char* line :
         {"cuLaunchKernelEx -> 0 ", "cuLaunchKernelEx again -> 0 ",
          "cuLaunchKernelEx null config -> 1 ",
          "cuLaunchKernelEx empty grid -> 1 ", "cuLaunchKernel null -> 400 ",
          "cuLaunchCooperativeKernel -> 0 ",
          "cuLaunchCooperativeKernel null -> 400 ", "cuGraphLaunch -> 0 ",
          "cuGraphLaunch null -> 1 ", "  name _Z4fillPfi\n",
          "cuCtxSynchronize -> 0 ", "cuCtxSynchronize_v2 -> 0 ",
          "cuStreamSynchronize -> 0 ", "cuEventSynchronize -> 0 ",
          "cuEventSynchronize null -> 400 "}) {
      EXPECT_TRUE(Contains(r.out, line)) << line << "\n" << r.out;
    }
  } else {
    for (const char* line :
         {"cudaLaunchKernelExC -> 0 ", "cudaLaunchKernelExC null config -> 1 ",
          "cudaLaunchCooperativeKernel -> 0 ",
          "cudaLaunchCooperativeKernel null -> 400 ", "cudaGraphLaunch -> 0 ",
          "cudaGraphLaunch null -> 1 ", "  name _Z4fillPfi\n",
          "cudaDeviceSynchronize -> 0 ", "cudaStreamSynchronize -> 0 ",
          "cudaEventSynchronize null -> 400 "}) {
      EXPECT_TRUE(Contains(r.out, line)) << line << "\n" << r.out;
    }
  }
}

// An overrun between launches is found at the next synchronizing call and
// blamed on the kernels launched since the last clean check, by their
// demangled names (cudaFuncGetName / cuFuncGetName, asked once per handle).
TEST_P(GuardLaunchTest, OverrunIsAttributedToTheKernelByName) {
  RunResult plain = RunPlain(GetParam().program,
                             {std::string("attribution_") + GetParam().mode});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r =
      Run(GetParam().program, {std::string("attribution_") + GetParam().mode});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "oob-write");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  EXPECT_EQ(errors[0].value("offset", int64_t{-1}), 1000) << errors[0].dump(1);
  ASSERT_TRUE(errors[0].contains("kernels")) << errors[0].dump(1);
  bool named = false;
  for (const json& k : errors[0]["kernels"]) {
    named |= k.get<std::string>() == "fill(float*, int)";
  }
  EXPECT_TRUE(named) << errors[0]["kernels"].dump();
}

INSTANTIATE_TEST_SUITE_P(
    AllBuilds, GuardLaunchTest,
    testing::Values(Case{GMT_GUARD_LAUNCH_PROGRAM, "driver"},
                    Case{GMT_GUARD_LAUNCH_PROGRAM, "runtime"},
                    Case{GMT_GUARD_LAUNCH_PTDS_PROGRAM, "driver"},
                    Case{GMT_GUARD_LAUNCH_PTDS_PROGRAM, "runtime"}),
    CaseName);

// The same overrun every step: found at the first step's synchronization
// among the step's three kernels, which become suspects; each later step's
// is found by the check after fill, through the shims' reading of the
// launch's arguments (the block is fill's first).
class SuspectChecksTest : public InterposeTest,
                          public testing::WithParamInterface<const char*> {};

TEST_P(SuspectChecksTest, ARepeatedOverrunNamesItsKernelFromTheSecondStep) {
  RunResult plain = RunPlain(GetParam(), {"repeat"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  for (const bool suspects : {true, false}) {
    RunOptions options;
    options.gmt_options = "report=json:report_path=<dir>/r.%p.json";
    if (!suspects) options.gmt_options += ":suspect_checks=0";
    RunResult r = Run(GetParam(), {"repeat"}, options);
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, plain.out);
    ASSERT_TRUE(r.has_report) << r.Describe();
    std::vector<json> errors = ErrorsOfKind(r.report, "oob-write");
    ASSERT_EQ(errors.size(), 4u) << r.Describe();
    for (size_t i = 0; i < errors.size(); ++i) {
      SCOPED_TRACE(errors[i].dump(1));
      EXPECT_EQ(errors[i].value("first_offset", int64_t{-1}),
                static_cast<int64_t>(1000 + i));
      const bool named = suspects && i > 0;
      EXPECT_EQ(errors[i].value("check", ""), named ? "suspect" : "sync");
      EXPECT_EQ(errors[i].value("suspects_checked", false), suspects && i == 0);
      const json& kernels = errors[i]["kernels"];
      if (named) {
        EXPECT_EQ(kernels, json::array({"fill(float*, int)"}));
      } else {
        EXPECT_EQ(kernels,
                  json::array({"scale(float*, int)", "fill(float*, int)",
                               "reduce(float*, int)"}));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllBuilds, SuspectChecksTest,
                         testing::Values(GMT_GUARD_LAUNCH_PROGRAM,
                                         GMT_GUARD_LAUNCH_PTDS_PROGRAM),
                         [](const testing::TestParamInfo<const char*>& info) {
                           return std::string(info.index == 0 ? "Plain"
                                                              : "Ptds");
                         });

// While one thread waits (in the tool) for a zone check behind its
// cudaDeviceSynchronize, another thread allocates, launches and frees: it
// must go on. The tool once held its guard lock across that wait, so the
// second thread queued behind the device, and a device that waited for the
// second thread (a host callback taking a program lock) deadlocked.
TEST(GuardLaunchLockTest, OtherThreadsDoNotWaitBehindACheck) {
  ScopedTempDir tmp;
  RunOptions plain_options;
  plain_options.preload = false;
  plain_options.set_gmt_options = false;
  RunResult plain = RunProgram(GMT_GUARD_LAUNCH_PROGRAM,
                               {"concurrent", tmp.path() + "/plain"},
                               tmp.path(), plain_options);
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  const std::string hold = tmp.path() + "/hold";
  RunOptions options;
  options.env = {{"FAKE_CUDA_HOLD_TOOL_WAIT", hold}};
  options.timeout_s = 60;
  std::filesystem::create_directories(tmp.path() + "/tool");
  RunResult with = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"concurrent", hold},
                              tmp.path() + "/tool", options);
  ASSERT_FALSE(with.timed_out) << with.Describe();
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  // The check's wait really was held (else this proves nothing).
  EXPECT_TRUE(std::filesystem::exists(hold + ".held")) << with.Describe();
  // ... and the other thread went on while it was held: had it queued behind
  // the check, the hold would have run out (30 s) before it could release it.
  EXPECT_FALSE(std::filesystem::exists(hold + ".expired")) << with.Describe();
  EXPECT_EQ(with.out, plain.out);
}

// Stream-ordered frees held in quarantine (torch=1 sets quarantine_async): the
// churn's blocks leave the quarantine through a check and CUDA's stream-ordered
// free, with nothing lost or freed twice, and a write through a freed block's
// stale pointer is a uaf-write with its free's stack. Without quarantine_async
// the frees go to CUDA at once, as before.
TEST(GuardAsyncQuarantineTest, FreedStreamOrderedBlocksAreHeldAndChecked) {
  ScopedTempDir tmp;
  RunResult plain = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"async_quarantine"},
                               tmp.path(), WithoutTheTool());
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_NE(plain.out.find("churn ok"), std::string::npos) << plain.Describe();

  RunOptions held;
  // torch=1 turns quarantine_async on, as for PyTorch's tensors.
  held.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:torch=1:"
      "quarantine_bytes=1048576";
  std::filesystem::create_directories(tmp.path() + "/held");
  RunResult with =
      RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"async_quarantine", "write"},
                 tmp.path() + "/held", held);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_EQ(with.out, plain.out);
  ASSERT_TRUE(with.has_report) << with.Describe();
  const json& errors = with.report["errors"];
  ASSERT_EQ(errors.size(), 1u) << errors.dump(1);
  EXPECT_EQ(errors[0].value("kind", ""), "uaf-write") << errors.dump(1);
  EXPECT_EQ(errors[0].value("offset", -1), 10) << errors.dump(1);
  EXPECT_EQ(errors[0]["first_free"].value("api", ""), "cudaFreeAsync")
      << errors.dump(1);
  EXPECT_TRUE(StackHas(errors[0]["first_free"]["stack"], "AsyncQuarantine"))
      << errors.dump(1);
  EXPECT_EQ(with.report["summary"].value("leaks", -1), 0) << with.Describe();
  // 65 blocks against 1 MiB: as the quarantine overflowed, blocks left it,
  // were checked on their stream and, found intact, served later
  // allocations of their size without CUDA (reused); the ones still held
  // for that at exit stay held. Those in quarantine when the program
  // destroyed their stream went back to CUDA then (a destroyed stream's
  // handle cannot carry their check and free any more).
  const json& guard = with.report["guard"];
  constexpr uint64_t kRaw = 512 + 100096 + 6400;  // front, bytes, tail zone
  const uint64_t reused = guard.value("reused", uint64_t{0});
  EXPECT_GT(reused, 32u) << guard.dump(1);
  EXPECT_EQ(guard.value("evicted", uint64_t{0}) + reused +
                guard.value("quarantine_bytes", uint64_t{0}) / kRaw,
            65u)
      << guard.dump(1);
  EXPECT_NE(with.report["notes"].dump().find(
                "torch mode: 65 stream-ordered allocations"),
            std::string::npos)
      << with.report["notes"].dump();

  // quarantine_reuse=0: every block goes back to CUDA when it leaves.
  RunOptions no_reuse = held;
  no_reuse.gmt_options += ":quarantine_reuse=0";
  std::filesystem::create_directories(tmp.path() + "/no_reuse");
  RunResult without_reuse =
      RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"async_quarantine", "write"},
                 tmp.path() + "/no_reuse", no_reuse);
  ASSERT_EQ(without_reuse.exit_code, 0) << without_reuse.Describe();
  EXPECT_EQ(without_reuse.out, plain.out);
  ASSERT_TRUE(without_reuse.has_report) << without_reuse.Describe();
  EXPECT_EQ(without_reuse.report["errors"].size(), 1u);
  EXPECT_EQ(without_reuse.report["guard"].value("evicted", 0), 65)
      << without_reuse.Describe();
  EXPECT_EQ(without_reuse.report["guard"].value("reused", -1), 0);

  std::filesystem::create_directories(tmp.path() + "/default");
  RunResult plain_tool =
      RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"async_quarantine"},
                 tmp.path() + "/default", RunOptions{});
  ASSERT_EQ(plain_tool.exit_code, 0) << plain_tool.Describe();
  EXPECT_EQ(plain_tool.out, plain.out);
  ASSERT_TRUE(plain_tool.has_report) << plain_tool.Describe();
  EXPECT_TRUE(plain_tool.report["errors"].empty());
  EXPECT_EQ(plain_tool.report["guard"].value("evicted", -1), 0);
}

// cudaMalloc blocks leaving the quarantine are checked and, found intact,
// serve later cudaMallocs they fit (malloc_reuse, on by default) without
// CUDA; the program sees what it sees without the tool: a buffer id of each
// block's own, and the device's free memory back where it was.
TEST(GuardMallocReuseTest, AServedBlockLooksToTheProgramAsCudasOwn) {
  ScopedTempDir tmp;
  RunResult plain = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"malloc_reuse"},
                               tmp.path(), WithoutTheTool());
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_NE(plain.out.find("malloc churn ok: 96 buffer ids for 96 "
                           "allocations; free memory as before"),
            std::string::npos)
      << plain.Describe();

  RunOptions held;
  held.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:quarantine_bytes=1048576:"
      "verbosity=1";
  std::filesystem::create_directories(tmp.path() + "/held");
  RunResult with = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"malloc_reuse"},
                              tmp.path() + "/held", held);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  // A buffer id of each allocation's own, as without the tool.
  EXPECT_NE(with.out.find("malloc churn ok: 96 buffer ids for 96 "
                          "allocations"),
            std::string::npos)
      << with.out;
  ASSERT_TRUE(with.has_report) << with.Describe();
  EXPECT_TRUE(with.report["errors"].empty()) << with.report["errors"].dump(1);
  EXPECT_EQ(with.report["summary"].value("leaks", -1), 0) << with.Describe();
  const uint64_t reused = with.report["guard"].value("reused", uint64_t{0});
  EXPECT_GT(reused, 32u) << with.report["guard"].dump(1);
  // The exit log says how many allocations reuse served, and how many not.
  EXPECT_NE(with.err.find("reuse of checked blocks: " + std::to_string(reused) +
                          " allocations served"),
            std::string::npos)
      << with.err;

  // Without reuse every block goes back to CUDA: the program sees the same
  // (free memory differs from the plain run's by the tool's own buffers
  // alone, docs/transparency.md, and by as much with reuse as without).
  RunOptions no_reuse = held;
  no_reuse.gmt_options += ":malloc_reuse=0";
  std::filesystem::create_directories(tmp.path() + "/no_reuse");
  RunResult without = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"malloc_reuse"},
                                 tmp.path() + "/no_reuse", no_reuse);
  ASSERT_EQ(without.exit_code, 0) << without.Describe();
  EXPECT_EQ(with.out, without.out);
  ASSERT_TRUE(without.has_report) << without.Describe();
  EXPECT_EQ(without.report["guard"].value("reused", -1), 0);
}

// While a stream capture is in progress a cudaMalloc may be one CUDA refuses
// (global mode): the tool serves none from its checked blocks then, and
// does again once the capture has ended. The capture calls are the
// runtime's, which reach the driver's through cuGetProcAddress.
TEST(GuardMallocReuseTest, NoCheckedBlockServesACudaMallocDuringACapture) {
  ScopedTempDir tmp;
  RunOptions held;
  held.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:quarantine_bytes=1048576";
  RunResult with = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"malloc_capture"},
                              tmp.path(), held);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_NE(with.out.find("before the capture: a checked block"),
            std::string::npos)
      << with.out;
  EXPECT_NE(with.out.find("during the capture: CUDA"), std::string::npos)
      << with.out;
  EXPECT_NE(with.out.find("after the capture: a checked block"),
            std::string::npos)
      << with.out;
  ASSERT_TRUE(with.has_report) << with.Describe();
  EXPECT_TRUE(with.report["errors"].empty()) << with.report["errors"].dump(1);
}

// A pool trim gives back what the program freed, and a reset of its
// USED_MEM_HIGH starts from its use now: in tensor mode the blocks the tool
// holds (quarantine, kept for reuse) go back to CUDA first, so the pool
// keeps no more reserved, and counts no more used, than without the tool.
TEST(GuardAsyncQuarantineTest, APoolTrimGivesBackTheBlocksTheToolHolds) {
  ScopedTempDir tmp;
  RunResult plain = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"pool_trim"},
                               tmp.path(), WithoutTheTool());
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(Contains(plain.out,
                       "reserved after trim: 0, used high since the reset: 0"))
      << plain.Describe();
  RunOptions held;
  held.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:torch=1:"
      "quarantine_bytes=1048576";
  RunResult with =
      RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"pool_trim"}, tmp.path(), held);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_EQ(with.out, plain.out);
  ASSERT_TRUE(with.has_report) << with.Describe();
  EXPECT_TRUE(with.report["errors"].empty()) << with.Describe();
  EXPECT_EQ(with.report["guard"].value("quarantine_bytes", -1), 0)
      << with.Describe();
}

// A trim of one pool gives back the held blocks of that pool only: device
// 1's pool keeps nothing reserved, as without the tool, while the blocks
// freed on device 0 stay in quarantine, still watched for writes after free.
// (A trim used to release the held blocks of every pool.)
TEST(GuardAsyncQuarantineTest, APoolTrimKeepsOtherPoolsBlocksHeld) {
  ScopedTempDir tmp;
  RunResult plain = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"pool_trim_other"},
                               tmp.path(), WithoutTheTool());
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(Contains(plain.out, "device 1's pool reserved after its trim: 0"))
      << plain.Describe();
  RunOptions held;
  held.gmt_options =
      "report=json:report_path=<dir>/r.%p.json:torch=1:"
      "quarantine_bytes=1048576";
  RunResult with = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"pool_trim_other"},
                              tmp.path(), held);
  ASSERT_EQ(with.exit_code, 0) << with.Describe();
  EXPECT_EQ(with.out, plain.out);
  ASSERT_TRUE(with.has_report) << with.Describe();
  EXPECT_TRUE(with.report["errors"].empty()) << with.Describe();
  // Device 0's last freed blocks of 100 000 bytes (up to the quarantine's
  // 1 MiB), with their redzones; the others wait for reuse.
  EXPECT_GE(with.report["guard"].value("quarantine_bytes", 0), 500000)
      << with.Describe();
}

// verbosity=1 logs the tool's own host time per call at exit, by kind, with
// the program's own CUDA call left out: with every allocation made 2 ms slow
// by the double, an allocation's part still reads far below 2 ms.
TEST(ToolCallTimeTest, ExitLogsTheToolsTimePerCallLessTheProgramsCall) {
  ScopedTempDir tmp;
  RunOptions options;
  options.gmt_options = "report=json:report_path=<dir>/r.%p.json:verbosity=1";
  options.env = {{"FAKE_CUDA_ALLOC_DELAY_US", "2000"}};
  RunResult r = RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"loop", "256"},
                           tmp.path(), options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(Contains(r.out, "loop rounds 256 failures 0")) << r.Describe();
  const size_t at = r.err.find("tool time per call: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  for (const char* kind : {"allocation", "free", "launch", "synchronization"}) {
    const size_t k = line.find(std::string(kind) + " ");
    ASSERT_NE(k, std::string::npos) << kind << ": " << line;
    double us = -1, total = -1;
    long long calls = -1;
    ASSERT_EQ(std::sscanf(line.c_str() + k + std::strlen(kind) + 1,
                          "%lf us x ~%lld = %lf ms", &us, &calls, &total),
              3)
        << kind << ": " << line;
    // 256 calls of each kind, one in 64 timed: 4 timed, ~256 counted (the
    // tool's own launches and synchronizations are not the program's calls).
    EXPECT_EQ(calls, 256) << kind << ": " << line;
    EXPECT_GE(us, 0.0) << line;
    // Only allocations were slowed (a synchronization's part is the double's
    // own check of every zone, on the host, and may take long under a
    // sanitizer).
    if (std::strcmp(kind, "allocation") == 0) {
      EXPECT_LT(us, 1500.0) << "it counts the program's call: " << line;
    }
    EXPECT_NEAR(total, us * 256 / 1e3, 0.1) << line;
  }
  // Not at the default verbosity.
  options.gmt_options = "report=json:report_path=<dir>/q.%p.json";
  options.env.clear();
  RunResult quiet =
      RunProgram(GMT_GUARD_LAUNCH_PROGRAM, {"loop", "64"}, tmp.path(), options);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.Describe();
  EXPECT_EQ(quiet.err.find("tool time per call"), std::string::npos)
      << quiet.err;
}

}  // namespace
}  // namespace gmt_test
