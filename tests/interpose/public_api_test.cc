// The public API (include/gmt/gmt.h): weak declarations that work under
// LD_PRELOAD without linking, do nothing without the tool, and the C API of
// a program linked against the library.
#include <regex>

#include "tests/interpose/interpose_test_util.h"

namespace gmt_test {
namespace {

using PublicApiTest = InterposeTest;

// The text a program printed between "--- <name> ---" and the next
// "--- end ---" line; empty when absent.
std::string Section(const std::string& out, const std::string& name) {
  std::string open = "--- " + name + " ---\n";
  size_t begin = out.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  size_t end = out.find("--- end ---", begin);
  if (end == std::string::npos) return "";
  return out.substr(begin, end - begin);
}

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

// Snapshot, 3 blocks from one function and 1 from another, the pinned block
// freed, snapshot again: gmt::diff() has 2 new call sites and 1 freed.
TEST_F(PublicApiTest, WeakApiDiffGroupsNewBlocksByCallSite) {
  RunResult r = Run(GMT_PUBLIC_API_WEAK_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("diff active=1 new=4/11000 freed=1/4321 net=6679\n"),
            std::string::npos)
      << r.out;
  std::vector<std::string> groups;
  std::regex line(R"(diff (new|freed) count=\d+ bytes=\d+ [^\n]*)");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end;
       it != end; ++it) {
    groups.push_back(it->str());
  }
  ASSERT_EQ(groups.size(), 3u) << r.out;
  // Largest first: 1000 + 2000 + 3000 from DiffAllocateThree, then 5000.
  EXPECT_TRUE(std::regex_match(
      groups[0], std::regex("diff new count=3 bytes=6000 api=cudaMalloc "
                            "device=0 top=DiffAllocateThree.*")))
      << r.out;
  EXPECT_TRUE(std::regex_match(
      groups[1], std::regex("diff new count=1 bytes=5000 api=cudaMalloc "
                            "device=0 top=DiffAllocateOne.*")))
      << r.out;
  EXPECT_TRUE(std::regex_match(groups[2],
                               std::regex("diff freed count=1 bytes=4321 "
                                          "api=cudaMallocHost device=-1 .*")))
      << r.out;
  EXPECT_NE(r.out.find("diff device=0 net=11000\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("diff device=-1 net=-4321\n"), std::string::npos)
      << r.out;

  std::string text = Section(r.out, "diff text");
  std::string prefix = "==" + std::to_string(r.pid) + "== ";
  EXPECT_NE(text.find(prefix + "gpumemtrace snapshot diff: 4 new blocks "
                               "(10.7 KiB) from 2 call sites, 1 freed block "
                               "(4.2 KiB) from 1 call site; net +6.5 KiB"),
            std::string::npos)
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(prefix +
                 R"(NEW: 5\.9 KiB in 3 blocks from cudaMalloc \(device\) )"
                 R"(on device 0, allocated here:\n(.*\n)*?.* in )"
                 R"(DiffAllocateThree.*public_api_weak_program\.cc:\d+)")))
      << text;
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

// gmt_diff_json() on two gmt_snapshot_json() documents: 2 blocks of 700 from
// one loop are new, the 2468 block is freed; bad input gives {"error":..}.
TEST_F(PublicApiTest, LinkedProgramDiffsSnapshotJson) {
  RunOptions options;
  options.preload = false;
  RunResult r = Run(GMT_PUBLIC_API_LINKED_PROGRAM, {}, options);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  json diff;
  ASSERT_NO_THROW(diff = json::parse(Section(r.out, "diff"))) << r.out;
  EXPECT_FALSE(diff.contains("error")) << diff.dump(1);
  EXPECT_EQ(diff.value("active", false), true) << diff.dump(1);
  EXPECT_EQ(diff.value("new_count", uint64_t{0}), 2u) << diff.dump(1);
  EXPECT_EQ(diff.value("new_bytes", uint64_t{0}), 1400u) << diff.dump(1);
  EXPECT_EQ(diff.value("freed_count", uint64_t{0}), 1u) << diff.dump(1);
  EXPECT_EQ(diff.value("freed_bytes", uint64_t{0}), 2468u) << diff.dump(1);
  EXPECT_EQ(diff.value("net_bytes", int64_t{0}), 1400 - 2468) << diff.dump(1);
  ASSERT_TRUE(diff["new"].is_array() && diff["new"].size() == 1)
      << diff.dump(1);
  const json& group = diff["new"][0];
  EXPECT_EQ(group.value("count", uint64_t{0}), 2u) << group.dump(1);
  EXPECT_EQ(group.value("bytes", uint64_t{0}), 1400u) << group.dump(1);
  EXPECT_EQ(group.value("api", ""), "cudaMalloc") << group.dump(1);
  EXPECT_TRUE(StackHas(group["stack"], "DiffAllocateTwo"))
      << StackFunctions(group["stack"]);
  ASSERT_TRUE(diff["freed"].is_array() && diff["freed"].size() == 1)
      << diff.dump(1);
  EXPECT_EQ(diff["freed"][0].value("bytes", uint64_t{0}), 2468u);
  EXPECT_TRUE(StackHas(diff["freed"][0]["stack"], "main"))
      << StackFunctions(diff["freed"][0]["stack"]);

  json bad;
  ASSERT_NO_THROW(bad = json::parse(Section(r.out, "bad"))) << r.out;
  EXPECT_TRUE(std::regex_search(bad.value("error", ""),
                                std::regex("^before_json is not valid JSON")))
      << bad.dump();
  json null_arg;
  ASSERT_NO_THROW(null_arg = json::parse(Section(r.out, "null"))) << r.out;
  EXPECT_EQ(null_arg.value("error", ""), "after_json is NULL")
      << null_arg.dump();
}

}  // namespace
}  // namespace gmt_test
