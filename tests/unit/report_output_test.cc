// Writing a report file (lib/report/report_output.h): whole or not at all,
// and never through a symbolic link another user planted.
#include "lib/report/report_output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gmt {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ReportOutputTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gmt_report_output_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    victim_ = dir_ + "/victim";
    std::ofstream(victim_) << "precious";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::string victim_;
};

TEST_F(ReportOutputTest, WritesTheWholeFileAndLeavesNothingElse) {
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/r.json", "{\"a\": 1}\n", &error))
      << error;
  EXPECT_EQ(Read(dir_ + "/r.json"), "{\"a\": 1}\n");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);  // the report and the victim, no temporary file
}

// The old temporary name was "<path>.tmp", opened with O_TRUNC: a link
// planted there made the traced program truncate and overwrite its target.
TEST_F(ReportOutputTest, LinkAtThePredictableTemporaryNameIsNotFollowed) {
  const std::string path = dir_ + "/r.json";
  ASSERT_EQ(symlink(victim_.c_str(), (path + ".tmp").c_str()), 0);
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(path, "report", &error)) << error;
  EXPECT_EQ(Read(victim_), "precious");
  EXPECT_EQ(Read(path), "report");
}

TEST_F(ReportOutputTest, LinkAtTheReportPathIsRefused) {
  const std::string path = dir_ + "/r.json";
  ASSERT_EQ(symlink(victim_.c_str(), path.c_str()), 0);
  std::string error;
  EXPECT_FALSE(WriteFileAtomically(path, "report", &error));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_EQ(Read(victim_), "precious");
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // left as it was
}

TEST_F(ReportOutputTest, FileModeFollowsTheUmask) {
  const mode_t old = umask(027);
  std::string error;
  const bool ok = WriteFileAtomically(dir_ + "/r.txt", "x", &error);
  umask(old);
  ASSERT_TRUE(ok) << error;
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/r.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(ReportOutputTest, UnwritableFolderIsAClearError) {
  std::string error;
  EXPECT_FALSE(
      WriteFileAtomically(dir_ + "/no/such/folder/r.json", "x", &error));
  EXPECT_NE(error.find(dir_ + "/no/such/folder/r.json"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace gmt
