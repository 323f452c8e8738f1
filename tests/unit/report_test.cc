// The report writers, on made-up ReportData: the text report (matched by
// regex), the JSON report (parsed, DESIGN §5 keys), HumanBytes, and the atomic
// file writer.
#include "lib/report/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/report/report_output.h"
#include "nlohmann/json.hpp"

namespace gmt {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kPid = 4242;
constexpr StackId kLeakStack = 101;
constexpr StackId kFreeStack = 102;
constexpr StackId kFirstFreeStack = 103;
constexpr StackId kAllocStack = 104;
constexpr uint64_t kMiB = 1024 * 1024;

std::vector<SymbolizedFrame> Stack(const std::string& function, int line) {
  return {
      SymbolizedFrame{0x401000, function, "/src/app.cu", line, "app"},
      SymbolizedFrame{0x402000, "main", "/src/app.cu", 99, "app"},
  };
}

AllocationRecord Block(uint64_t address, uint64_t bytes, Api api, int device,
                       StackId stack) {
  AllocationRecord a;
  a.address = address;
  a.bytes = bytes;
  a.api = api;
  a.kind = ApiMemoryKind(api);
  a.device = device;
  a.stack = stack;
  a.thread = 1;
  return a;
}

// One device, one leak site (2 blocks, 8 MiB), one pinned-host leak released
// by a device reset, and one double free.
ReportData MakeData() {
  ReportData d;
  d.version = "9.8.7";
  d.pid = kPid;
  d.argv = {"./app", "--flag"};
  d.reason = "exit";
  d.devices.push_back(ReportData::Device{0, "NVIDIA H200", 150 * 1024 * kMiB,
                                         12 * kMiB, 8 * kMiB, 5, 3});
  d.host = ReportData::Device{-1, "pinned host memory", 0, kMiB, 0, 1, 0};
  d.summary.allocations = 6;
  d.summary.frees = 3;
  d.summary.live_bytes_at_exit = 8 * kMiB;
  d.summary.errors = 1;
  d.summary.leaks = 3;
  d.summary.leaked_bytes = 9 * kMiB;

  ReportData::Leak leak;
  leak.api = Api::kCudaMalloc;
  leak.kind = MemoryKind::kDevice;
  leak.device = 0;
  leak.stack = kLeakStack;
  leak.bytes = 8 * kMiB;
  leak.count = 2;
  leak.address = 0x7f0000200000;
  d.leaks.push_back(leak);

  ReportData::Leak pinned;
  pinned.api = Api::kCudaMallocHost;
  pinned.kind = MemoryKind::kPinnedHost;
  pinned.device = -1;
  pinned.stack = kNoStack;
  pinned.bytes = kMiB;
  pinned.count = 1;
  pinned.address = 0x7e0000000000;
  pinned.released_by = "cudaDeviceReset";
  d.leaks.push_back(pinned);

  ErrorRecord e;
  e.kind = ErrorKind::kDoubleFree;
  e.api = Api::kCudaFree;
  e.address = 0x7f0000400000;
  e.bytes = 4096;
  e.stack = kFreeStack;
  e.thread = 1;
  e.cuda_result = 1;
  e.cuda_result_name = "cudaErrorInvalidValue";
  e.detail = "cudaFree of 0x7f0000400000, already freed";
  e.allocation = Block(0x7f0000400000, 4096, Api::kCudaMalloc, 0, kAllocStack);
  FreedRecord prev;
  prev.allocation = *e.allocation;
  prev.free_api = Api::kCudaFree;
  prev.free_stack = kFirstFreeStack;
  prev.free_thread = 1;
  e.previous_free = prev;
  d.errors.push_back(e);

  d.stacks[kLeakStack] = Stack("make_buffers(int)", 12);
  d.stacks[kFreeStack] = Stack("release_twice()", 30);
  d.stacks[kFirstFreeStack] = Stack("release_once()", 20);
  d.stacks[kAllocStack] = Stack("alloc_one()", 10);
  return d;
}

ErrorRecord MakeError(ErrorKind kind, int64_t offset) {
  ErrorRecord e;
  e.kind = kind;
  e.api = Api::kCudaFree;
  e.address = 0x7f0000600000 + offset;
  e.offset = offset;
  e.bytes = 4;
  e.stack = kFreeStack;
  e.detail = "made up";
  e.allocation = Block(0x7f0000600000, 4000, Api::kCudaMalloc, 0, kAllocStack);
  return e;
}

bool Matches(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

TEST(RenderTextTest, EveryLineHasThePidPrefix) {
  std::string text = RenderText(MakeData(), 0);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(line.rfind("==4242== ", 0), 0u) << "line: '" << line << "'";
  }
  EXPECT_GT(lines, 10);
}

TEST(RenderTextTest, HeaderDevicesLeaksErrorsSummary) {
  std::string text = RenderText(MakeData(), 0);
  EXPECT_TRUE(Matches(
      text,
      R"(^==4242== gpumemtrace 9\.8\.7 report \(exit\) for \./app --flag$)"))
      << text;
  EXPECT_TRUE(Matches(
      text, R"(^==4242== device 0 NVIDIA H200 \(150\.0 GiB\): 5 )"
            R"(allocations, 3 frees, peak 12\.0 MiB, in use 8\.0 MiB$)"))
      << text;
  EXPECT_TRUE(Matches(
      text,
      R"(^==4242== LEAK: 8\.0 MiB in 2 blocks from cudaMalloc \(device\) )"
      R"(on device 0, allocated here:$)"))
      << text;
  EXPECT_TRUE(Matches(text, R"(^==4242== LEAK: 1\.0 MiB in 1 block from )"
                            R"(cudaMallocHost \(pinned-host\) on host, never )"
                            R"(freed \(released by cudaDeviceReset\))"))
      << text;
  EXPECT_TRUE(Matches(text, R"(^==4242== ERROR: double-free: )")) << text;
  EXPECT_TRUE(Matches(text, R"(^==4242== SUMMARY: 1 error \(1 double-free\), )"
                            R"(3 leaked blocks \(9\.0 MiB\)$)"))
      << text;
  // Stacks: frame number, address, function, file:line, module.
  EXPECT_TRUE(Matches(text,
                      R"(^==4242==     #0 0x401000 in make_buffers\(int\) )"
                      R"(/src/app\.cu:12 \(app\)$)"))
      << text;
  EXPECT_TRUE(Matches(text, R"(#0 0x401000 in release_once\(\))")) << text;
  EXPECT_TRUE(Matches(text, R"(#0 0x401000 in alloc_one\(\))")) << text;
  EXPECT_TRUE(Matches(text, R"(CUDA returned 1 \(cudaErrorInvalidValue\))"));
  // A leak without a stack says so.
  EXPECT_TRUE(
      Matches(text, R"(\(no stack: stack_depth=0 or capture failed\))"));
}

TEST(RenderTextTest, SummaryPluralsAndCleanRun) {
  ReportData d;
  d.pid = 1;
  d.version = "1";
  d.reason = "exit";
  std::string text = RenderText(d, 0);
  EXPECT_TRUE(Matches(text, R"(^==1== no CUDA allocations were seen$)"))
      << text;
  EXPECT_TRUE(Matches(text, R"(^==1== SUMMARY: 0 errors, 0 leaked blocks )"
                            R"(\(0 B\)$)"))
      << text;
  d.leak_check = false;
  EXPECT_TRUE(
      Matches(RenderText(d, 0), R"(SUMMARY: 0 errors, leak check off$)"));
}

// A framework's cache holding its segments at exit is not a lost block: the
// summary says which the leaked blocks are, once the scan has run.
ReportData LeaksInStates(std::vector<std::pair<std::string, uint64_t>> states) {
  ReportData d;
  d.pid = 1;
  d.version = "1";
  d.reason = "exit";
  for (const auto& [state, mib] : states) {
    ReportData::Leak leak;
    leak.api = Api::kCudaMalloc;
    leak.kind = MemoryKind::kDevice;
    leak.bytes = mib * kMiB;
    leak.count = 1;
    leak.state = state;
    d.leaks.push_back(leak);
    d.summary.leaks += 1;
    d.summary.leaked_bytes += mib * kMiB;
  }
  return d;
}

TEST(RenderTextTest, SummarySaysWhenEveryLeakedBlockIsStillReachable) {
  std::string text = RenderText(LeaksInStates({{"reachable", 2}}), 0);
  EXPECT_TRUE(Matches(text,
                      R"(SUMMARY: 0 errors, 1 leaked block \(2\.0 MiB\), )"
                      R"(still reachable at exit \(not lost\)$)"))
      << text;
  text = RenderText(LeaksInStates({{"reachable", 2}, {"reachable", 1}}), 0);
  EXPECT_TRUE(Matches(text, R"(2 leaked blocks \(3\.0 MiB\), all still )"
                            R"(reachable at exit \(none lost\)$)"))
      << text;
}

TEST(RenderTextTest, SummarySplitsLostFromReachable) {
  std::string text = RenderText(
      LeaksInStates({{"lost", 1}, {"reachable", 4}, {"unknown", 2}}), 0);
  EXPECT_TRUE(Matches(text,
                      R"(SUMMARY: 0 errors, 3 leaked blocks \(7\.0 MiB\): )"
                      R"(1 definitely lost \(1\.0 MiB\), 1 still )"
                      R"(reachable \(4\.0 MiB\), 1 unknown \(2\.0 MiB\)$)"))
      << text;
  // Without the scan (no states) the line is as before.
  text = RenderText(LeaksInStates({{"", 1}}), 0);
  EXPECT_TRUE(
      Matches(text, R"(SUMMARY: 0 errors, 1 leaked block \(1\.0 MiB\)$)"))
      << text;
}

TEST(RenderTextTest, EveryErrorKindPrints) {
  ReportData d = MakeData();
  d.errors.clear();
  d.errors.push_back(MakeError(ErrorKind::kOobWrite, 4000));
  d.errors.push_back(MakeError(ErrorKind::kOobUnderflow, -8));
  d.errors.push_back(MakeError(ErrorKind::kUafWrite, 16));
  d.errors.push_back(MakeError(ErrorKind::kInvalidFree, 100));
  d.errors.push_back(MakeError(ErrorKind::kApiBounds, 4000));
  d.errors.push_back(MakeError(ErrorKind::kOom, 0));
  d.errors.push_back(MakeError(ErrorKind::kApiMismatch, 0));
  d.summary.errors = d.errors.size();
  std::string text = RenderText(d, 0);
  for (const char* kind :
       {"oob-write", "oob-underflow", "uaf-write", "invalid-free", "api-bounds",
        "oom", "api-mismatch"}) {
    EXPECT_TRUE(Matches(text, absl::StrCat("^==4242== ERROR: ", kind, ": ")))
        << kind;
  }
  EXPECT_TRUE(Matches(text, R"(SUMMARY: 7 errors \()")) << text;
  EXPECT_TRUE(Matches(text,
                      R"(the block: 0x7f0000600000, 4000 bytes, cudaMalloc )"
                      R"(on device 0)"))
      << text;
}

TEST(RenderTextTest, MaxLeaksCutsTheList) {
  ReportData d = MakeData();
  std::string text = RenderText(d, 1);
  EXPECT_TRUE(Matches(text, R"(LEAK: 8\.0 MiB in 2 blocks)"));
  EXPECT_FALSE(Matches(text, R"(LEAK: 1\.0 MiB)")) << text;
  EXPECT_TRUE(Matches(text, R"(\.\.\. 1 more call sites \(max_leaks=1\))"))
      << text;
}

// Errors already printed in full when found are listed one line each.
TEST(RenderTextTest, ErrorsAlreadyPrintedAreOneLineEach) {
  std::string text = RenderText(MakeData(), 0, /*errors_printed=*/true);
  EXPECT_TRUE(Matches(text,
                      R"(^==4242== ERROR: double-free: cudaFree of )"
                      R"(0x7f0000400000, already freed \(details above\)$)"))
      << text;
  EXPECT_FALSE(Matches(text, R"(first freed by)")) << text;
  EXPECT_FALSE(Matches(text, R"(release_twice)")) << text;
  // Leaks and the summary are still there in full.
  EXPECT_TRUE(Matches(text, R"(#0 0x401000 in make_buffers\(int\))"));
  EXPECT_TRUE(Matches(text, R"(SUMMARY: 1 error \(1 double-free\))"));
}

TEST(RenderErrorTextTest, OneErrorWithPrefix) {
  ReportData d = MakeData();
  std::string text = RenderErrorText(d.errors[0], d.stacks, 77);
  EXPECT_TRUE(
      Matches(text, R"(^==77== ERROR: double-free: memory freed twice$)"))
      << text;
  EXPECT_TRUE(Matches(text, R"(^==77==   first freed by cudaFree)")) << text;
  EXPECT_THAT(text, Not(HasSubstr("SUMMARY")));
}

json ParsedJson(const ReportData& d) {
  std::string out = RenderJson(d);
  json j = json::parse(out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << out;
  return j;
}

void ExpectStackFrames(const json& stack, const std::string& first_function) {
  ASSERT_TRUE(stack.is_array());
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(stack[0]["function"], first_function);
  EXPECT_EQ(stack[0]["file"], "/src/app.cu");
  EXPECT_TRUE(stack[0]["line"].is_number_integer());
  EXPECT_GT(stack[0]["line"].get<int>(), 0);
  EXPECT_EQ(stack[0]["module"], "app");
  EXPECT_EQ(stack[1]["function"], "main");
}

TEST(RenderJsonTest, TopLevelAndDevices) {
  json j = ParsedJson(MakeData());
  EXPECT_EQ(j["tool"], "gpumemtrace");
  EXPECT_EQ(j["version"], "9.8.7");
  EXPECT_EQ(j["pid"], kPid);
  EXPECT_EQ(j["argv"], json({"./app", "--flag"}));
  ASSERT_TRUE(j["devices"].is_array());
  ASSERT_EQ(j["devices"].size(), 1u);
  const json& dev = j["devices"][0];
  EXPECT_EQ(dev["index"], 0);
  EXPECT_EQ(dev["name"], "NVIDIA H200");
  EXPECT_EQ(dev["total_bytes"], 150 * 1024 * kMiB);
  EXPECT_EQ(dev["peak_bytes"], 12 * kMiB);
  EXPECT_TRUE(dev["health"].is_object());
}

TEST(RenderJsonTest, Summary) {
  json j = ParsedJson(MakeData());
  const json& s = j["summary"];
  EXPECT_EQ(s["allocations"], 6);
  EXPECT_EQ(s["frees"], 3);
  EXPECT_EQ(s["live_bytes_at_exit"], 8 * kMiB);
  EXPECT_EQ(s["errors"], 1);
  EXPECT_EQ(s["leaks"], 3);
}

TEST(RenderJsonTest, Leaks) {
  json j = ParsedJson(MakeData());
  ASSERT_TRUE(j["leaks"].is_array());
  ASSERT_EQ(j["leaks"].size(), 2u);
  const json& leak = j["leaks"][0];
  EXPECT_EQ(leak["api"], "cudaMalloc");
  EXPECT_EQ(leak["bytes"], 8 * kMiB);
  EXPECT_EQ(leak["count"], 2);
  EXPECT_EQ(leak["address"], "0x7f0000200000");
  EXPECT_EQ(leak["device"], 0);
  ExpectStackFrames(leak["stack"], "make_buffers(int)");
  EXPECT_FALSE(leak.contains("released_by"));
  const json& pinned = j["leaks"][1];
  EXPECT_EQ(pinned["device"], -1);
  EXPECT_EQ(pinned["released_by"], "cudaDeviceReset");
  EXPECT_TRUE(pinned["stack"].is_array());
  EXPECT_TRUE(pinned["stack"].empty());
}

TEST(RenderJsonTest, DoubleFreeError) {
  json j = ParsedJson(MakeData());
  ASSERT_EQ(j["errors"].size(), 1u);
  const json& e = j["errors"][0];
  EXPECT_EQ(e["kind"], "double-free");
  EXPECT_EQ(e["address"], "0x7f0000400000");
  EXPECT_EQ(e["offset"], 0);
  EXPECT_EQ(e["bytes"], 4096);
  ExpectStackFrames(e["stack"], "release_twice()");
  const json& a = e["allocation"];
  EXPECT_EQ(a["api"], "cudaMalloc");
  EXPECT_EQ(a["address"], "0x7f0000400000");
  EXPECT_EQ(a["bytes"], 4096);
  EXPECT_EQ(a["device"], 0);
  ExpectStackFrames(a["stack"], "alloc_one()");
  EXPECT_TRUE(e["kernels"].is_array());
  // The first free, with its own stack.
  ASSERT_TRUE(e.contains("first_free")) << e.dump(2);
  ExpectStackFrames(e["first_free"]["stack"], "release_once()");
}

TEST(RenderJsonTest, EveryErrorKindAndNegativeOffset) {
  ReportData d = MakeData();
  d.errors.clear();
  d.errors.push_back(MakeError(ErrorKind::kOobWrite, 4000));
  d.errors.push_back(MakeError(ErrorKind::kOobUnderflow, -8));
  d.errors.push_back(MakeError(ErrorKind::kUafWrite, 16));
  d.errors.push_back(MakeError(ErrorKind::kInvalidFree, 100));
  d.errors.push_back(MakeError(ErrorKind::kApiBounds, 4000));
  d.errors.push_back(MakeError(ErrorKind::kOom, 0));
  d.errors.push_back(MakeError(ErrorKind::kApiMismatch, 0));
  json j = ParsedJson(d);
  ASSERT_EQ(j["errors"].size(), 7u);
  std::vector<std::string> kinds;
  for (const json& e : j["errors"]) kinds.push_back(e["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{
                       "oob-write", "oob-underflow", "uaf-write",
                       "invalid-free", "api-bounds", "oom", "api-mismatch"}));
  EXPECT_EQ(j["errors"][1]["offset"], -8);
  EXPECT_EQ(j["errors"][0]["offset"], 4000);
  EXPECT_EQ(j["errors"][3]["allocation"]["address"], "0x7f0000600000");
  for (const json& e : j["errors"]) {
    EXPECT_TRUE(e["stack"].is_array());
    EXPECT_FALSE(e.contains("first_free"));
  }
}

TEST(RenderJsonTest, InvalidUtf8IsReplacedNotThrown) {
  ReportData d = MakeData();
  d.argv = {"./app", std::string("bad\xff\xfe")};
  d.stacks[kLeakStack][0].function = std::string("f\xc3");
  json j = ParsedJson(d);
  EXPECT_EQ(j["argv"].size(), 2u);
}

TEST(HumanBytesTest, Table) {
  struct Case {
    uint64_t bytes;
    const char* text;
  };
  for (const Case& c : std::vector<Case>{
           {0, "0 B"},
           {1, "1 B"},
           {512, "512 B"},
           {1023, "1023 B"},
           {1024, "1.0 KiB"},
           {1536, "1.5 KiB"},
           {4096, "4.0 KiB"},
           {kMiB, "1.0 MiB"},
           {8 * kMiB, "8.0 MiB"},
           {kMiB + kMiB / 2, "1.5 MiB"},
           {uint64_t{1} << 30, "1.0 GiB"},
           {uint64_t{3} << 29, "1.5 GiB"},
           {uint64_t{1} << 40, "1.0 TiB"},
           {uint64_t{2048} << 40, "2048.0 TiB"},
       }) {
    EXPECT_EQ(HumanBytes(c.bytes), c.text) << c.bytes;
  }
}

// Just under a unit boundary: "%.1f" rounds 1023.96 up to "1024.0", which
// should then be shown in the next unit.
TEST(HumanBytesTest, RoundingUpMovesToTheNextUnit) {
  EXPECT_EQ(HumanBytes(kMiB - 1), "1.0 MiB");
  EXPECT_EQ(HumanBytes((uint64_t{1} << 30) - 1), "1.0 GiB");
  EXPECT_EQ(HumanBytes(1024 * 1024 - 40), "1.0 MiB");  // 1023.96 KiB
}

class WriteFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gmt_report_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(WriteFileTest, GoodPathLeavesNoTmpBehind) {
  const std::string path = dir_ + "/report.json";
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(path, "{\"a\": 1}\n", &error)) << error;
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), "{\"a\": 1}\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "report.json");
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(WriteFileTest, OverwritesAnExistingFile) {
  const std::string path = dir_ + "/r.txt";
  std::string error;
  ASSERT_TRUE(WriteFileAtomically(path, "first, longer contents", &error));
  ASSERT_TRUE(WriteFileAtomically(path, "second", &error)) << error;
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "second");
}

TEST_F(WriteFileTest, UnwritablePathFailsNamingThePath) {
  const std::string path = dir_ + "/no/such/dir/report.json";
  std::string error;
  EXPECT_FALSE(WriteFileAtomically(path, "x", &error));
  EXPECT_THAT(error, HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(WriteFileTest, PathThatIsADirectoryFailsAndCleansUp) {
  const std::string path = dir_ + "/taken";
  std::filesystem::create_directory(path);
  std::filesystem::create_directory(path + "/inside");  // rename cannot replace
  std::string error;
  EXPECT_FALSE(WriteFileAtomically(path, "x", &error));
  EXPECT_THAT(error, HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(WriteFileTest, WriteReportOutputsJsonGoesToTheExpandedPath) {
  Options options;
  options.report = {ReportFormat::kJson};
  options.report_path = dir_ + "/gmt.%p.json";
  ReportData d = MakeData();
  WriteReportOutputs(d, options);
  const std::string path = dir_ + "/gmt.4242.json";
  ASSERT_TRUE(std::filesystem::exists(path));
  std::ifstream in(path);
  json j = json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["pid"], kPid);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace
}  // namespace gmt
