// Growth (lib/leaks/growth.h): which call sites are flagged as suspected leaks,
// and when.
#include "lib/leaks/growth.h"

#include <vector>

#include "gtest/gtest.h"

namespace gmt {
namespace {

using Live = absl::flat_hash_map<StackId, uint64_t>;
constexpr int64_t kSecond = 1000000000;

TEST(Growth, FlagsASiteThatRoseAtEachOfTheLastNSamplesOnce) {
  GrowthTracker tracker({/*rises=*/3, /*min_bytes=*/100});
  std::vector<std::vector<GrowthFlag>> flags;
  for (int i = 0; i < 6; ++i) {
    flags.push_back(tracker.AddSample(i * kSecond, Live{{7, 1000 + 100 * i}}));
  }
  EXPECT_TRUE(flags[0].empty());
  EXPECT_TRUE(flags[1].empty());
  EXPECT_TRUE(flags[2].empty());
  ASSERT_EQ(flags[3].size(), 1u);  // the third rise
  EXPECT_EQ(flags[3][0].site, 7u);
  EXPECT_EQ(flags[3][0].rises, 3u);
  EXPECT_EQ(flags[3][0].first_bytes, 1000u);
  EXPECT_EQ(flags[3][0].last_bytes, 1300u);
  EXPECT_EQ(flags[3][0].first_ns, 0);
  EXPECT_EQ(flags[3][0].last_ns, 3 * kSecond);
  EXPECT_TRUE(flags[4].empty());  // once per site
  EXPECT_TRUE(flags[5].empty());
  // The report's figures follow the site as it goes on rising.
  std::vector<GrowthFlag> all = tracker.Flagged();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].rises, 5u);
  EXPECT_EQ(all[0].last_bytes, 1500u);
  EXPECT_EQ(tracker.samples(), 6u);
}

TEST(Growth, APlateauRestartsTheCount) {
  GrowthTracker tracker({3, 0});
  // Rises twice, stays flat (a cache that filled), rises twice more: never
  // three rises in a row.
  for (uint64_t bytes : {100, 200, 300, 300, 400, 500, 500, 600}) {
    EXPECT_TRUE(tracker.AddSample(0, Live{{1, bytes}}).empty()) << bytes;
  }
  EXPECT_TRUE(tracker.Flagged().empty());
  EXPECT_EQ(tracker.AddSample(0, Live{{1, 700}}).size(), 0u);
  EXPECT_EQ(tracker.AddSample(0, Live{{1, 800}}).size(), 1u);
}

TEST(Growth, ADropRestartsTheCount) {
  GrowthTracker tracker({2, 0});
  EXPECT_TRUE(tracker.AddSample(0, Live{{1, 100}}).empty());
  EXPECT_TRUE(tracker.AddSample(1, Live{{1, 200}}).empty());
  EXPECT_TRUE(tracker.AddSample(2, Live{{1, 50}}).empty());
  EXPECT_TRUE(tracker.AddSample(3, Live{{1, 60}}).empty());
  std::vector<GrowthFlag> f = tracker.AddSample(4, Live{{1, 70}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].first_bytes, 50u);
  EXPECT_EQ(f[0].first_ns, 2);
}

TEST(Growth, SmallRisesBelowTheMinimumAreNotFlagged) {
  GrowthTracker tracker({3, 1 << 20});
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(tracker.AddSample(i, Live{{1, 4096u + i}}).empty());
  }
  // A bigger rise over the same run passes.
  EXPECT_TRUE(tracker.AddSample(20, Live{{1, 2u << 20}}).size() == 1);
}

TEST(Growth, ASiteThatFreesEverythingStartsOver) {
  GrowthTracker tracker({3, 0});
  tracker.AddSample(0, Live{{1, 100}});
  tracker.AddSample(1, Live{{1, 200}});
  tracker.AddSample(2, Live{{1, 300}});
  tracker.AddSample(3, Live{});  // all freed: absent from the sample
  EXPECT_TRUE(tracker.AddSample(4, Live{{1, 400}}).empty());
  EXPECT_TRUE(tracker.AddSample(5, Live{{1, 500}}).empty());
  EXPECT_TRUE(tracker.AddSample(6, Live{{1, 600}}).empty());
  EXPECT_EQ(tracker.AddSample(7, Live{{1, 700}}).size(), 1u);
}

TEST(Growth, SitesAreIndependent) {
  GrowthTracker tracker({2, 0});
  std::vector<GrowthFlag> flagged;
  for (int i = 0; i < 4; ++i) {
    // Site 1 leaks; site 2 churns up and down; site 3 is constant.
    Live live{{1, 100u * (i + 1)}, {2, i % 2 == 0 ? 500u : 100u}, {3, 42}};
    for (const GrowthFlag& f : tracker.AddSample(i, live)) flagged.push_back(f);
  }
  ASSERT_EQ(flagged.size(), 1u);
  EXPECT_EQ(flagged[0].site, 1u);
}

}  // namespace
}  // namespace gmt
