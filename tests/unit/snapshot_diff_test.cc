// Snapshot diffs (lib/report/snapshot_diff.h): matching blocks across
// snapshots, grouping by call site, totals, text, and the JSON of
// gmt_diff_json().
#include "lib/report/snapshot_diff.h"

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace gmt {
namespace {

using nlohmann::json;

// A call site: frames innermost first, each "function:line" in "app.cc".
std::vector<Frame> Stack(std::initializer_list<std::pair<const char*, int>> at,
                         uintptr_t base = 0x400000) {
  std::vector<Frame> out;
  for (const auto& [function, line] : at) {
    Frame f;
    f.address = base + 0x10 * out.size() + line;
    f.function = function;
    f.file = "app.cc";
    f.line = line;
    f.module = "app";
    out.push_back(f);
  }
  return out;
}

Allocation Block(uintptr_t address, size_t bytes, std::vector<Frame> stack,
                 double time_s, int device = 0, std::string api = "cudaMalloc",
                 uint32_t thread = 1) {
  Allocation a;
  a.address = address;
  a.bytes = bytes;
  a.device = device;
  a.api = std::move(api);
  a.kind = device < 0 ? "pinned-host" : "device";
  a.thread = thread;
  a.time_s = time_s;
  a.stack = std::move(stack);
  return a;
}

Snapshot Snap(std::vector<Allocation> allocations) {
  Snapshot s;
  s.active = true;
  for (const Allocation& a : allocations) s.live_bytes += a.bytes;
  s.allocations = std::move(allocations);
  return s;
}

const std::vector<Frame> kWeights = Stack({{"LoadWeights", 10}, {"main", 50}});
const std::vector<Frame> kScratch = Stack({{"Scratch", 20}, {"main", 51}});

TEST(SnapshotDiffTest, GroupsNewBlocksByCallSite) {
  Allocation kept = Block(0x1000, 64, kWeights, 0.5);
  Snapshot before = Snap({kept});
  Snapshot after = Snap({kept, Block(0x2000, 100, kScratch, 1.0),
                         Block(0x3000, 200, kScratch, 1.1),
                         Block(0x4000, 300, kScratch, 1.2),
                         Block(0x5000, 50, kWeights, 1.3)});
  SnapshotDiff d = DiffSnapshots(before, after);
  EXPECT_TRUE(d.active);
  ASSERT_EQ(d.added.size(), 2u);
  EXPECT_EQ(d.added[0].count, 3u);
  EXPECT_EQ(d.added[0].bytes, 600u);
  EXPECT_EQ(d.added[0].api, "cudaMalloc");
  EXPECT_EQ(d.added[0].kind, "device");
  EXPECT_EQ(d.added[0].device, 0);
  ASSERT_FALSE(d.added[0].stack.empty());
  EXPECT_EQ(d.added[0].stack[0].function, "Scratch");
  EXPECT_EQ(d.added[1].count, 1u);
  EXPECT_EQ(d.added[1].bytes, 50u);
  EXPECT_EQ(d.added[1].stack[0].function, "LoadWeights");
  EXPECT_TRUE(d.freed.empty());
  EXPECT_EQ(d.new_count, 4u);
  EXPECT_EQ(d.new_bytes, 650u);
  EXPECT_EQ(d.freed_count, 0u);
  EXPECT_EQ(d.net_bytes, 650);
}

TEST(SnapshotDiffTest, CallSiteIsEveryFrameAndApiAndDevice) {
  // Same innermost function, different caller line: two sites. Same stack,
  // other API or other device: other sites too. Same function, file and line
  // at another address (another build of the frame): the same site.
  std::vector<Frame> other_caller = Stack({{"Scratch", 20}, {"main", 52}});
  std::vector<Frame> moved = Stack({{"Scratch", 20}, {"main", 51}}, 0x900000);
  Snapshot after =
      Snap({Block(0x1, 8, kScratch, 1.0), Block(0x2, 8, other_caller, 1.0),
            Block(0x3, 8, kScratch, 1.0, 0, "cudaMallocAsync"),
            Block(0x4, 8, kScratch, 1.0, 1), Block(0x5, 8, moved, 1.0)});
  SnapshotDiff d = DiffSnapshots(Snap({}), after);
  ASSERT_EQ(d.added.size(), 4u);
  // Ties in bytes: the one with more blocks first, then the snapshot's order.
  EXPECT_EQ(d.added[0].count, 2u);
  EXPECT_EQ(d.added[0].stack[1].line, 51);
  EXPECT_EQ(d.added[1].stack[1].line, 52);
  EXPECT_EQ(d.added[2].api, "cudaMallocAsync");
  EXPECT_EQ(d.added[3].device, 1);
}

TEST(SnapshotDiffTest, UnsymbolizedFramesCompareByAddress) {
  Frame unknown_a;
  unknown_a.address = 0x7000;
  unknown_a.module = "libfoo.so";
  Frame unknown_b = unknown_a;
  unknown_b.address = 0x7100;
  Snapshot after =
      Snap({Block(0x1, 8, {unknown_a}, 1.0), Block(0x2, 8, {unknown_b}, 1.0),
            Block(0x3, 8, {unknown_a}, 1.0)});
  SnapshotDiff d = DiffSnapshots(Snap({}), after);
  ASSERT_EQ(d.added.size(), 2u);
  EXPECT_EQ(d.added[0].count, 2u);
  EXPECT_EQ(d.added[0].stack[0].address, 0x7000u);
  EXPECT_EQ(d.added[1].count, 1u);
}

TEST(SnapshotDiffTest, ReusedAddressCountsAsNewAndFreed) {
  // Freed and handed out again at the same address: another allocation time.
  Allocation old_block = Block(0x1000, 256, kWeights, 1.0);
  Allocation reused = Block(0x1000, 256, kWeights, 2.0);
  SnapshotDiff d = DiffSnapshots(Snap({old_block}), Snap({reused}));
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.freed_count, 1u);
  EXPECT_EQ(d.new_bytes, 256u);
  EXPECT_EQ(d.freed_bytes, 256u);
  EXPECT_EQ(d.net_bytes, 0);
  ASSERT_EQ(d.added.size(), 1u);
  ASSERT_EQ(d.freed.size(), 1u);

  // Same address and time, another thread: another block too.
  Allocation other_thread = old_block;
  other_thread.thread = 2;
  d = DiffSnapshots(Snap({old_block}), Snap({other_thread}));
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.freed_count, 1u);

  // All equal: the same block, nothing changed.
  d = DiffSnapshots(Snap({old_block}), Snap({old_block}));
  EXPECT_EQ(d.new_count, 0u);
  EXPECT_EQ(d.freed_count, 0u);
  EXPECT_TRUE(d.devices.empty());
}

TEST(SnapshotDiffTest, DuplicateEntriesPairUpOneToOne) {
  Allocation a = Block(0x1000, 10, kWeights, 1.0);
  SnapshotDiff d = DiffSnapshots(Snap({a}), Snap({a, a}));
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.freed_count, 0u);
  d = DiffSnapshots(Snap({a, a}), Snap({a}));
  EXPECT_EQ(d.new_count, 0u);
  EXPECT_EQ(d.freed_count, 1u);
}

TEST(SnapshotDiffTest, FreedBlocksAreGroupedAndCounted) {
  Snapshot before = Snap(
      {Block(0x1000, 100, kScratch, 1.0), Block(0x2000, 100, kScratch, 1.1),
       Block(0x3000, 999, kWeights, 1.2), Block(0x4000, 5, kWeights, 1.3)});
  Snapshot after = Snap({before.allocations[3]});
  SnapshotDiff d = DiffSnapshots(before, after);
  EXPECT_TRUE(d.added.empty());
  ASSERT_EQ(d.freed.size(), 2u);
  EXPECT_EQ(d.freed[0].bytes, 999u);
  EXPECT_EQ(d.freed[0].count, 1u);
  EXPECT_EQ(d.freed[1].bytes, 200u);
  EXPECT_EQ(d.freed[1].count, 2u);
  EXPECT_EQ(d.freed_count, 3u);
  EXPECT_EQ(d.freed_bytes, 1199u);
  EXPECT_EQ(d.net_bytes, -1199);
}

TEST(SnapshotDiffTest, GroupsAreSortedByBytesLargestFirst) {
  std::vector<Frame> s1 = Stack({{"A", 1}});
  std::vector<Frame> s2 = Stack({{"B", 2}});
  std::vector<Frame> s3 = Stack({{"C", 3}});
  Snapshot after = Snap({Block(0x1, 10, s1, 1), Block(0x2, 5000, s2, 1),
                         Block(0x3, 300, s3, 1), Block(0x4, 300, s3, 1),
                         Block(0x5, 10, s1, 1)});
  SnapshotDiff d = DiffSnapshots(Snap({}), after);
  ASSERT_EQ(d.added.size(), 3u);
  EXPECT_EQ(d.added[0].bytes, 5000u);
  EXPECT_EQ(d.added[1].bytes, 600u);
  EXPECT_EQ(d.added[2].bytes, 20u);
  EXPECT_EQ(d.added[2].count, 2u);
}

TEST(SnapshotDiffTest, NetPerDeviceThenHost) {
  Snapshot before = Snap({Block(0x10, 1000, kWeights, 1.0, 1),
                          Block(0x20, 70, kWeights, 1.0, -1, "cudaMallocHost"),
                          Block(0x30, 5, kWeights, 1.0, 0)});
  Snapshot after =
      Snap({before.allocations[2], Block(0x40, 400, kScratch, 2.0, 0),
            Block(0x50, 30, kScratch, 2.0, 1),
            Block(0x60, 9, kScratch, 2.0, -1, "cudaMallocHost")});
  SnapshotDiff d = DiffSnapshots(before, after);
  ASSERT_EQ(d.devices.size(), 3u);
  EXPECT_EQ(d.devices[0].device, 0);
  EXPECT_EQ(d.devices[0].new_bytes, 400u);
  EXPECT_EQ(d.devices[0].freed_bytes, 0u);
  EXPECT_EQ(d.devices[0].net_bytes, 400);
  EXPECT_EQ(d.devices[1].device, 1);
  EXPECT_EQ(d.devices[1].new_bytes, 30u);
  EXPECT_EQ(d.devices[1].freed_bytes, 1000u);
  EXPECT_EQ(d.devices[1].net_bytes, -970);
  EXPECT_EQ(d.devices[2].device, -1);
  EXPECT_EQ(d.devices[2].net_bytes, 9 - 70);
  EXPECT_EQ(d.new_bytes, 439u);
  EXPECT_EQ(d.freed_bytes, 1070u);
  EXPECT_EQ(d.net_bytes, 439 - 1070);
}

TEST(SnapshotDiffTest, InactiveSnapshotMakesAnInactiveDiff) {
  Snapshot off;  // active = false
  SnapshotDiff d = DiffSnapshots(off, Snap({}));
  EXPECT_FALSE(d.active);
  EXPECT_NE(RenderDiffText(d, 7).find("inactive tracer"), std::string::npos);
}

TEST(SnapshotDiffTest, TextReadsLikeTheReport) {
  Snapshot before =
      Snap({Block(0x9000, 4096, kWeights, 0.1, -1, "cudaMallocHost")});
  Snapshot after = Snap(
      {Block(0x2000, 1024, kScratch, 1.0), Block(0x3000, 2048, kScratch, 1.1)});
  std::string text = RenderDiffText(DiffSnapshots(before, after), 42);
  // Every line carries the report's prefix.
  EXPECT_TRUE(std::regex_search(
      text, std::regex("^==42== gpumemtrace snapshot diff: 2 new blocks "
                       R"(\(3\.0 KiB\) from 1 call site, 1 freed block )"
                       R"(\(4\.0 KiB\) from 1 call site; net -1\.0 KiB\n)")))
      << text;
  EXPECT_NE(
      text.find("==42== device 0: new 3.0 KiB, freed 0 B, net +3.0 KiB\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("==42== pinned host: new 0 B, freed 4.0 KiB, net -4.0 KiB\n"),
      std::string::npos)
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(R"(==42== NEW: 3\.0 KiB in 2 blocks from cudaMalloc )"
                 R"(\(device\) on device 0, allocated here:\n)"
                 R"(==42==     #0 0x[0-9a-f]+ in Scratch app\.cc:20 \(app\)\n)"
                 R"(==42==     #1 0x[0-9a-f]+ in main app\.cc:51 \(app\)\n)")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(==42== FREED: 4\.0 KiB in 1 block from )"
                       R"(cudaMallocHost \(pinned-host\) on host, allocated )"
                       R"(here:\n==42==     #0 0x[0-9a-f]+ in LoadWeights)")))
      << text;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "last line unterminated: " << text;
    EXPECT_EQ(text.compare(start, 7, "==42== "), 0)
        << text.substr(start, end - start);
    start = end + 1;
  }

  std::string same = RenderDiffText(DiffSnapshots(after, after), 42);
  EXPECT_NE(same.find("no blocks were allocated or freed"), std::string::npos)
      << same;
}

TEST(SnapshotDiffTest, SnapshotJsonRoundTrip) {
  Snapshot s = Snap({Block(0xdeadbeef000, 123, kWeights, 0.1234567890123),
                     Block(0x1, 1, {}, 3.0, -1, "cudaMallocHost", 7)});
  s.allocations[0].stream = 0xabc;
  s.allocations[0].stack[1].file.clear();  // no debug info for this frame
  s.devices.push_back({0, 123, 500, 9, 8});
  s.devices.push_back({-1, 1, 1, 1, 0});
  s.peak_bytes = 501;
  s.errors = 2;
  std::string text = SnapshotToJson(s).dump();
  Snapshot back;
  std::string error;
  ASSERT_TRUE(SnapshotFromJson(json::parse(text), &back, &error)) << error;
  EXPECT_EQ(back.active, s.active);
  EXPECT_EQ(back.live_bytes, s.live_bytes);
  EXPECT_EQ(back.peak_bytes, 501u);
  EXPECT_EQ(back.errors, 2u);
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_EQ(back.devices[0].peak_bytes, 500u);
  EXPECT_EQ(back.devices[1].device, -1);
  ASSERT_EQ(back.allocations.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Allocation& a = s.allocations[i];
    const Allocation& b = back.allocations[i];
    EXPECT_EQ(b.address, a.address);
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ(b.device, a.device);
    EXPECT_EQ(b.api, a.api);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.stream, a.stream);
    EXPECT_EQ(b.thread, a.thread);
    EXPECT_EQ(b.time_s, a.time_s);  // exactly: it is part of the identity
    ASSERT_EQ(b.stack.size(), a.stack.size());
    for (size_t f = 0; f < a.stack.size(); ++f) {
      EXPECT_EQ(b.stack[f].address, a.stack[f].address);
      EXPECT_EQ(b.stack[f].function, a.stack[f].function);
      EXPECT_EQ(b.stack[f].file, a.stack[f].file);
      EXPECT_EQ(b.stack[f].line, a.stack[f].file.empty() ? 0 : a.stack[f].line);
      EXPECT_EQ(b.stack[f].module, a.stack[f].module);
    }
  }
}

TEST(SnapshotDiffTest, DiffJsonMatchesTheStructDiff) {
  Allocation kept = Block(0x1000, 64, kWeights, 0.1 + 0.2);  // not exact
  Snapshot before = Snap({kept, Block(0x1800, 10, kWeights, 0.7)});
  Snapshot after = Snap({kept, Block(0x2000, 100, kScratch, 1.0),
                         Block(0x3000, 200, kScratch, 1.1),
                         Block(0x4000, 50, kWeights, 1.3, 1)});
  std::string b = SnapshotToJson(before).dump();
  std::string a = SnapshotToJson(after).dump();
  json got = json::parse(DiffJsonText(b.c_str(), a.c_str()));
  EXPECT_FALSE(got.contains("error")) << got.dump(1);
  EXPECT_EQ(got, DiffToJson(DiffSnapshots(before, after))) << got.dump(1);
  EXPECT_EQ(got["active"], true);
  EXPECT_EQ(got["new_count"], 3u);
  EXPECT_EQ(got["new_bytes"], 350u);
  EXPECT_EQ(got["freed_count"], 1u);
  EXPECT_EQ(got["freed_bytes"], 10u);
  EXPECT_EQ(got["net_bytes"], 340);
  ASSERT_EQ(got["new"].size(), 2u);
  EXPECT_EQ(got["new"][0]["count"], 2u);
  EXPECT_EQ(got["new"][0]["bytes"], 300u);
  EXPECT_EQ(got["new"][0]["api"], "cudaMalloc");
  EXPECT_EQ(got["new"][0]["stack"][0]["function"], "Scratch");
  EXPECT_EQ(got["new"][0]["stack"][0]["address"],
            absl::StrFormat("0x%x", kScratch[0].address));
  EXPECT_EQ(got["new"][1]["device"], 1);
  ASSERT_EQ(got["freed"].size(), 1u);
  EXPECT_EQ(got["freed"][0]["bytes"], 10u);
  ASSERT_EQ(got["devices"].size(), 2u);
  EXPECT_EQ(got["devices"][0]["device"], 0);
  EXPECT_EQ(got["devices"][0]["net_bytes"], 290);
  EXPECT_EQ(got["devices"][1]["net_bytes"], 50);
}

// The error of gmt_diff_json(before, after), or "" when it did not fail. The
// answer must always be a JSON object.
std::string DiffError(const char* before, const char* after) {
  std::string text = DiffJsonText(before, after);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "not an object: " + text;
  if (!doc.contains("error")) return "";
  if (!doc["error"].is_string()) return "error not a string: " + text;
  return doc["error"].get<std::string>();
}

TEST(SnapshotDiffTest, MalformedJsonGivesAnErrorObject) {
  const char* good = R"({"active":true,"allocations":[]})";
  EXPECT_EQ(DiffError(good, good), "");

  struct Case {
    const char* before;
    const char* after;
    const char* expect;  // a regex the error must contain
  };
  const Case cases[] = {
      {nullptr, good, "^before_json is NULL$"},
      {good, nullptr, "^after_json is NULL$"},
      {"", good, "^before_json is not valid JSON: .*"},
      {good, "{\"allocations\":[", "^after_json is not valid JSON: "},
      {"\xff\xfe", good, "before_json is not valid JSON"},
      {"[]", good, "before_json is not a gmt_snapshot_json.*expected a JSON"},
      {"42", good, "expected a JSON object"},
      {"{}", good, "before_json.*: allocations: missing$"},
      {good, R"({"allocations":{}})",
       "after_json.*allocations: expected an "
       "array"},
      {good, R"({"allocations":[1]})",
       R"(allocations\[0\]: expected an )"
       "object"},
      {good, R"({"allocations":[{"bytes":1}]})",
       R"(allocations\[0\]\.address: missing)"},
      {good, R"({"allocations":[{"address":"0x10"}]})",
       R"(allocations\[0\]\.bytes: missing)"},
      {good, R"({"allocations":[{"address":"0xzz","bytes":1}]})",
       R"(allocations\[0\]\.address: expected a "0x\.\.\." address)"},
      {good, R"({"allocations":[{"address":"0x","bytes":1}]})",
       R"(address: expected a "0x\.\.\." address)"},
      {good, R"({"allocations":[{"address":"0x1ffffffffffffffff","bytes":1}]})",
       "address: expected"},
      {good, R"({"allocations":[{"address":"0x1","bytes":-5}]})",
       R"(bytes: expected an unsigned integer)"},
      {good, R"({"allocations":[{"address":"0x1","bytes":1.5}]})",
       R"(bytes: expected an unsigned integer)"},
      {good, R"({"allocations":[{"address":"0x1","bytes":"12"}]})",
       R"(bytes: expected an unsigned integer)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"thread":4294967296}]})",
       R"(allocations\[0\]\.thread: out of range)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"device":1e3}]})",
       R"(device: expected an integer)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"device":9999999999}]})",
       R"(device: out of range)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"time_s":"now"}]})",
       R"(time_s: expected a number)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"api":7}]})",
       R"(api: expected a string)"},
      {good, R"({"allocations":[{"address":1,"bytes":1,"stack":[{}, 3]}]})",
       R"(allocations\[0\]\.stack\[1\]: expected an object)"},
      {good,
       R"({"allocations":[{"address":1,"bytes":1,"stack":[{"line":"x"}]}]})",
       R"(stack\[0\]\.line: expected an integer)"},
      {good, R"({"active":1,"allocations":[]})", R"(active: expected true)"},
      {good, R"({"allocations":[],"devices":[{"device":0,"frees":-1}]})",
       R"(devices\[0\]\.frees: expected an unsigned)"},
  };
  for (const Case& c : cases) {
    std::string error = DiffError(c.before, c.after);
    EXPECT_TRUE(std::regex_search(error, std::regex(c.expect)))
        << "before=" << (c.before ? c.before : "NULL")
        << " after=" << (c.after ? c.after : "NULL") << "\n  error: " << error;
  }
}

TEST(SnapshotDiffTest, HostileJsonDoesNotCrash) {
  const char* good = R"({"active":true,"allocations":[]})";
  std::string deep(200000, '[');
  deep += std::string(200000, ']');
  EXPECT_NE(DiffError(deep.c_str(), good), "");
  std::string unclosed(200000, '{');
  EXPECT_NE(DiffError(good, unclosed.c_str()), "");
  // Not UTF-8 inside a string: still a parse error, and the answer is valid
  // JSON even though the message quotes the bad bytes.
  EXPECT_NE(DiffError("{\"a\":\"\xc3\x28\"}", good), "");
}

}  // namespace
}  // namespace gmt
