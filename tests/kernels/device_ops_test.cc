// DriverDeviceOps (lib/platform/driver_device_ops.cc) against the CPU test
// double of libcuda (tests/fake_cuda), which runs the guard kernels on the
// host: the shared scenarios of zone_scenarios.cc, one GoogleTest test each,
// plus what only the double can show.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/platform/driver_device_ops.h"
#include "tests/fake_cuda/fake_driver.h"
#include "tests/kernels/zone_scenarios.h"

namespace gmt_test {

// Names the parameter in test listings (found by argument-dependent lookup).
void PrintTo(const Scenario& scenario, std::ostream* out) {
  *out << scenario.name;
}

namespace {

// One driver and one DriverDeviceOps for the whole process, as in the tool.
struct Process {
  TestDriver driver;
  gmt::DriverDeviceOps ops;
  std::string why;
  bool ok = driver.Open(&why);
};

Process& P() {
  static Process* const process = new Process();
  return *process;
}

class ZoneScenarioTest : public testing::TestWithParam<Scenario> {};

TEST_P(ZoneScenarioTest, Passes) {
  ASSERT_TRUE(P().ok) << P().why;
  std::vector<std::string> failures;
  {
    ScenarioContext sc(P().driver, P().ops);
    GetParam().run(sc);
    failures = sc.failures();
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Fake, ZoneScenarioTest,
                         testing::ValuesIn(ZoneScenarios()),
                         [](const testing::TestParamInfo<Scenario>& info) {
                           return std::string(info.param.name);
                         });

// What the library's constructor does, then Fills: before libcuda is loaded,
// before cuInit (the double fails every call then), and after. True when the
// first two fail softly and the last works: a transient failure does not turn
// guard zones off.
bool FillBeforeAndAfterCuInit() {
  gmt::InstallDriverDeviceOps();
  gmt::DeviceOps* ops = gmt::GetDeviceOps();
  if (ops == nullptr) return false;
  const GmtZone early_zone = {0x1000, 16, 0, 0};
  if (ops->Fill(0, 0, {&early_zone, 1})) return false;
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) return false;
  if (ops->Fill(0, 0, {&early_zone, 1})) return false;
  TestDriver driver;
  std::string why;
  CUdeviceptr p = 0;
  if (!driver.Open(&why) || driver.mem_alloc(&p, 64) != CUDA_SUCCESS) {
    return false;
  }
  const GmtZone zone = {p, 64, 0x5c, 0};
  return ops->Fill(0, 0, {&zone, 1}) &&
         reinterpret_cast<unsigned char*>(p)[63] == 0x5c;
}

// ---- Per-kernel checks through the inline path, as only the double shows
// them: its launches counted, and held back like work the GPU has not reached.

// A context of its own, current on this thread for the test's lifetime.
class InlineCheckTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(P().ok) << P().why;
    ASSERT_EQ(cuCtxCreate(&context_, nullptr, 0, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&block_, 8192), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    zones_ = {{block_, 512, 0xcb, 0}, {block_ + 512 + 4000, 96, 0xcb, 0}};
    ASSERT_TRUE(P().ops.Fill(ctx(), 0, zones_));
  }
  void TearDown() override {
    FakeCudaDeferInlineChecks(0);
    if (context_ != nullptr) {
      P().ops.ForgetContext(ctx());
      cuCtxDestroy(context_);
    }
    CUcontext primary = P().driver.context;
    cuCtxSetCurrent(primary);
  }
  uint64_t ctx() const { return reinterpret_cast<uint64_t>(context_); }
  uint64_t stream() const { return reinterpret_cast<uint64_t>(stream_); }
  // Fills `zones` of the block on the stream, the block zeroed before;
  // checks every byte of it (each zone's pattern, zero between them) and
  // returns how many inline fill kernels that took.
  unsigned long long FillOnProgramStream(const std::vector<GmtZone>& zones) {
    auto* b = reinterpret_cast<unsigned char*>(block_);
    std::memset(b, 0, 8192);
    const unsigned long long launches = FakeCudaInlineFillLaunches();
    EXPECT_TRUE(P().ops.Fill(ctx(), stream(), zones));
    EXPECT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
    for (uint64_t at = 0; at < 8192; ++at) {
      unsigned char want = 0;
      for (const GmtZone& z : zones) {
        if (block_ + at >= z.address && block_ + at < z.address + z.bytes) {
          want = static_cast<unsigned char>(z.pattern);
        }
      }
      if (b[at] != want) {
        ADD_FAILURE() << "byte " << at;
        break;
      }
    }
    return FakeCudaInlineFillLaunches() - launches;
  }
  // The inline check `ticket` of zones_ after Overrun(), made while the
  // double defers inline checks: pending however often it is asked without
  // waiting (the answer is read from memory; asking must not make the GPU
  // progress), then, once run, the one changed byte, then forgotten.
  void ExpectOverrunAnswered(uint64_t ticket) {
    std::vector<GmtZoneResult> results;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(P().ops.PollCheck(ticket, false, &results),
                gmt::DeviceOps::Poll::kPending);
    }
    FakeCudaRunDeferredChecks();
    ASSERT_EQ(P().ops.PollCheck(ticket, false, &results),
              gmt::DeviceOps::Poll::kDone);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].changed_bytes, 0u);
    EXPECT_EQ(results[1].changed_bytes, 1u);
    EXPECT_EQ(~results[1].first_inverted, 1u);
    EXPECT_EQ(results[1].last_plus1, 2u);
    EXPECT_EQ(P().ops.PollCheck(ticket, false, &results),
              gmt::DeviceOps::Poll::kFailed);
  }
  // The program's kernel wrote one byte past the user's 4000.
  void Overrun() {
    reinterpret_cast<unsigned char*>(block_)[512 + 4000 + 1] = 0;
  }

  CUcontext context_ = nullptr;
  CUdeviceptr block_ = 0;
  CUstream stream_ = nullptr;
  std::vector<GmtZone> zones_;
};

TEST_F(InlineCheckTest, OneLaunchAndAnAnswerReadFromHostMemory) {
  Overrun();
  const unsigned long long launches = FakeCudaInlineCheckLaunches();
  FakeCudaDeferInlineChecks(1);
  const uint64_t ticket = P().ops.CheckAfterKernel(ctx(), stream(), zones_,
                                                   /*context_current=*/true);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches + 1);
  ExpectOverrunAnswered(ticket);
}

TEST_F(InlineCheckTest, AWaitLetsTheDeviceFinish) {
  Overrun();
  FakeCudaDeferInlineChecks(1);
  const uint64_t ticket = P().ops.CheckAfterKernel(ctx(), stream(), zones_,
                                                   /*context_current=*/true);
  ASSERT_NE(ticket, 0u);
  std::vector<GmtZoneResult> results;
  ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
            gmt::DeviceOps::Poll::kDone);
  EXPECT_EQ(results[1].changed_bytes, 1u);
}

// A kernel's reach (a few KiB) takes the compact kernel; a check of more
// granules, or of more than one block, the large one; both answer the same.
TEST_F(InlineCheckTest, AFewKiBTakeTheSmallKernel) {
  CUdeviceptr big = 0;
  const uint64_t bytes = 2 * GMT_INLINE_MAX_BYTES;
  ASSERT_EQ(cuMemAlloc(&big, bytes), CUDA_SUCCESS);
  const uint64_t limit = uint64_t{GMT_INLINE_SMALL_GRANULES} * 16;
  struct Case {
    std::vector<GmtZone> zones;
    bool small;
  };
  const std::vector<Case> cases = {
      {zones_, true},
      // From 8 bytes into a granule: exactly the limit's granules, then one
      // granule more.
      {{{big + 8, limit - 8, 0xfd, 0}}, true},
      {{{big + 8, limit - 7, 0xfd, 0}}, false},
      {{{big, bytes, 0xfd, 0}}, false},  // two blocks
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(P().ops.Fill(ctx(), 0, c.zones));
    unsigned char* last = reinterpret_cast<unsigned char*>(
        c.zones.back().address + c.zones.back().bytes - 1);
    *last = 0;  // the kernel's write
    const unsigned long long inline_launches = FakeCudaInlineCheckLaunches();
    const unsigned long long small_launches = FakeCudaSmallCheckLaunches();
    const uint64_t ticket =
        P().ops.CheckAfterKernel(ctx(), stream(), c.zones, true);
    ASSERT_NE(ticket, 0u);
    EXPECT_EQ(FakeCudaInlineCheckLaunches(), inline_launches + 1);
    EXPECT_EQ(FakeCudaSmallCheckLaunches(), small_launches + (c.small ? 1 : 0))
        << c.zones.back().bytes << " bytes";
    std::vector<GmtZoneResult> results;
    ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
              gmt::DeviceOps::Poll::kDone);
    ASSERT_EQ(results.size(), c.zones.size());
    EXPECT_EQ(results.back().changed_bytes, 1u);
    EXPECT_EQ(~results.back().first_inverted, c.zones.back().bytes - 1);
  }
  cuMemFree(big);
}

TEST_F(InlineCheckTest, ManyZonesTakeTheTable) {
  std::vector<GmtZone> many;
  for (uint64_t i = 0; i < GMT_INLINE_MAX_ZONES + 1; ++i) {
    many.push_back(GmtZone{block_ + 4096 + i * 64, 32, 0x11, 0});
  }
  ASSERT_TRUE(P().ops.Fill(ctx(), 0, many));
  const unsigned long long launches = FakeCudaInlineCheckLaunches();
  const uint64_t ticket = P().ops.CheckAfterKernel(ctx(), stream(), many, true);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches);
  std::vector<GmtZoneResult> results;
  EXPECT_EQ(P().ops.PollCheck(ticket, true, &results),
            gmt::DeviceOps::Poll::kDone);
  EXPECT_EQ(results.size(), many.size());
}

// Checks that are not per kernel (at synchronizations on the tool's stream,
// at a stream-ordered free on the program's) are one inline launch too: the
// table path's five driver calls (clear, upload, launch, copy back, event)
// each cost the program's thread microseconds.
TEST_F(InlineCheckTest, EveryFewZoneCheckIsOneLaunch) {
  Overrun();
  for (uint64_t s : {uint64_t{0}, stream()}) {
    const unsigned long long launches = FakeCudaInlineCheckLaunches();
    const uint64_t ticket = P().ops.CheckAsync(ctx(), s, zones_);
    ASSERT_NE(ticket, 0u);
    EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches + 1) << "stream " << s;
    std::vector<GmtZoneResult> results;
    ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
              gmt::DeviceOps::Poll::kDone);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[1].changed_bytes, 1u);
  }
}

// A check of more bytes than one block covers takes several blocks in the
// one launch; what they found of one zone is merged: counts added, the
// least first and the greatest last offset.
TEST_F(InlineCheckTest, ALargeCheckIsSeveralBlocksMerged) {
  CUdeviceptr big = 0;
  const uint64_t bytes = 3 * GMT_INLINE_MAX_BYTES + 100;
  ASSERT_EQ(cuMemAlloc(&big, bytes), CUDA_SUCCESS);
  const std::vector<GmtZone> zones = {{big, bytes, 0xfd, 0}};
  ASSERT_TRUE(P().ops.Fill(ctx(), 0, zones));
  auto* b = reinterpret_cast<unsigned char*>(big);
  // Far apart: different blocks' shares.
  for (uint64_t at :
       {uint64_t{5}, uint64_t{GMT_INLINE_MAX_BYTES} + 7, bytes - 1}) {
    b[at] = 0;
  }
  const unsigned long long launches = FakeCudaInlineCheckLaunches();
  const uint64_t ticket = P().ops.CheckAsync(ctx(), stream(), zones);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches + 1);
  std::vector<GmtZoneResult> results;
  ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
            gmt::DeviceOps::Poll::kDone);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].changed_bytes, 3u);
  EXPECT_EQ(~results[0].first_inverted, 5u);
  EXPECT_EQ(results[0].last_plus1, bytes);
  // The next check's ids follow all of them: a second check answers alone.
  b[5] = 0xfd;
  b[GMT_INLINE_MAX_BYTES + 7] = 0xfd;
  b[bytes - 1] = 0xfd;
  const uint64_t clean = P().ops.CheckAsync(ctx(), stream(), zones);
  ASSERT_EQ(P().ops.PollCheck(clean, true, &results),
            gmt::DeviceOps::Poll::kDone);
  EXPECT_EQ(results[0].changed_bytes, 0u);
  ASSERT_EQ(cuMemFree(big), CUDA_SUCCESS);
}

// Zones of no bytes are clean at once, without a launch: a poll that does not
// wait answers even while the GPU has not run anything (found on the H200,
// where the inline launch left such a check pending).
TEST_F(InlineCheckTest, ZeroLengthZonesAnswerAtOnce) {
  FakeCudaDeferInlineChecks(1);
  const std::vector<GmtZone> empty = {{block_, 0, 1, 0}, {block_ + 8, 0, 2, 0}};
  for (uint64_t s : {uint64_t{0}, stream()}) {
    const unsigned long long launches = FakeCudaInlineCheckLaunches();
    const uint64_t ticket = P().ops.CheckAsync(ctx(), s, empty);
    ASSERT_NE(ticket, 0u);
    EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches);
    std::vector<GmtZoneResult> results;
    ASSERT_EQ(P().ops.PollCheck(ticket, false, &results),
              gmt::DeviceOps::Poll::kDone);
    EXPECT_EQ(results.size(), 2u);
  }
}

// More bytes than GMT_INLINE_MAX_BLOCKS blocks cover: the table path.
TEST_F(InlineCheckTest, MoreThanTheBlocksCoverTakesTheTable) {
  CUdeviceptr big = 0;
  const uint64_t bytes =
      uint64_t{GMT_INLINE_MAX_BLOCKS} * GMT_INLINE_MAX_BYTES + 1;
  ASSERT_EQ(cuMemAlloc(&big, bytes), CUDA_SUCCESS);
  const std::vector<GmtZone> zones = {{big, bytes, 0xfd, 0}};
  ASSERT_TRUE(P().ops.Fill(ctx(), 0, zones));
  const unsigned long long launches = FakeCudaInlineCheckLaunches();
  const uint64_t ticket = P().ops.CheckAsync(ctx(), stream(), zones);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches);
  std::vector<GmtZoneResult> results;
  EXPECT_EQ(P().ops.PollCheck(ticket, true, &results),
            gmt::DeviceOps::Poll::kDone);
  ASSERT_EQ(cuMemFree(big), CUDA_SUCCESS);
}

// A few zones filled on a program's stream: written, and what lies between
// them untouched. Up to three zones (a new tensor's canaries and a freed
// tensor's bytes) are memsets, the cheaper calls for the program's thread;
// from four on, one launch of the inline fill kernel, cheaper for the GPU.
TEST_F(InlineCheckTest, TwoZonesOnAProgramStreamAreMemsets) {
  EXPECT_EQ(FillOnProgramStream({{block_ + 1, 511, 0xcb, 0},
                                 {block_ + 4096, 0, 0xcb, 0},
                                 {block_ + 4097, 3000, 0xfd, 0}}),
            0u);
}

TEST_F(InlineCheckTest, ThreeZonesOnAProgramStreamAreMemsets) {
  EXPECT_EQ(FillOnProgramStream({{block_ + 1, 511, 0xcb, 0},
                                 {block_ + 1000, 24, 0xcb, 0},
                                 {block_ + 4097, 3000, 0xfd, 0}}),
            0u);
}

TEST_F(InlineCheckTest, FourZonesOnAProgramStreamAreOneLaunch) {
  EXPECT_EQ(FillOnProgramStream({{block_ + 1, 511, 0xcb, 0},
                                 {block_ + 1000, 24, 0xcb, 0},
                                 {block_ + 1100, 0, 0xcb, 0},
                                 {block_ + 1200, 100, 0xcb, 0},
                                 {block_ + 4097, 3000, 0xfd, 0}}),
            1u);
}

// A fill and a check due on one program stream are one launch: the fill's
// zones are written, nothing else is, and the check answers what it found
// (here the overrun past zones_[1]'s start), from host memory as an inline
// check does.
TEST_F(InlineCheckTest, AFillAndACheckOnAProgramStreamAreOneLaunch) {
  auto* b = reinterpret_cast<unsigned char*>(block_);
  Overrun();
  const std::vector<GmtZone> fill = {{block_ + 600, 100, 0x11, 0},
                                     {block_ + 800, 0, 0x22, 0},
                                     {block_ + 900, 50, 0x33, 0}};
  const unsigned long long combined = FakeCudaCheckFillLaunches();
  const unsigned long long fills = FakeCudaInlineFillLaunches();
  const unsigned long long checks = FakeCudaInlineCheckLaunches();
  FakeCudaDeferInlineChecks(1);
  bool filled = false;
  const uint64_t ticket =
      P().ops.CheckAndFill(ctx(), stream(), zones_, fill, &filled);
  ASSERT_NE(ticket, 0u);
  EXPECT_TRUE(filled);
  EXPECT_EQ(FakeCudaCheckFillLaunches(), combined + 1);
  EXPECT_EQ(FakeCudaInlineFillLaunches(), fills);  // no launch of its own
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), checks + 1);
  for (uint64_t at = 560; at < 1000; ++at) {
    unsigned char want = 0;
    if (at >= 600 && at < 700) want = 0x11;
    if (at >= 900 && at < 950) want = 0x33;
    ASSERT_EQ(b[at], want) << "byte " << at;
  }
  ExpectOverrunAnswered(ticket);
}

// Where one launch cannot hold both (a check of more zones than its
// parameters take, or on the tool's stream), the fill and the check are
// made as Fill and CheckAsync would make them, and both still happen.
TEST_F(InlineCheckTest, ACheckTooLargeToRideOnAFillIsItsOwn) {
  std::vector<GmtZone> many;
  for (uint64_t i = 0; i <= GMT_INLINE_MAX_ZONES; ++i) {
    many.push_back({block_ + 2000 + 16 * i, 8, 0x44, 0});
  }
  ASSERT_TRUE(P().ops.Fill(ctx(), 0, many));
  reinterpret_cast<unsigned char*>(block_)[2000 + 16 * 3 + 7] = 0;
  Overrun();
  const std::vector<GmtZone> fill = {{block_ + 600, 100, 0x11, 0}};
  for (uint64_t s : {stream(), uint64_t{0}}) {
    const std::vector<GmtZone> check =
        s == 0 ? zones_ : many;  // the tool's stream: any size is its own
    const unsigned long long combined = FakeCudaCheckFillLaunches();
    bool filled = false;
    const uint64_t ticket =
        P().ops.CheckAndFill(ctx(), s, check, fill, &filled);
    ASSERT_NE(ticket, 0u);
    EXPECT_TRUE(filled);
    EXPECT_EQ(FakeCudaCheckFillLaunches(), combined);
    std::vector<GmtZoneResult> results;
    ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
              gmt::DeviceOps::Poll::kDone);
    ASSERT_EQ(results.size(), check.size());
    EXPECT_EQ(results[s == 0 ? 1 : 3].changed_bytes, 1u) << "stream " << s;
    EXPECT_EQ(reinterpret_cast<unsigned char*>(block_)[650], 0x11);
  }
}

// The context goes with checks in flight: they ran before it went (the
// driver finishes queued work), and a ticket of a forgotten context answers
// kFailed without reading the report, which went with the context.
TEST_F(InlineCheckTest, ContextTeardownWithChecksInFlight) {
  FakeCudaDeferInlineChecks(1);
  const uint64_t waited = P().ops.CheckAfterKernel(ctx(), stream(), zones_,
                                                   /*context_current=*/true);
  const uint64_t dropped = P().ops.CheckAfterKernel(ctx(), stream(), zones_,
                                                    /*context_current=*/true);
  ASSERT_NE(waited, 0u);
  ASSERT_NE(dropped, 0u);
  std::vector<GmtZoneResult> results;
  // What the guard manager does before a context goes: wait, then forget.
  EXPECT_EQ(P().ops.PollCheck(waited, true, &results),
            gmt::DeviceOps::Poll::kDone);
  P().ops.ForgetContext(ctx());
  ASSERT_EQ(cuCtxDestroy(context_), CUDA_SUCCESS);
  context_ = nullptr;
  EXPECT_EQ(P().ops.PollCheck(dropped, true, &results),
            gmt::DeviceOps::Poll::kFailed);
}

// In steady state nothing but the launch: no wait for fills long done.
TEST_F(InlineCheckTest, NoStreamWaitOnceFillsAreSeenDone) {
  std::vector<GmtZoneResult> results;
  // The first check learns that the fill of SetUp is done.
  uint64_t ticket = P().ops.CheckAfterKernel(ctx(), stream(), zones_, true);
  ASSERT_EQ(P().ops.PollCheck(ticket, true, &results),
            gmt::DeviceOps::Poll::kDone);
  FakeCudaDeferInlineChecks(1);
  const unsigned long long launches = FakeCudaInlineCheckLaunches();
  ticket = P().ops.CheckAfterKernel(ctx(), stream(), zones_, true);
  // Had it queried the fill's event, the double would have run the held
  // check (time passes while someone polls).
  EXPECT_EQ(P().ops.PollCheck(ticket, false, &results),
            gmt::DeviceOps::Poll::kPending);
  EXPECT_EQ(FakeCudaInlineCheckLaunches(), launches + 1);
}

TEST(DriverDeviceOpsTest, FailsSoftlyBeforeCuInitAndRecoversAfter) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process
  EXPECT_EXIT(std::exit(FillBeforeAndAfterCuInit() ? 0 : 1),
              testing::ExitedWithCode(0), "CUDA_ERROR_NOT_INITIALIZED");
}

}  // namespace
}  // namespace gmt_test
