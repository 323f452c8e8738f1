// Differential: every program that prints the result of each CUDA call must
// print the same thing, and exit with the same code, with the tool under each
// of many option sets as without it (DESIGN §2 pitfall 8). The interposition
// suites compare with the default options; this one varies check levels,
// quarantine sizes, redzone sizes, skipped families, stack capture and the
// pass-through mode. (gmt_guard_proc_program is left out: it prints the
// module each entry point lives in, which the tool changes by design.)
#include <filesystem>

#include "tests/reliability/reliability_util.h"

namespace gmt_test {
namespace {

struct DiffCase {
  const char* name;
  const char* program;
  std::vector<std::string> args;
};

void PrintTo(const DiffCase& c, std::ostream* os) { *os << c.name; }

const char* const kOptionSets[] = {
    "check=kernel",
    "check=exit",
    "check=none",
    "quarantine_bytes=0",
    "quarantine_bytes=1024",
    "guard=0",
    "guard_front=0:guard_tail_min=256:guard_tail_max=256",
    "guard_front=4096:guard_tail_ratio=1:guard_tail_min=65536",
    "guard_skip=device,pitched,managed,async",
    "stack_depth=0:symbolize=0:freed_history=0",
    "check=kernel:quarantine_bytes=1:stack_depth=64",
    "enabled=0",
};

class DifferentialTest : public InterposeTest,
                         public testing::WithParamInterface<DiffCase> {};

TEST_P(DifferentialTest, SameOutputUnderEveryOptionSet) {
  const DiffCase& c = GetParam();
  RunResult plain = RunPlain(c.program, c.args);
  ASSERT_FALSE(plain.timed_out) << plain.Describe();
  ASSERT_FALSE(plain.out.empty()) << plain.Describe();
  for (const char* option_set : kOptionSets) {
    RunOptions options;
    options.gmt_options =
        std::string("report=json:report_path=<dir>/r.%p.json:") + option_set;
    RunResult r = Run(c.program, c.args, options);
    ASSERT_FALSE(r.timed_out) << option_set << "\n" << r.Describe();
    EXPECT_EQ(r.exit_code, plain.exit_code) << option_set << "\n"
                                            << r.Describe();
    EXPECT_EQ(r.out, plain.out)
        << "GMT_OPTIONS " << option_set << "\nwithout the tool:\n"
        << plain.Describe() << "with it:\n"
        << r.Describe();
    // Every option set is valid: the tool must not complain about it.
    EXPECT_FALSE(Contains(r.err, "GMT_OPTIONS")) << option_set << "\n" << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Programs, DifferentialTest,
    testing::Values(
        DiffCase{"copy_runtime", GMT_GUARD_COPY_PROGRAM, {"runtime"}},
        DiffCase{"copy_driver", GMT_GUARD_COPY_PROGRAM, {"driver"}},
        DiffCase{"copy_ptds_runtime", GMT_GUARD_COPY_PTDS_PROGRAM, {"runtime"}},
        DiffCase{"copy_ptds_driver", GMT_GUARD_COPY_PTDS_PROGRAM, {"driver"}},
        DiffCase{"query_driver", GMT_GUARD_QUERY_PROGRAM, {"driver"}},
        DiffCase{"query_runtime", GMT_GUARD_QUERY_PROGRAM, {"runtime"}},
        DiffCase{"launch_driver", GMT_GUARD_LAUNCH_PROGRAM, {"driver"}},
        DiffCase{"launch_runtime", GMT_GUARD_LAUNCH_PROGRAM, {"runtime"}},
        DiffCase{
            "launch_ptds_driver", GMT_GUARD_LAUNCH_PTDS_PROGRAM, {"driver"}},
        DiffCase{
            "launch_ptds_runtime", GMT_GUARD_LAUNCH_PTDS_PROGRAM, {"runtime"}},
        DiffCase{"attribution_runtime",
                 GMT_GUARD_LAUNCH_PROGRAM,
                 {"attribution_runtime"}},
        DiffCase{"attribution_driver",
                 GMT_GUARD_LAUNCH_PTDS_PROGRAM,
                 {"attribution_driver"}},
        DiffCase{"mixed", GMT_MIXED_PROGRAM, {}},
        DiffCase{"leak_all", GMT_LEAK_PROGRAM, {"all"}},
        DiffCase{"double_free", GMT_ERROR_PROGRAM, {"double_free"}},
        DiffCase{"interior_free", GMT_ERROR_PROGRAM, {"interior_free"}},
        DiffCase{"mismatch", GMT_ERROR_PROGRAM, {"mismatch"}},
        DiffCase{"reset", GMT_RESET_PROGRAM, {"1"}},
        DiffCase{"ctx_destroy", GMT_CONTEXT_PROGRAM, {"ctx_destroy"}},
        DiffCase{"static_runtime", GMT_STATIC_PROGRAM, {}},
        DiffCase{"life_reset_midway", GMT_LIFE_PROGRAM, {"reset_midway"}},
        DiffCase{"life_static_dtors", GMT_LIFE_PROGRAM, {"static_dtors"}},
        DiffCase{
            "stress_threads", GMT_STRESS_PROGRAM, {"threads", "4", "300"}}),
    [](const testing::TestParamInfo<DiffCase>& info) {
      return std::string(info.param.name);
    });

// Found by the option sets above: with guard_front=0 the user's pointer is the
// raw block's start, so a second cudaFree of a block the tool held in
// quarantine reached CUDA, which accepted it (the tool still owned that
// memory): the program saw cudaSuccess instead of cudaErrorInvalidValue, the
// double free went unreported, and the later eviction freed the block again.
// Now: CUDA's own refusal, and a double-free report with both stacks — for
// the runtime and the driver, with and without a front redzone.
TEST(DoubleFreeTest, QuarantinedBlockWithoutFrontRedzone) {
  ScopedTempDir tmp;
  int run = 0;
  for (const char* mode : {"double_free", "driver_double_free"}) {
    for (const char* front : {"guard_front=0", "guard_front=256"}) {
      std::string dir = tmp.path() + "/run" + std::to_string(++run);
      std::filesystem::create_directories(dir);
      RunOptions plain_options;
      plain_options.preload = false;
      plain_options.set_gmt_options = false;
      RunResult plain =
          RunProgram(GMT_ERROR_PROGRAM, {mode}, dir, plain_options);
      dir += "t";
      std::filesystem::create_directories(dir);
      RunOptions options;
      options.gmt_options =
          std::string("report=json:report_path=<dir>/r.%p.json:") + front;
      RunResult r = RunProgram(GMT_ERROR_PROGRAM, {mode}, dir, options);
      EXPECT_EQ(r.out, plain.out) << mode << " " << front;
      ASSERT_TRUE(r.has_report) << r.Describe();
      std::vector<json> errors = ErrorsOfKind(r.report, "double-free");
      ASSERT_EQ(errors.size(), 1u) << mode << " " << front << "\n"
                                   << r.Describe();
      EXPECT_EQ(r.report["summary"].value("errors", -1), 1) << r.Describe();
      EXPECT_EQ(r.report["summary"].value("untracked_frees", 0), 0)
          << r.report["summary"].dump();
    }
  }
}

}  // namespace
}  // namespace gmt_test
