// The public API (include/gmt/gmt.h): weak declarations that work under
// LD_PRELOAD without linking, do nothing without the tool, and the C API of
// a program linked against the library.
#include <regex>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using PublicApiTest = InterposeTest;

TEST_F(PublicApiTest, WeakApiSeesTheToolUnderPreload) {
  RunResult r = Run(GMT_PUBLIC_API_WEAK_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("available 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("active 1"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m,
                                std::regex(R"(live_bytes (\d+) count (\d+))")))
      << r.out;
  EXPECT_EQ(std::stoull(m[1]), 1234u + 4321u) << r.out;
  EXPECT_EQ(std::stoull(m[2]), 2u) << r.out;
  EXPECT_NE(r.out.find("allocation api=cudaMalloc bytes=1234 device=0 frame=1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("allocation api=cudaMallocHost bytes=4321 device=-1"),
            std::string::npos)
      << r.out;
}

TEST_F(PublicApiTest, WeakApiIsHarmlessWithoutTheTool) {
  RunResult r = RunPlain(GMT_PUBLIC_API_WEAK_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("available 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
}

TEST_F(PublicApiTest, LinkedProgramGetsSnapshotJson) {
  RunOptions options;
  options.preload = false;  // linked, not preloaded
  RunResult r = Run(GMT_PUBLIC_API_LINKED_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("gmt_active 1"), std::string::npos) << r.out;
  size_t begin = r.out.find("--- snapshot ---\n");
  size_t end = r.out.find("\n--- end ---");
  ASSERT_TRUE(begin != std::string::npos && end != std::string::npos) << r.out;
  begin += 17;
  json snapshot;
  ASSERT_NO_THROW(snapshot = json::parse(r.out.substr(begin, end - begin)))
      << r.out;
  EXPECT_EQ(snapshot.value("active", false), true) << snapshot.dump(1);
  ASSERT_TRUE(snapshot["allocations"].is_array()) << snapshot.dump(1);
  bool found = false;
  for (const json& a : snapshot["allocations"]) {
    if (a.value("bytes", uint64_t{0}) == 2468u) {
      found = true;
      EXPECT_EQ(a.value("api", ""), "cudaMalloc") << a.dump();
    }
  }
  EXPECT_TRUE(found) << snapshot.dump(1);
  EXPECT_EQ(snapshot.value("live_bytes", uint64_t{0}), 2468u)
      << snapshot.dump(1);
}

}  // namespace
}  // namespace gmt_test
