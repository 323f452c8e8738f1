// Process life (DESIGN §2 pitfalls 7 and 9). Already covered elsewhere: a
// fork()ed child writes no report (tests/interpose/process_test.cc), device
// reset and context destruction accounting (report_test.cc, context_test.cc),
// a program without CUDA stays silent (report_test.cc). Here: exec, threads
// alive at exit, static destructors that free after main, exit from a signal
// handler, a device reset in the middle of guarded work with quarantine, and
// no engine at all for a program that never calls CUDA.
#include <filesystem>

#include "tests/reliability/reliability_util.h"

namespace gmt_test {
namespace {

class LifeTest : public InterposeTest {
 protected:
  // The JSON reports in the run directory of `r`, by file name.
  static std::vector<std::string> Reports(const RunResult& r) {
    std::vector<std::string> out;
    for (const std::string& name :
         FileNames(std::filesystem::path(r.report_path).parent_path())) {
      if (name.rfind("r.", 0) == 0) out.push_back(name);
    }
    return out;
  }
  static std::string Dir(const RunResult& r) {
    return std::filesystem::path(r.report_path).parent_path();
  }
  static json ReadReport(const std::string& path) {
    std::string text = ReadFile(path);
    if (text.empty()) return json();
    return json::parse(text, nullptr, /*allow_exceptions=*/false);
  }
  static bool ArgvHas(const json& report, const std::string& arg) {
    if (!report.contains("argv")) return false;
    for (const json& a : report["argv"]) {
      if (a.get<std::string>() == arg) return true;
    }
    return false;
  }
};

// exec() replaces the image: the new one (same pid) is traced again and
// writes the report; the old image writes none (its CUDA memory went away
// with its address space, like any exit without atexit), and none of its
// blocks appear in the new image's report.
TEST_F(LifeTest, ExecInPlaceReportsTheNewImageOnly) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"exec_in_place"});
  RunResult r = Run(GMT_LIFE_PROGRAM, {"exec_in_place"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(Contains(r.out, "after_exec done")) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report.value("pid", -1), r.pid);
  EXPECT_TRUE(ArgvHas(r.report, "after_exec")) << r.report["argv"].dump();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", 0), 2222);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "AfterExec"))
      << StackFunctions(leaks[0]["stack"]);
  EXPECT_EQ(Reports(r),
            std::vector<std::string>{"r." + std::to_string(r.pid) + ".json"});
}

// fork() + exec(): two traced images, two pids, two reports, each with only
// its own blocks and its own argv.
TEST_F(LifeTest, ForkExecEachImageWritesItsOwnReport) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"fork_exec"});
  RunResult r = Run(GMT_LIFE_PROGRAM, {"fork_exec"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(Contains(r.out, "child-exit 0")) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<std::string> reports = Reports(r);
  ASSERT_EQ(reports.size(), 2u) << r.Describe();
  EXPECT_TRUE(ArgvHas(r.report, "fork_exec"));
  std::vector<json> parent_leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(parent_leaks.size(), 1u) << r.report.dump(1);
  EXPECT_EQ(parent_leaks[0].value("bytes", 0), 3333);
  const std::string parent_name = "r." + std::to_string(r.pid) + ".json";
  for (const std::string& name : reports) {
    if (name == parent_name) continue;
    json child = ReadReport(Dir(r) + "/" + name);
    ASSERT_TRUE(child.is_object()) << name;
    EXPECT_NE(child.value("pid", -1), r.pid);
    EXPECT_TRUE(ArgvHas(child, "after_exec")) << child.dump(1);
    std::vector<json> leaks = LeaksWithApi(child, "cudaMalloc");
    ASSERT_EQ(leaks.size(), 1u) << child.dump(1);
    EXPECT_EQ(leaks[0].value("bytes", 0), 2222);
  }
}

// Threads still allocating and freeing while main returns: the exit report is
// written whole, with no error made up by the race (a free that crosses the
// report is either before or after it), and the exit code is the program's.
// Repeated, since the interleaving differs each time.
TEST_F(LifeTest, ThreadsStillRunningAtExit) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"threads_at_exit"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  for (int i = 0; i < 5; ++i) {
    RunOptions options;
    options.timeout_s = 60;
    RunResult r = Run(GMT_LIFE_PROGRAM, {"threads_at_exit"}, options);
    ASSERT_FALSE(r.timed_out) << r.Describe();
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, plain.out);
    ASSERT_TRUE(r.has_report) << r.Describe();
    EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << r.Describe();
    EXPECT_GE(r.report["summary"].value("allocations", 0L), 800);
  }
}

// Blocks freed by static destructors after main returns (one object made
// before CUDA was initialised, one after) are not leaks, and their frees are
// no errors, with guard zones and quarantine on (the default).
TEST_F(LifeTest, StaticDestructorsFreeingAfterMainAreNoLeaks) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"static_dtors"});
  RunResult r = Run(GMT_LIFE_PROGRAM, {"static_dtors"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(Contains(r.out, "~EarlyHolder cudaFreeHost -> 0")) << r.out;
  ASSERT_TRUE(Contains(r.out, "~LateHolder cuMemFree -> 0")) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& summary = r.report["summary"];
  EXPECT_EQ(summary.value("allocations", -1), 6) << summary.dump();
  EXPECT_EQ(summary.value("frees", -1), 6) << summary.dump();
  EXPECT_EQ(summary.value("leaks", -1), 0) << r.Describe();
  EXPECT_EQ(summary.value("errors", -1), 0) << r.Describe();
  EXPECT_EQ(summary.value("live_bytes_at_exit", -1), 0) << summary.dump();
}

// exit() from a signal handler runs the exit path: the report is written,
// with the leak and its stack, and the exit code stays the program's.
TEST_F(LifeTest, ExitFromSignalHandlerWritesTheReport) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"signal_exit"});
  RunResult r = Run(GMT_LIFE_PROGRAM, {"signal_exit"});
  ASSERT_EQ(plain.exit_code, 3) << plain.Describe();
  ASSERT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
  ASSERT_EQ(leaks.size(), 1u) << r.Describe();
  EXPECT_EQ(leaks[0].value("bytes", 0), 4444);
  EXPECT_TRUE(StackHas(leaks[0]["stack"], "LeakBeforeSignal"))
      << StackFunctions(leaks[0]["stack"]);
}

// _exit() runs no exit code at all: no report, and no half-written file
// either; the exit code stays the program's.
TEST_F(LifeTest, UnderscoreExitFromSignalHandlerLeavesNoFile) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"signal__exit"});
  RunResult r = Run(GMT_LIFE_PROGRAM, {"signal__exit"});
  ASSERT_EQ(plain.exit_code, 4) << plain.Describe();
  ASSERT_EQ(r.exit_code, 4) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  EXPECT_FALSE(r.has_report) << r.Describe();
  EXPECT_EQ(FileNames(Dir(r)),
            (std::vector<std::string>{"stderr.txt", "stdout.txt"}));
  EXPECT_EQ(r.err, "") << r.Describe();
}

// exit() from a signal handler while another thread is inside the tool: no
// deadlock, a whole report, no made-up error.
TEST_F(LifeTest, ExitFromSignalHandlerWhileAnotherThreadAllocates) {
  for (int i = 0; i < 5; ++i) {
    RunOptions options;
    options.timeout_s = 60;
    RunResult r = Run(GMT_LIFE_PROGRAM, {"signal_exit_busy"}, options);
    ASSERT_FALSE(r.timed_out) << r.Describe();
    ASSERT_EQ(r.exit_code, 3) << r.Describe();
    ASSERT_TRUE(r.has_report) << r.Describe();
    EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << r.Describe();
    std::vector<json> leaks = LeaksWithApi(r.report, "cudaMalloc");
    bool found = false;
    for (const json& leak : leaks) {
      found |= StackHas(leak["stack"], "LeakBeforeSignal");
    }
    EXPECT_TRUE(found) << r.Describe();
  }
}

// cudaDeviceReset with guarded blocks in every state (one in the tool's
// quarantine, one live, one stream-ordered), then the same sizes again, so
// the double hands out the same addresses: the program sees exactly what it
// sees without the tool, no error is made up, and nothing the tool held
// before the reset is released later over a new block. Run with the default
// quarantine, a tiny one (evictions right after the reset) and per-kernel
// checks.
TEST_F(LifeTest, DeviceResetMidwayWithGuardZonesAndQuarantine) {
  RunResult plain = RunPlain(GMT_LIFE_PROGRAM, {"reset_midway"});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  ASSERT_TRUE(Contains(plain.out, "done")) << plain.Describe();
  for (const char* extra :
       {"", ":quarantine_bytes=4096", ":check=kernel:quarantine_bytes=20000",
        ":check=exit"}) {
    RunOptions options;
    options.gmt_options =
        std::string("report=json:report_path=<dir>/r.%p.json") + extra;
    RunResult r = Run(GMT_LIFE_PROGRAM, {"reset_midway"}, options);
    ASSERT_EQ(r.exit_code, 0) << extra << "\n" << r.Describe();
    EXPECT_EQ(r.out, plain.out) << extra;
    ASSERT_TRUE(r.has_report) << r.Describe();
    EXPECT_EQ(r.report["summary"].value("errors", -1), 0) << extra << "\n"
                                                          << r.Describe();
    // The blocks live at the reset are the only leaks, released by it.
    EXPECT_EQ(r.report["summary"].value("leaks", -1), 2) << extra << "\n"
                                                         << r.Describe();
    EXPECT_EQ(r.report["summary"].value("live_bytes_at_exit", -1), 0)
        << r.report["summary"].dump();
    EXPECT_FALSE(Contains(r.err, "failed")) << extra << "\n" << r.err;
  }
}

// A program linked with the CUDA runtime that never calls it: the tool
// creates no engine (verbosity=2 would say "tracking CUDA allocations"),
// prints nothing and writes nothing.
TEST_F(LifeTest, ProgramThatNeverCallsCudaCreatesNoEngine) {
  for (const char* program : {GMT_LIFE_PROGRAM, GMT_NOCUDA_PROGRAM}) {
    RunOptions options;
    options.gmt_options = "report=json:report_path=<dir>/r.%p.json:verbosity=2";
    RunResult r = Run(program, {"no_cuda"}, options);
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_FALSE(r.has_report) << r.Describe();
    EXPECT_EQ(r.err, "") << r.Describe();
    EXPECT_EQ(FileNames(Dir(r)),
              (std::vector<std::string>{"stderr.txt", "stdout.txt"}));
  }
}

}  // namespace
}  // namespace gmt_test
