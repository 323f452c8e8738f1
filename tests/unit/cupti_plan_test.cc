// PlanCupti (lib/engine/cupti_plan.h): when the tool subscribes to CUPTI and
// what it enables, and the validation of the cupti options.
#include "lib/engine/cupti_plan.h"

#include "gtest/gtest.h"
#include "lib/core/options.h"

namespace gmt {
namespace {

Options Parsed(const char* text) {
  ParseResult r = ParseOptions(text);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  return r.options;
}

TEST(CuptiPlanTest, AutoSubscribesOnlyForInjectionWithoutShims) {
  const Options o = Parsed("");
  EXPECT_EQ(o.cupti, CuptiMode::kAuto);
  CuptiPlan injected =
      PlanCupti(o, /*injected=*/true,
                /*shims_interposed=*/false, /*gpu_dump_armed=*/false);
  EXPECT_TRUE(injected.subscribe);
  EXPECT_TRUE(injected.memory);
  EXPECT_TRUE(injected.contexts);
  EXPECT_TRUE(injected.redirect);
  EXPECT_TRUE(injected.launches);  // guard=1, check=sync: names are needed
  EXPECT_FALSE(
      PlanCupti(o, true, /*shims_interposed=*/true, /*gpu_dump_armed=*/false)
          .subscribe);
  EXPECT_FALSE(PlanCupti(o, /*injected=*/false, false, /*gpu_dump_armed=*/false)
                   .subscribe);
  EXPECT_FALSE(PlanCupti(o, false, true, /*gpu_dump_armed=*/false).subscribe);
}

TEST(CuptiPlanTest, OnSubscribesBesideTheShimsWithoutRedirecting) {
  CuptiPlan plan =
      PlanCupti(Parsed("cupti=on"), /*injected=*/false,
                /*shims_interposed=*/true, /*gpu_dump_armed=*/false);
  EXPECT_TRUE(plan.subscribe);
  EXPECT_TRUE(plan.memory);
  EXPECT_FALSE(plan.redirect);  // the program already has the shims
}

TEST(CuptiPlanTest, OffAndDisabledNeverSubscribe) {
  EXPECT_FALSE(
      PlanCupti(Parsed("cupti=off"), true, false, /*gpu_dump_armed=*/false)
          .subscribe);
  EXPECT_FALSE(PlanCupti(Parsed("cupti=on:enabled=0"), true, false,
                         /*gpu_dump_armed=*/false)
                   .subscribe);
}

TEST(CuptiPlanTest, LaunchCallbacksFollowTheGuardMode) {
  EXPECT_FALSE(
      PlanCupti(Parsed("guard=0"), true, false, /*gpu_dump_armed=*/false)
          .launches);
  EXPECT_FALSE(
      PlanCupti(Parsed("check=none"), true, false, /*gpu_dump_armed=*/false)
          .launches);
  EXPECT_TRUE(
      PlanCupti(Parsed("check=kernel"), true, false, /*gpu_dump_armed=*/false)
          .launches);
  EXPECT_TRUE(PlanCupti(Parsed("guard=0:cupti_kernels=on"), true, false,
                        /*gpu_dump_armed=*/false)
                  .launches);
  EXPECT_FALSE(PlanCupti(Parsed("cupti_kernels=off"), true, false,
                         /*gpu_dump_armed=*/false)
                   .launches);
}

TEST(CuptiPlanTest, BadValuesNameTheKeyAndKeepTheDefault) {
  ParseResult r = ParseOptions("cupti=sometimes:cupti_kernels=2");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].find("'cupti'"), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[1].find("'cupti_kernels'"), std::string::npos)
      << r.errors[1];
  EXPECT_EQ(r.options.cupti, CuptiMode::kAuto);
  EXPECT_EQ(r.options.cupti_kernels, CuptiMode::kAuto);
}

// Graph memory callbacks come with memory tracking; activity
// records only where they are needed and no profiler shares them.
TEST(CuptiPlanTest, GraphCallbacksComeWithMemoryTracking) {
  EXPECT_TRUE(
      PlanCupti(Parsed(""), true, false, /*gpu_dump_armed=*/false).graphs);
  EXPECT_TRUE(
      PlanCupti(Parsed("cupti=on"), false, true, /*gpu_dump_armed=*/false)
          .graphs);
  EXPECT_TRUE(
      PlanCupti(Parsed("guard=0"), true, false, /*gpu_dump_armed=*/false)
          .graphs);
  EXPECT_FALSE(
      PlanCupti(Parsed("cupti=off"), true, false, /*gpu_dump_armed=*/false)
          .graphs);
}

TEST(CuptiPlanTest, ActivityOnlyWithoutTheShimsByDefault) {
  EXPECT_TRUE(PlanCupti(Parsed(""), /*injected=*/true,
                        /*shims_interposed=*/false, /*gpu_dump_armed=*/false)
                  .activity);
  // Beside the shims (cupti=on) the activity buffers stay Kineto's.
  EXPECT_FALSE(
      PlanCupti(Parsed("cupti=on"), false, true, /*gpu_dump_armed=*/false)
          .activity);
  EXPECT_TRUE(PlanCupti(Parsed("cupti=on:cupti_activity=on"), false, true,
                        /*gpu_dump_armed=*/false)
                  .activity);
  EXPECT_FALSE(PlanCupti(Parsed("cupti_activity=off"), true, false,
                         /*gpu_dump_armed=*/false)
                   .activity);
  // Not subscribed: nothing at all.
  EXPECT_FALSE(PlanCupti(Parsed("cupti_activity=on"), false, true,
                         /*gpu_dump_armed=*/false)
                   .activity);
  ParseResult r = ParseOptions("cupti_activity=maybe");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("'cupti_activity'"), std::string::npos)
      << r.errors[0];
  EXPECT_EQ(r.options.cupti_activity, CuptiMode::kAuto);
}

// The driver writes no GPU core dump while a CUPTI subscriber exists (H200,
// driver 580: "not supported with other developer tools"), so an armed dump
// (explain_faults, or the user's CUDA_ENABLE_COREDUMP_ON_EXCEPTION) keeps the
// tool from subscribing in every mode; injection alone is then blind, which
// the plan says so the note is not hidden at verbosity 1.
TEST(CuptiPlanTest, AnArmedGpuDumpIsNeverTakenAwayBySubscribing) {
  const CuptiPlan beside = PlanCupti(Parsed("cupti=on"), /*injected=*/false,
                                     /*shims_interposed=*/true,
                                     /*gpu_dump_armed=*/true);
  EXPECT_FALSE(beside.subscribe);
  EXPECT_FALSE(beside.blind);
  EXPECT_NE(std::string(beside.reason).find("core dump"), std::string::npos)
      << beside.reason;
  const CuptiPlan alone = PlanCupti(Parsed(""), /*injected=*/true,
                                    /*shims_interposed=*/false,
                                    /*gpu_dump_armed=*/true);
  EXPECT_FALSE(alone.subscribe);
  EXPECT_TRUE(alone.blind);
  // cupti=off says why it is off, not the dump.
  EXPECT_STREQ(PlanCupti(Parsed("cupti=off"), true, false, true).reason,
               "cupti=off");
}

TEST(CuptiPlanTest, TheProcessPlanReadsTheDumpFromTheEnvironment) {
  unsetenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  EXPECT_TRUE(PlanCuptiForProcess(Parsed(""), true, false).subscribe);
  setenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "0", 1);
  EXPECT_TRUE(PlanCuptiForProcess(Parsed(""), true, false).subscribe);
  setenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1", 1);
  EXPECT_FALSE(PlanCuptiForProcess(Parsed(""), true, false).subscribe);
  unsetenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
}

}  // namespace
}  // namespace gmt
