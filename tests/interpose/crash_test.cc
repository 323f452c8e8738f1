// The crash report: fatal signals and the first sticky CUDA
// error write the report before the process dies, and the process then ends
// exactly as it would without the tool (same signal, same exit code).
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using CrashTest = InterposeTest;

// Names of report["crash"]["recent_kernels"].
std::vector<std::string> RecentKernels(const json& report) {
  std::vector<std::string> names;
  for (const json& k : report["crash"]["recent_kernels"]) {
    names.push_back(k.value("name", ""));
  }
  return names;
}

bool HasName(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The live blocks listed in the crash object, by API.
int LiveWithApi(const json& report, const std::string& api) {
  int n = 0;
  for (const json& b : report["crash"]["live_allocations"]) {
    if (b.value("api", "") == api) ++n;
  }
  return n;
}

// Checks what every signal crash report has.
void ExpectSignalReport(const RunResult& r, int sig, const char* name) {
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& report = r.report;
  EXPECT_EQ(report.value("reason", ""), "crash") << r.Describe();
  ASSERT_TRUE(report.contains("crash")) << report.dump(1);
  const json& c = report["crash"];
  EXPECT_EQ(c.value("kind", ""), "signal");
  EXPECT_EQ(c.value("signal", 0), sig);
  EXPECT_EQ(c.value("signal_name", ""), name);
  EXPECT_GT(c.value("thread", 0), 0);
  // Both live blocks, in the crash object and as leaks (live at the end).
  EXPECT_EQ(c.value("live_blocks", 0), 2) << c.dump(1);
  EXPECT_EQ(LiveWithApi(report, "cudaMalloc"), 1) << c.dump(1);
  EXPECT_EQ(LiveWithApi(report, "cudaMallocHost"), 1) << c.dump(1);
  EXPECT_EQ(LeaksWithApi(report, "cudaMalloc").size(), 1u);
  EXPECT_TRUE(HasName(RecentKernels(report), "crash_program_kernel"))
      << c.dump(1);
  // The signal-safe header line comes first, always.
  EXPECT_TRUE(Contains(r.err, std::string("caught ") + name)) << r.err;
}

TEST_F(CrashTest, SegfaultWritesReportAndDiesBySigsegv) {
  RunResult plain = RunPlain(GMT_CRASH_PROGRAM, {"segv", "."});
  RunResult r = Run(GMT_CRASH_PROGRAM, {"segv", "."});
  EXPECT_EQ(plain.exit_code, 128 + SIGSEGV) << plain.Describe();
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ExpectSignalReport(r, SIGSEGV, "SIGSEGV");
  const json& c = r.report["crash"];
  EXPECT_EQ(c.value("code_name", ""), "SEGV_MAPERR");
  EXPECT_EQ(c.value("fault_address", ""), "0x0");
  EXPECT_TRUE(c["fault_block"].is_null()) << c.dump(1);
}

// A program (or a sanitizer's runtime) that set up a small alternate signal
// stack before the tool started: the report needs more than 16 KiB, so the
// tool replaces that stack with its own instead of overflowing it.
TEST_F(CrashTest, SmallAlternateStackIsReplacedAndTheReportWritten) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"small_altstack", "."});
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  ExpectSignalReport(r, SIGSEGV, "SIGSEGV");
  EXPECT_EQ(r.report["crash"].value("code_name", ""), "SEGV_MAPERR");
}

TEST_F(CrashTest, FaultInsidePinnedBlockNamesTheBlock) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"segv_pinned", "."});
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  ExpectSignalReport(r, SIGSEGV, "SIGSEGV");
  const json& c = r.report["crash"];
  EXPECT_EQ(c.value("code_name", ""), "SEGV_ACCERR");
  ASSERT_TRUE(c["fault_block"].is_object()) << c.dump(1);
  EXPECT_EQ(c["fault_block"].value("api", ""), "cudaMallocHost");
  EXPECT_EQ(c["fault_block"].value("bytes", 0), 64 * 1024);
  const int64_t offset = c.value("fault_offset", int64_t{-1});
  EXPECT_GE(offset, 16);
  EXPECT_LT(offset, 64 * 1024);
}

TEST_F(CrashTest, AbortWritesReportAndDiesBySigabrt) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"abort", "."});
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  ExpectSignalReport(r, SIGABRT, "SIGABRT");
  EXPECT_TRUE(r.report["crash"]["fault_address"].is_null());
}

// The driver aborts from its own thread after a GPU core dump while the
// program's thread, handed the error, exits: the process dies by SIGABRT, as
// it does without the tool, not by the exit that raced the report.
TEST_F(CrashTest, AbortInAnotherThreadWinsOverAnExitDuringTheReport) {
  RunResult plain = RunPlain(GMT_CRASH_PROGRAM, {"abort_in_thread", "."});
  EXPECT_EQ(plain.exit_code, 128 + SIGABRT) << plain.Describe();
  RunResult r = Run(GMT_CRASH_PROGRAM, {"abort_in_thread", "."});
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  ExpectSignalReport(r, SIGABRT, "SIGABRT");
}

TEST_F(CrashTest, TextReportHasCrashSection) {
  RunOptions options;
  options.gmt_options = "report=text";
  RunResult r = Run(GMT_CRASH_PROGRAM, {"segv", "."}, options);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "report (crash)")) << r.err;
  EXPECT_TRUE(Contains(r.err, "CRASH: SIGSEGV (SEGV_MAPERR) at address 0x0"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "crash_program_kernel")) << r.err;
  // The crashing thread's stack, from the faulting function outwards.
  EXPECT_TRUE(Contains(r.err, "stack of the crashing thread")) << r.err;
  const size_t stack = r.err.find("stack of the crashing thread");
  const size_t frame0 = r.err.find("#0 ", stack);
  ASSERT_NE(frame0, std::string::npos) << r.err;
  EXPECT_TRUE(Contains(r.err.substr(frame0, r.err.find('\n', frame0) - frame0),
                       "WriteThrough"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "stack (innermost first): 0x")) << r.err;
}

// A handler the program installed before the tool: ours runs first (the
// report exists when the program's runs), then the program's, whose own
// re-raise ends the process by SIGSEGV.
TEST_F(CrashTest, ProgramHandlerInstalledBeforeIsChained) {
  RunResult plain = RunPlain(GMT_CRASH_PROGRAM, {"chain_before", "."});
  EXPECT_EQ(plain.exit_code, 128 + SIGSEGV) << plain.Describe();
  EXPECT_TRUE(Contains(plain.out, "program handler: report absent"));
  RunResult r = Run(GMT_CRASH_PROGRAM, {"chain_before", "."});
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "program handler: report present")) << r.out;
  ExpectSignalReport(r, SIGSEGV, "SIGSEGV");
}

// A handler installed after the tool replaces ours: the program's runs alone
// and exits as it chooses; no crash report (documented), and _exit() skips
// the exit report.
TEST_F(CrashTest, ProgramHandlerInstalledAfterWins) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"chain_after", "."});
  EXPECT_EQ(r.exit_code, 43) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "program handler ran")) << r.out;
  EXPECT_FALSE(Contains(r.err, "writing the crash report")) << r.err;
  EXPECT_FALSE(r.has_report) << r.Describe();
}

// "exit from a signal handler": the program's chained handler calls
// exit(); the process ends with its code and exactly one valid report: the
// exit report, which carries the crash.
TEST_F(CrashTest, ExitFromSignalHandlerLeavesOneValidReport) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"exit_in_handler", "."});
  EXPECT_EQ(r.exit_code, 5) << r.Describe();
  EXPECT_TRUE(Contains(r.out, "program handler: report present")) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report.value("reason", ""), "exit") << r.Describe();
  EXPECT_EQ(r.report["crash"].value("signal_name", ""), "SIGSEGV")
      << r.report.dump(1);
  int reports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(r.report_path).parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("r.", 0) == 0) ++reports;
  }
  EXPECT_EQ(reports, 1);
}

// A program that handles its own fault and goes on gets its exit report,
// with the crash in it (the crash report once marked the exit report as
// written, so a recovering program lost it).
TEST_F(CrashTest, ProgramThatRecoversGetsItsExitReport) {
  RunResult plain = RunPlain(GMT_CRASH_PROGRAM, {"recover", "."});
  ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
  RunResult r = Run(GMT_CRASH_PROGRAM, {"recover", "."});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report.value("reason", ""), "exit") << r.Describe();
  EXPECT_EQ(r.report["crash"].value("kind", ""), "signal") << r.Describe();
  EXPECT_EQ(r.report["summary"].value("leaks", 0), 2) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "caught SIGSEGV")) << r.err;
}

// The crash comes while another thread is inside the tool, holding its locks
// (a canary fill the test double holds): the summary written from the
// handler still says what was live and what ran, and the process still dies
// by its signal. (The full report needed those locks and was lost with them.)
TEST_F(CrashTest, CrashWhileTheToolHoldsItsLocksStillReports) {
  RunOptions options;
  options.env = {{"FAKE_CUDA_HOLD_FILL", "hold"}};
  options.gmt_options = "report=json:report_path=r.%p.json:crash_timeout_s=2";
  RunResult r = Run(GMT_CRASH_PROGRAM, {"segv_locked", "."}, options);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "caught SIGSEGV")) << r.err;
  EXPECT_TRUE(Contains(r.err, "live at the crash: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "crash_program_kernel")) << r.err;
  // The crashing thread's return addresses, raw, in the summary.
  EXPECT_TRUE(Contains(r.err, "stack (innermost first): 0x")) << r.err;
}

TEST_F(CrashTest, CrashReportOffWritesNothingAndStillDiesBySignal) {
  RunOptions options;
  options.gmt_options = "report=json:report_path=r.%p.json:crash_report=0";
  RunResult r = Run(GMT_CRASH_PROGRAM, {"segv", "."}, options);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.Describe();
  EXPECT_FALSE(Contains(r.err, "caught SIGSEGV")) << r.err;
  EXPECT_FALSE(r.has_report);
}

// The first sticky CUDA error: a cuda-error naming the call, the code and the
// planted kernel; the report exists before the program exits with its own
// code; the program saw the same code as without the tool.
TEST_F(CrashTest, StickyCudaErrorReportsBeforeExit) {
  RunResult plain = RunPlain(GMT_CRASH_PROGRAM, {"sticky", "."});
  EXPECT_EQ(plain.exit_code, 1) << plain.Describe();
  EXPECT_TRUE(Contains(plain.out,
                       "cudaDeviceSynchronize -> 700 cudaErrorIllegalAddress"))
      << plain.out;
  RunResult r = Run(GMT_CRASH_PROGRAM, {"sticky", "."});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_TRUE(
      Contains(r.out, "cudaDeviceSynchronize -> 700 cudaErrorIllegalAddress"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "report before exit: yes")) << r.out;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "cuda-error");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const json& e = errors[0];
  EXPECT_EQ(e.value("call", ""), "cudaDeviceSynchronize");
  EXPECT_EQ(e.value("cuda_result", 0), 700);
  EXPECT_EQ(e.value("cuda_error", ""), "cudaErrorIllegalAddress");
  ASSERT_TRUE(e["kernels"].is_array());
  ASSERT_FALSE(e["kernels"].empty());
  EXPECT_EQ(e["kernels"].back(), "fake_fault_illegal_address") << e.dump(1);
  EXPECT_TRUE(StackHas(e["stack"], "main")) << StackFunctions(e["stack"]);
  // It ends with the command that explains the fault, the program's own.
  const std::string detail = e.value("detail", "");
  const std::string command = std::string(
                                  "run it again as `gpumemtrace run "
                                  "--explain-faults -- ") +
                              GMT_CRASH_PROGRAM + " sticky .`";
  EXPECT_TRUE(detail.size() >= command.size() &&
              detail.compare(detail.size() - command.size(), command.size(),
                             command) == 0)
      << detail;
  // The later exit report keeps the crash object.
  ASSERT_TRUE(r.report.contains("crash")) << r.report.dump(1);
  const json& c = r.report["crash"];
  EXPECT_EQ(c.value("kind", ""), "cuda-error");
  EXPECT_EQ(c.value("call", ""), "cudaDeviceSynchronize");
  EXPECT_EQ(c.value("cuda_result", 0), 700);
  EXPECT_TRUE(HasName(RecentKernels(r.report), "fake_fault_illegal_address"));
  EXPECT_TRUE(HasName(RecentKernels(r.report), "crash_program_kernel"));
  EXPECT_EQ(c.value("live_blocks", 0), 2);
  // Once per process: printed once.
  size_t first = r.err.find("ERROR: cuda-error");
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ERROR: cuda-error", first + 1), std::string::npos)
      << r.err;
}

// The report at the sticky error shows the newest launch as the program made
// it: grid and block, and each argument that holds an address resolved to
// the block it points into (with where that block was allocated) or said to
// be none.
TEST_F(CrashTest, StickyErrorReportShowsTheNewestLaunchAndItsBlocks) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"sticky_args", "."});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> errors = ErrorsOfKind(r.report, "cuda-error");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const std::string detail = errors[0].value("detail", "");
  EXPECT_TRUE(Contains(detail,
                       "The newest launch: fake_fault_illegal_address(float*, "
                       "float*, int), launched at main ("))
      << detail;
  EXPECT_TRUE(Contains(detail, "crash_program.cc:")) << detail;
  EXPECT_TRUE(Contains(detail, "), with grid (4,1,1) and block (256,1,1)"))
      << detail;
  EXPECT_TRUE(Contains(detail, "argument 0 0x")) << detail;
  EXPECT_TRUE(Contains(detail,
                       "is 256 bytes into the 1.0 MiB block from cudaMalloc "
                       "allocated at (anonymous namespace)::"
                       "CrashAllocateDevice()"))
      << detail;
  EXPECT_TRUE(Contains(detail, "argument 1 0xdead0000 is not a tracked block"))
      << detail;
  EXPECT_FALSE(Contains(detail, "argument 2")) << "4096 is no address";
}

// Optimized, nvcc's launch stubs are inlined into the launching function at
// the kernel's own line; the site is the line that launched, found along the
// inline chain.
TEST_F(CrashTest, LaunchSiteIsTheLaunchingLineNotTheInlinedStub) {
  RunResult r = Run(GMT_CRASH_PROGRAM, {"sticky_stub", "."});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  const size_t at = r.out.find("launch line: ");
  ASSERT_NE(at, std::string::npos) << r.Describe();
  const int line = std::atoi(r.out.c_str() + at + 13);
  std::vector<json> errors = ErrorsOfKind(r.report, "cuda-error");
  ASSERT_EQ(errors.size(), 1u) << r.Describe();
  const std::string detail = errors[0].value("detail", "");
  EXPECT_TRUE(
      Contains(detail, "launched at main (") &&
      Contains(detail, "crash_program.cc:" + std::to_string(line) + ")"))
      << "expected line " << line << ": " << detail;
}

// On stderr the report at the CUDA error is the process's one full report:
// the exit report names it and repeats nothing but its summary line.
TEST_F(CrashTest, ExitReportRefersToTheCudaErrorReportInsteadOfRepeatingIt) {
  RunOptions options;
  options.gmt_options = "report=text";
  RunResult r = Run(GMT_CRASH_PROGRAM, {"sticky", "."}, options);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  auto count = [&](const std::string& part) {
    size_t n = 0;
    for (size_t at = r.err.find(part); at != std::string::npos;
         at = r.err.find(part, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("report (cuda-error)"), 1u) << r.err;
  EXPECT_EQ(count("report (exit)"), 1u) << r.err;
  EXPECT_EQ(count("CRASH:"), 1u) << r.err;
  EXPECT_EQ(count("device 0 "), 1u) << r.err;
  EXPECT_EQ(count("the cuda-error report above (at "), 1u) << r.err;
  EXPECT_EQ(count("SUMMARY:"), 2u) << r.err;
  // The exit report comes last.
  EXPECT_GT(r.err.find("report (exit)"), r.err.find("report (cuda-error)"));
}

// explain_faults: the library arms the driver's GPU core dump at load; at a
// GPU exception the driver (here the double, writing a dump captured on an
// H200) writes it and aborts, and the crash report explains it: exception,
// kernel, line, threads, the address and where it lies among the blocks.
class ExplainFaultsTest : public CrashTest {
 protected:
  RunResult RunFaulting(
      const std::string& extra_options,
      std::vector<std::pair<std::string, std::string>> env = {},
      const std::string& dump = "wild_write.cudacore") {
    RunOptions options;
    options.gmt_options =
        "report=json:report_path=r.%p.json:explain_faults=1" + extra_options;
    options.env = std::move(env);
    options.env.emplace_back("TMPDIR", tmp());
    options.env.emplace_back("FAKE_CUDA_GPU_DUMP",
                             std::string(GMT_CUDACORE_FIXTURES) + "/" + dump);
    return Run(GMT_CRASH_PROGRAM, {"gpu_dump", "."}, options);
  }
  // The dump folders the library left in the test's folder.
  std::vector<std::string> DumpFolders() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(tmp())) {
      const std::string name = e.path().filename().string();
      if (name.rfind("gpumemtrace-dump.", 0) == 0) out.push_back(e.path());
    }
    return out;
  }
  static std::string Lines(const json& crash) {
    std::string text;
    for (const json& line : crash.value("gpu_fault", json::array())) {
      text += line.get<std::string>() + "\n";
    }
    return text;
  }
};

TEST_F(ExplainFaultsTest, CrashReportExplainsTheDriversDumpAndRemovesIt) {
  RunResult r = RunFaulting("");
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& c = r.report["crash"];
  EXPECT_EQ(c.value("signal_name", ""), "SIGABRT");
  const std::string text = Lines(c);
  EXPECT_TRUE(Contains(text, "GPU fault, read from the GPU core dump"))
      << c.dump(1);
  EXPECT_TRUE(Contains(text, "Warp Invalid Address Space")) << text;
  EXPECT_TRUE(Contains(text, "wild_write.cu:5")) << text;
  EXPECT_TRUE(Contains(text, "block (2,0,0), threads (160,0,0)..(191,0,0)"))
      << text;
  EXPECT_FALSE(c.contains("gpu_dump_kept"));
  EXPECT_TRUE(DumpFolders().empty()) << "the dump or its folder stayed";
  // The program's own sync never returned: the driver aborted in it.
  EXPECT_TRUE(ErrorsOfKind(r.report, "cuda-error").empty());
}

TEST_F(ExplainFaultsTest, KeptDumpIsNamedWithTheCommandThatOpensIt) {
  RunResult r = RunFaulting(":keep_gpu_dump=1:report=text,json");
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const std::string kept = r.report["crash"].value("gpu_dump_kept", "");
  ASSERT_FALSE(kept.empty()) << r.report["crash"].dump(1);
  EXPECT_TRUE(std::filesystem::exists(kept)) << kept;
  EXPECT_TRUE(Contains(r.err, "cuda-gdb -batch -ex 'target cudacore " + kept))
      << r.err;
  // In the tool's own private folder, beside nothing else.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(
                              std::filesystem::path(kept).parent_path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(ExplainFaultsTest, AnUnreadableDumpIsSaidAndKept) {
  RunResult r = RunFaulting("", {}, "README.md");
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  const json& c = r.report["crash"];
  EXPECT_TRUE(Contains(Lines(c), "could not be read: ")) << c.dump(1);
  const std::string kept = c.value("gpu_dump_kept", "");
  EXPECT_TRUE(!kept.empty() && std::filesystem::exists(kept)) << c.dump(1);
}

// A traced Python's subprocesses inherit the dump the tool armed in it: they
// take it as armed (and read their own dump) instead of refusing.
TEST_F(ExplainFaultsTest, AChildOfATracedProcessTakesItsArmedDump) {
  const std::string dir = tmp() + "/gpumemtrace-dump.parent";
  std::filesystem::create_directory(dir);
  RunResult r = RunFaulting(
      "", {{"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1"},
           {"CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0"},
           {"CUDA_COREDUMP_GENERATION_FLAGS",
            "skip_nonrelocated_elf_images,skip_global_memory,"
            "skip_shared_memory,skip_local_memory,skip_constbank_memory"},
           {"CUDA_COREDUMP_FILE", dir + "/gpu.%p.cudacore"}});
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.Describe();
  EXPECT_FALSE(Contains(r.err, "set already")) << r.err;
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_TRUE(Contains(Lines(r.report["crash"]), "wild_write.cu:5"))
      << r.report["crash"].dump(1);
  // Read and removed; the parent's folder stays for the parent.
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST_F(ExplainFaultsTest, TheUsersOwnDumpSettingsAreLeftAlone) {
  RunResult r = RunFaulting("", {{"CUDA_COREDUMP_FILE", tmp() + "/mine"}});
  // Not armed: the fault stays a sticky error the program sees.
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_TRUE(Contains(r.err, "CUDA_COREDUMP_FILE is set already")) << r.err;
  EXPECT_TRUE(DumpFolders().empty());
  EXPECT_FALSE(std::filesystem::exists(tmp() + "/mine"));
}

TEST_F(ExplainFaultsTest, WithoutTheOptionNothingIsArmed) {
  RunOptions options;
  options.env = {{"TMPDIR", tmp()},
                 {"FAKE_CUDA_GPU_DUMP",
                  std::string(GMT_CUDACORE_FIXTURES) + "/wild_write.cudacore"}};
  RunResult r = Run(GMT_CRASH_PROGRAM, {"gpu_dump", "."}, options);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(r.report["crash"].contains("gpu_fault"));
  EXPECT_TRUE(DumpFolders().empty());
}

}  // namespace
}  // namespace gmt_test
