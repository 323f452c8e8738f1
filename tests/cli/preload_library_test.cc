// cli/preload_library.h: where the launcher looks for libgpumemtrace.so and
// how it reads a library's exports without loading it.
#include "cli/preload_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmt::cli {
namespace {

using ::testing::HasSubstr;

class TempTree {
 public:
  TempTree() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gmt_cli_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempTree() { std::filesystem::remove_all(path_); }
  std::string Touch(const std::string& relative) {
    std::filesystem::path p = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << "x";
    return std::filesystem::canonical(p).string();
  }
  std::string Dir(const std::string& relative) {
    std::filesystem::path p = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(p);
    return p.string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LibraryCandidatesTest, EnvironmentFirstThenBesideTheLauncher) {
  EXPECT_THAT(LibraryCandidates("/opt/gmt/bin", "/x/lib.so"),
              ::testing::ElementsAre("/x/lib.so"));
  auto c = LibraryCandidates("/opt/gmt/bin", "");
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c.front(), "/opt/gmt/bin/../lib/libgpumemtrace.so");
  EXPECT_THAT(
      c, ::testing::Contains("/opt/gmt/bin/../interpose/libgpumemtrace.so"));
  EXPECT_EQ(c.back(), "/opt/gmt/bin/libgpumemtrace.so");
}

TEST(FindLibraryTest, BundleLayoutWinsOverBuildTree) {
  TempTree t;
  const std::string bundle = t.Touch("lib/libgpumemtrace.so");
  t.Touch("interpose/libgpumemtrace.so");
  std::string error;
  EXPECT_EQ(FindLibrary(t.Dir("bin"), "", &error), bundle) << error;
}

TEST(FindLibraryTest, BuildTreeLayoutAndAbsolutePath) {
  TempTree t;
  const std::string lib = t.Touch("interpose/libgpumemtrace.so");
  t.Dir("bin");
  std::string error;
  // A relative launcher directory still gives an absolute library path.
  const std::string cwd = std::filesystem::current_path().string();
  ASSERT_EQ(chdir(t.path().c_str()), 0);
  EXPECT_EQ(FindLibrary("bin", "", &error), lib) << error;
  ASSERT_EQ(chdir(cwd.c_str()), 0);
}

TEST(FindLibraryTest, ErrorsListWhatWasTried) {
  TempTree t;
  std::string error;
  EXPECT_EQ(FindLibrary(t.Dir("bin"), "", &error), "");
  EXPECT_THAT(error, HasSubstr("cannot find libgpumemtrace.so"));
  EXPECT_THAT(error, HasSubstr("/bin/../lib/libgpumemtrace.so"));
  EXPECT_THAT(error, HasSubstr("GMT_LIBRARY"));
  EXPECT_EQ(FindLibrary(t.path(), "/no/such/lib.so", &error), "");
  EXPECT_THAT(error, HasSubstr("GMT_LIBRARY is '/no/such/lib.so'"));
  // A directory is not a library.
  EXPECT_EQ(FindLibrary(t.path(), t.Dir("d"), &error), "");
}

TEST(ElfExportsTest, ReadsTheDynamicSymbolTable) {
  // The CUDA test double's driver library exports cuInit and cuMemAlloc_v2.
  EXPECT_TRUE(ElfExports(GMT_FAKE_CUDA_DRIVER, "cuInit"));
  EXPECT_TRUE(ElfExports(GMT_FAKE_CUDA_DRIVER, "cuMemAlloc_v2"));
  EXPECT_FALSE(ElfExports(GMT_FAKE_CUDA_DRIVER, "InitializeInjection"));
  EXPECT_FALSE(ElfExports(GMT_FAKE_CUDA_DRIVER, "cuIni"));
  EXPECT_FALSE(ElfExports(GMT_FAKE_CUDA_DRIVER, ""));
}

TEST(ElfExportsTest, AnythingElseIsFalse) {
  TempTree t;
  EXPECT_FALSE(ElfExports(t.Touch("text.so"), "x"));
  EXPECT_FALSE(ElfExports(t.path() + "/missing.so", "x"));
  EXPECT_FALSE(ElfExports(t.Dir("dir.so"), "x"));
  // A truncated copy of a real library: the header points past the end.
  std::ifstream in(GMT_FAKE_CUDA_DRIVER, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 200u);
  const std::string cut = t.path() + "/cut.so";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, 200);
  EXPECT_FALSE(ElfExports(cut, "cuInit"));
}

}  // namespace
}  // namespace gmt::cli
