#include "gtest/gtest.h"
#include "lib/torch/allocator_conf.h"

namespace gmt {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

TEST(TorchModeTest, UnsetConfigurationGetsTheAsyncBackend) {
  TorchModePlan plan = PlanTorchMode(nullptr, nullptr);
  EXPECT_TRUE(plan.refusal.empty());
  EXPECT_EQ(plan.set,
            (Settings{{"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"}}));
  // An empty variable is as good as unset.
  EXPECT_EQ(PlanTorchMode("  ", nullptr).set, plan.set);
}

TEST(TorchModeTest, OtherSettingsAreKept) {
  TorchModePlan plan = PlanTorchMode("max_split_size_mb:128", nullptr);
  EXPECT_TRUE(plan.refusal.empty());
  EXPECT_EQ(plan.set,
            (Settings{{"PYTORCH_CUDA_ALLOC_CONF",
                       "max_split_size_mb:128,backend:cudaMallocAsync"}}));
}

TEST(TorchModeTest, TheGenericVariableIsChangedWhereItIsTheOneSet) {
  TorchModePlan plan = PlanTorchMode(nullptr, "expandable_segments:True");
  EXPECT_EQ(plan.set,
            (Settings{{"PYTORCH_ALLOC_CONF",
                       "expandable_segments:True,backend:cudaMallocAsync"}}));
  // Both set: both get it, so neither can name the native backend by
  // default over the other.
  EXPECT_EQ(PlanTorchMode("a:1", "b:2").set.size(), 2u);
}

TEST(TorchModeTest, AlreadyAsyncIsLeftAlone) {
  TorchModePlan plan = PlanTorchMode(" backend : cudaMallocAsync ", nullptr);
  EXPECT_TRUE(plan.refusal.empty());
  EXPECT_TRUE(plan.set.empty());
}

TEST(TorchModeTest, AnotherBackendIsRefusedWithAMessageAndNothingChanges) {
  TorchModePlan plan =
      PlanTorchMode("max_split_size_mb:64,backend:native", nullptr);
  EXPECT_TRUE(plan.set.empty());
  EXPECT_NE(plan.refusal.find("PYTORCH_CUDA_ALLOC_CONF asks for "
                              "backend:native"),
            std::string::npos);
  // Refused even when the other variable alone would have been changed.
  EXPECT_TRUE(PlanTorchMode("a:1", "backend:native").set.empty());
}

}  // namespace
}  // namespace gmt
