// The CUPTI front end against the fake driver and fake libcupti:
// a program the tool was injected into (CUDA_INJECTION64_PATH, no
// LD_PRELOAD) is traced from CUPTI callbacks; beside the shims nothing is
// counted twice; a CUPTI held by another tool, or none at all, is one note
// and the program runs on.
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>

#include <fstream>
#include <set>
#include <utility>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

class CuptiTest : public InterposeTest {
 protected:
  // The tool through CUDA_INJECTION64_PATH, LD_PRELOAD only if `preload`.
  RunResult RunInjected(
      bool preload, const std::string& extra_options = "",
      std::vector<std::pair<std::string, std::string>> env = {},
      const std::vector<std::string>& args = {}, int timeout_s = 120,
      const char* program = GMT_CUPTI_PROGRAM) {
    RunOptions options;
    options.timeout_s = timeout_s;
    options.preload = preload;
    options.gmt_options =
        "report=json:report_path=<dir>/r.%p.json" + extra_options;
    env.emplace_back("CUDA_INJECTION64_PATH", GMT_TOOL_PATH);
    options.env = std::move(env);
    return Run(program, args, options);
  }

  // "domain cbid" pairs the fake libcupti had enabled at exit.
  static std::set<std::pair<int, int>> Enabled(const std::string& path) {
    std::set<std::pair<int, int>> out;
    std::ifstream in(path);
    int domain = 0, cbid = 0;
    while (in >> domain >> cbid) out.insert({domain, cbid});
    return out;
  }
};

// With CUPTI's memory records on, CUPTI 13.0 faults (SIGSEGV at 0x68 inside
// libcupti) freeing a pointer imported from another process's pool, as
// pool_ipc's importer did under injection on the H200; the double faults the
// same way. Injection alone turns the records on, so the tool stops them
// before the program's first pool import: in the shim (a runtime's lookup)
// and in CUPTI's callback (libcuda called directly).
TEST_F(CuptiTest, APoolImportStopsMemoryRecordsBeforeAnImportedPointerIsFreed) {
  for (const char* how : {"direct", "lookup"}) {
    SCOPED_TRACE(how);
    RunResult plain = RunPlain(GMT_CUPTI_PROGRAM, {"pool_import", how});
    ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
    RunResult r = RunInjected(/*preload=*/false, "", {}, {"pool_import", how});
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, plain.out) << "the tool changed what the program saw";
    ASSERT_TRUE(r.has_report) << r.Describe();
    EXPECT_TRUE(r.report["errors"].empty()) << r.report["errors"].dump(1);
    bool noted = false;
    for (const json& note : r.report["notes"]) {
      if (note.get<std::string>().find("CUPTI memory records were turned "
                                       "off") != std::string::npos) {
        noted = true;
      }
    }
    EXPECT_TRUE(noted) << r.report["notes"].dump(1);
  }
}

TEST_F(CuptiTest, InjectionAloneRecordsLeaksAndFreeErrors) {
  RunResult r = RunInjected(/*preload=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  // What the program sees is unchanged: the double free is CUDA's error.
  EXPECT_NE(r.out.find("cuMemFree again -> 1 CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << r.out;
  std::vector<json> leaks = LeaksWithApi(r.report, "cuMemAlloc");
  bool found_1000 = false;
  for (const json& leak : leaks) {
    if (leak.value("bytes", uint64_t{0}) != 1000) continue;
    found_1000 = true;
    EXPECT_EQ(leak.value("count", 0), 1);
    // Innermost frame is the program's, not libcuda's or libcupti's.
    ASSERT_FALSE(leak["stack"].empty()) << leak.dump();
    EXPECT_EQ(leak["stack"][0].value("function", ""), "LeakThroughDriver()")
        << StackFunctions(leak["stack"]);
  }
  EXPECT_TRUE(found_1000) << r.Describe();
  std::vector<json> frees = ErrorsOfKind(r.report, "double-free");
  ASSERT_EQ(frees.size(), 1u) << r.Describe();
  EXPECT_TRUE(StackHas(frees[0]["stack"], "FreeTwice"))
      << StackFunctions(frees[0]["stack"]);
  // 1000, 2000 and the 512 made through the looked-up pointer, once each.
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 3) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("frees", -1), 1) << r.Describe();
}

// A cuGetProcAddress answered after the injection hands out the shim, so the
// block gets redzones; the overrun is named with the kernel CUPTI saw launch.
TEST_F(CuptiTest, LookupAfterInjectionGetsGuardsAndKernelNames) {
  RunResult r = RunInjected(/*preload=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_NE(r.out.find("\nredirected\n"), std::string::npos) << r.out;
  std::vector<json> oob = ErrorsOfKind(r.report, "oob-write");
  ASSERT_EQ(oob.size(), 1u) << r.Describe();
  EXPECT_EQ(oob[0].value("offset", int64_t{-1}), 512) << oob[0].dump();
  ASSERT_TRUE(oob[0].contains("kernels")) << oob[0].dump();
  bool named = false;
  for (const json& k : oob[0]["kernels"]) {
    if (k.get<std::string>() == "cupti_named_kernel") named = true;
  }
  EXPECT_TRUE(named) << oob[0].dump();
  EXPECT_TRUE(StackHas(oob[0]["allocation"]["stack"], "OverrunAfterLookup"))
      << oob[0].dump();
}

// A table the runtime filled before cuInit (nvcc's static runtime) is
// redirected to the shims by the injection itself.
TEST_F(CuptiTest, TableFilledBeforeCuInitIsRedirected) {
  RunResult r = RunInjected(/*preload=*/false, "", {}, {"early"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_NE(r.out.find("\nredirected\n"), std::string::npos) << r.out;
  std::vector<json> oob = ErrorsOfKind(r.report, "oob-write");
  ASSERT_EQ(oob.size(), 1u) << r.Describe();
  EXPECT_EQ(oob[0].value("offset", int64_t{-1}), 256) << oob[0].dump();
  EXPECT_TRUE(StackHas(oob[0]["allocation"]["stack"], "EarlyTableAlloc"))
      << oob[0].dump();
  bool named = false;
  for (const json& k : oob[0]["kernels"]) {
    if (k.get<std::string>() == "cupti_named_kernel") named = true;
  }
  EXPECT_TRUE(named) << oob[0].dump();
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 1) << r.Describe();
}

// (found by the H200 differential suite): under injection alone a
// program's direct libcuda calls went through its own PLT to the driver, and
// with a redzone behind the block the driver accepted a memset one byte past
// the end that it refuses without the tool. The injection points the
// program's import slots at the shims: lazily bound ones and, in the -z now
// build, ones in the read-only GOT. Every code as without the tool, and the
// overrun reported.
TEST_F(CuptiTest, InjectionAloneKeepsDirectDriverCallsBounded) {
  for (const char* program : {GMT_CUPTI_PROGRAM, GMT_CUPTI_PROGRAM_NOW}) {
    SCOPED_TRACE(program);
    RunResult plain = RunPlain(program, {"bounds"});
    ASSERT_EQ(plain.exit_code, 0) << plain.Describe();
    ASSERT_NE(plain.out.find("cuMemsetD8(1001) -> 1 CUDA_ERROR_INVALID_VALUE"),
              std::string::npos)
        << plain.Describe();
    RunResult r =
        RunInjected(/*preload=*/false, "", {}, {"bounds"}, 120, program);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, plain.out) << r.Describe();
    ASSERT_TRUE(r.has_report) << r.Describe();
    std::vector<json> bounds = ErrorsOfKind(r.report, "api-bounds");
    ASSERT_EQ(bounds.size(), 1u) << r.Describe();
    EXPECT_EQ(bounds[0].value("bytes", uint64_t{0}), 1001u) << bounds[0].dump();
    // The block was guarded (the allocation went through the shim too) and
    // counted once.
    EXPECT_EQ(r.report["summary"].value("allocations", -1), 1) << r.Describe();
    EXPECT_EQ(r.report["summary"].value("frees", -1), 1) << r.Describe();
    EXPECT_TRUE(ErrorsOfKind(r.report, "oob-write").empty()) << r.Describe();
  }
}

// Check=kernel under injection alone hung on the H200. The kernel
// launches reach the tool only through CUPTI here, and inside a launch's
// exit callback the program's launch call is still in progress: the strict
// fake driver hangs there on any call that enqueues GPU work or waits for it
// (as a deadlocked driver would), so a regression times out and fails. The
// per-kernel check is owed and made before the next kernel: the overrun is
// still named by the one kernel that ran before it was written.
TEST_F(CuptiTest, KernelCheckUnderInjectionDoesNoCudaWorkInsideTheLaunch) {
  RunResult r = RunInjected(/*preload=*/false, ":check=kernel",
                            {{"FAKE_CUDA_STRICT_CALLBACKS", "1"}}, {"kernels"},
                            /*timeout_s=*/30);
  ASSERT_FALSE(r.timed_out) << "hung (a CUDA call inside a launch's exit "
                               "callback?)\n"
                            << r.Describe();
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.err.find("deadlock"), std::string::npos) << r.err;
  ASSERT_TRUE(r.has_report) << r.Describe();
  std::vector<json> oob = ErrorsOfKind(r.report, "oob-write");
  ASSERT_EQ(oob.size(), 1u) << r.Describe();
  EXPECT_EQ(oob[0].value("offset", int64_t{-1}), 256) << oob[0].dump();
  // The double's kernels take no arguments, so with per-kernel checks
  // scoped to what a launch's arguments reach, no check follows them: the
  // overrun is found at the next synchronization, naming the kernels since
  // the last clean check, the one that wrote among them.
  EXPECT_EQ(oob[0].value("check", ""), "sync") << oob[0].dump();
  ASSERT_TRUE(oob[0].contains("kernels")) << oob[0].dump();
  bool named = false;
  for (const json& k : oob[0]["kernels"]) {
    named = named || k.get<std::string>() == "cupti_first_kernel";
  }
  EXPECT_TRUE(named) << oob[0].dump();
}

// Shims and CUPTI both active: every call is seen by both, counted once.
TEST_F(CuptiTest, BothPathsCountOnce) {
  RunResult r = RunInjected(/*preload=*/true, ":cupti=on");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 3) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("frees", -1), 1) << r.Describe();
  EXPECT_EQ(ErrorsOfKind(r.report, "double-free").size(), 1u) << r.Describe();
  std::vector<json> leaks = LeaksWithApi(r.report, "cuMemAlloc");
  EXPECT_EQ(TotalCount(leaks), 2u) << r.Describe();
  EXPECT_EQ(TotalBytes(leaks), 1512u) << r.Describe();
}

TEST_F(CuptiTest, LaunchCallbacksOnlyWhenGuardReportsNeedNames) {
  const std::pair<int, int> launch{CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel};
  const std::pair<int, int> alloc{CUPTI_CB_DOMAIN_DRIVER_API,
                                  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2};
  const std::string with = tmp() + "/with.txt";
  RunResult r = RunInjected(false, "", {{"FAKE_CUPTI_REPORT", with}});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(Enabled(with).count(launch)) << r.Describe();
  EXPECT_TRUE(Enabled(with).count(alloc)) << r.Describe();

  const std::string without = tmp() + "/without.txt";
  r = RunInjected(false, ":guard=0", {{"FAKE_CUPTI_REPORT", without}});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_FALSE(Enabled(without).count(launch)) << r.Describe();
  EXPECT_TRUE(Enabled(without).count(alloc)) << r.Describe();
}

// Under LD_PRELOAD alone the default leaves CUPTI to profilers: libcupti is
// not even loaded.
TEST_F(CuptiTest, PreloadAloneDoesNotSubscribeByDefault) {
  const std::string path = tmp() + "/enabled.txt";
  RunOptions options;
  options.env = {{"FAKE_CUPTI_REPORT", path}};
  RunResult r = Run(GMT_CUPTI_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_FALSE(std::filesystem::exists(path)) << ReadFile(path);
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 3) << r.Describe();
}

TEST_F(CuptiTest, TakenCuptiIsOneNoteAndTheProgramRuns) {
  RunResult plain = RunPlain(GMT_CUPTI_PROGRAM);
  RunResult r = RunInjected(/*preload=*/true, ":cupti=on",
                            {{"FAKE_CUPTI_TAKEN", "nsys-profiler"}});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, plain.out);
  size_t first = r.err.find("CUPTI is taken");
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("CUPTI is taken", first + 1), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nsys-profiler"), std::string::npos) << r.err;
  // The shims still traced everything.
  ASSERT_TRUE(r.has_report) << r.Describe();
  EXPECT_EQ(r.report["summary"].value("allocations", -1), 3) << r.Describe();
}

TEST_F(CuptiTest, MissingCuptiIsAClearNoteAndTheProgramRuns) {
  RunResult r =
      RunInjected(/*preload=*/false, ":cupti_library=/nonexistent/libcupti.so");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.err.find("CUPTI could not be loaded"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/nonexistent/libcupti.so"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("cuMemAlloc(1000) -> 0 CUDA_SUCCESS"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gmt_test
