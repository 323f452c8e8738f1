// PyTorch tensor mode (torch=1): the library sets PyTorch's allocator backend
// at load, before the program's first line, and leaves a configuration that
// names another backend as it is, saying why. The program here is Python
// itself, printing what PyTorch would read.
#include <unistd.h>

#include <string>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

constexpr char kPrintConf[] =
    "import os\n"
    "print('cuda=' + os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '<unset>'))\n"
    "print('generic=' + os.environ.get('PYTORCH_ALLOC_CONF', '<unset>'))\n";

class TorchModeTest : public InterposeTest {
 protected:
  void SetUp() override {
    if (std::string(GMT_PYTHON3).empty() || access(GMT_PYTHON3, X_OK) != 0) {
      GTEST_SKIP() << "no python3";
    }
  }
  RunResult RunWith(const std::string& gmt_options, const std::string& cuda,
                    const std::string& generic) {
    RunOptions options;
    options.gmt_options = gmt_options;
    options.env = {{"PYTORCH_CUDA_ALLOC_CONF", cuda},
                   {"PYTORCH_ALLOC_CONF", generic}};
    return Run(GMT_PYTHON3, {"-c", kPrintConf}, options);
  }
};

TEST_F(TorchModeTest, TorchModeAsksPyTorchForTheAsyncBackendAtLoad) {
  RunResult r = RunWith("torch=1:report=none", "", "");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cuda=backend:cudaMallocAsync\n"), std::string::npos)
      << r.Describe();
  EXPECT_NE(r.out.find("generic=\n"), std::string::npos) << r.Describe();
}

TEST_F(TorchModeTest, TheProgramsOwnSettingsAreKept) {
  RunResult r = RunWith("torch=1:report=none", "max_split_size_mb:64", "");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cuda=max_split_size_mb:64,backend:cudaMallocAsync\n"),
            std::string::npos)
      << r.Describe();
}

TEST_F(TorchModeTest, WithoutTorchModeNothingChanges) {
  RunResult r = RunWith("report=none", "", "");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cuda=\n"), std::string::npos) << r.Describe();
}

TEST_F(TorchModeTest, AnotherBackendIsLeftAloneWithAMessage) {
  RunResult r = RunWith("torch=1:report=none", "backend:native", "");
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("cuda=backend:native\n"), std::string::npos)
      << r.Describe();
  EXPECT_NE(r.err.find("torch mode: PYTORCH_CUDA_ALLOC_CONF asks for "
                       "backend:native"),
            std::string::npos)
      << r.Describe();
}

}  // namespace
}  // namespace gmt_test
