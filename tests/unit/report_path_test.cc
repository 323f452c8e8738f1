// Report path expansion for multi-process jobs (lib/core/launcher_rank.h,
// ExpandPath in lib/core/options.h): %r from the launcher's rank variables in
// their documented order, %h the host name, with %p and %% as before.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "lib/core/launcher_rank.h"
#include "lib/core/options.h"

namespace gmt {
namespace {

// Each test starts with no rank variable set and restores nothing: the test
// binary runs one test per process under CTest (PRE_TEST discovery), and the
// variables are cleared again here for any order.
class ReportPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kRankVariables) unsetenv(name);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(ReportPathTest, NoLauncherIsRankZero) {
  EXPECT_EQ(LauncherRank(), "0");
  EXPECT_EQ(ExpandPath("gmt.%r.json", 5), "gmt.0.json");
}

TEST_F(ReportPathTest, EachLauncherVariableIsRead) {
  for (const char* name : kRankVariables) {
    SetUp();
    setenv(name, "17", 1);
    EXPECT_EQ(LauncherRank(), "17") << name;
  }
}

TEST_F(ReportPathTest, MpiWorldRankWinsOverLocalRank) {
  setenv("LOCAL_RANK", "1", 1);
  setenv("RANK", "9", 1);
  EXPECT_EQ(LauncherRank(), "9");
  setenv("SLURM_PROCID", "5", 1);
  EXPECT_EQ(LauncherRank(), "5");
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  EXPECT_EQ(LauncherRank(), "3");
}

TEST_F(ReportPathTest, NonNumericValuesAreSkipped) {
  setenv("OMPI_COMM_WORLD_RANK", "../../etc", 1);
  setenv("PMIX_RANK", "", 1);
  setenv("PMI_RANK", "-1", 1);
  setenv("MV2_COMM_WORLD_RANK", "12345678901234", 1);  // too long
  setenv("RANK", "4", 1);
  EXPECT_EQ(LauncherRank(), "4");
  EXPECT_EQ(ExpandPath("r%r", 1), "r4");
}

TEST_F(ReportPathTest, HostNameAndMixedPatterns) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  std::string expected_host(host);
  for (char& c : expected_host) {
    if (c == '/') c = '_';
  }
  EXPECT_EQ(HostNameForPath(), expected_host);
  setenv("SLURM_PROCID", "2", 1);
  EXPECT_EQ(ExpandPath("out/%h/gmt.%r.%p.json", 99),
            "out/" + expected_host + "/gmt.2.99.json");
  EXPECT_EQ(ExpandPath("%%r%%h", 1), "%r%h");
  EXPECT_EQ(ExpandPath("%r%", 1), "2%");
  EXPECT_EQ(ExpandPath("%q", 1), "%q");
}

}  // namespace
}  // namespace gmt
