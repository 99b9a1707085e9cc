// Unit tests of the straggler detector against hand-made sequences of per-rank compute seconds.
#include <gtest/gtest.h>

#include <vector>

#include "src/train/adapt/straggler.hpp"

namespace gt {
namespace {

using V = std::vector<int>;

TEST(Straggler, FlaggedOnlyAfterKOfWindowSteps) {
  StragglerDetector d({}, {0, 0, 0, 0});
  const std::vector<double> slow = {1.0, 1.0, 2.0, 1.0};  // rank 2 at 2x its peers' median
  for (int s = 0; s < 3; ++s) EXPECT_TRUE(d.observe(slow).stragglers.empty()) << "step " << s;
  const StragglerStep st = d.observe(slow);  // 4th slow step of 5: k = 4 reached
  EXPECT_EQ(st.stragglers, V({2}));
  EXPECT_EQ(st.became, V({2}));
  EXPECT_EQ(st.slowest_rank, 2);
  EXPECT_DOUBLE_EQ(st.slowest_ratio, 2.0);
  EXPECT_TRUE(d.observe(slow).became.empty());  // already flagged: no second "became"
  EXPECT_EQ(d.flagged_steps(), (std::vector<std::int64_t>{0, 0, 2, 0}));
}

TEST(Straggler, IsolatedSlowStepsAreNotAStraggler) {
  StragglerDetector d({}, {0, 0});
  const std::vector<double> slow = {1.0, 2.0}, even = {1.0, 1.0};
  // 3 slow steps in every window of 5: never 4.
  for (int s = 0; s < 20; ++s) EXPECT_TRUE(d.observe(s % 5 < 3 ? slow : even).stragglers.empty()) << s;
}

TEST(Straggler, HysteresisNeedsWindowStepsBelowExit) {
  StragglerDetector d({}, {0, 0});
  for (int s = 0; s < 4; ++s) d.observe({1.0, 2.0});
  ASSERT_EQ(d.observe({1.0, 2.0}).stragglers, V({1}));
  // 1.2x: below enter (1.25) but above exit (1.10): stays a straggler however long.
  for (int s = 0; s < 10; ++s) EXPECT_EQ(d.observe({1.0, 1.2}).stragglers, V({1})) << s;
  // 4 steps below exit, then one at 1.2x resets the run of low steps.
  for (int s = 0; s < 4; ++s) EXPECT_EQ(d.observe({1.0, 1.0}).stragglers, V({1}));
  EXPECT_EQ(d.observe({1.0, 1.2}).stragglers, V({1}));
  for (int s = 0; s < 4; ++s) EXPECT_EQ(d.observe({1.0, 1.0}).stragglers, V({1}));
  const StragglerStep st = d.observe({1.0, 1.0});  // 5th consecutive step below exit
  EXPECT_TRUE(st.stragglers.empty());
  EXPECT_EQ(st.stopped, V({1}));
  // The window restarts: one more slow step does not re-flag at once.
  EXPECT_TRUE(d.observe({1.0, 2.0}).stragglers.empty());
}

// parallel.straggler_ratio: the enter ratio it names, the exit ratio the same 40% of the margin below it as the
// default's (1.10 for 1.25). A rank at 2x is flagged at the default and not at 3; at 3.5x it is, and it stays one
// at 2x (above exit 1.8) until 5 steps at 1.5x (below it).
TEST(Straggler, TheRatioSettingMovesBothThresholds) {
  const StragglerConfig def = straggler_config(StragglerConfig{}.enter_ratio);
  EXPECT_DOUBLE_EQ(def.enter_ratio, StragglerConfig{}.enter_ratio);
  EXPECT_NEAR(def.exit_ratio, StragglerConfig{}.exit_ratio, 1e-12);
  const StragglerConfig c = straggler_config(3.0);
  EXPECT_DOUBLE_EQ(c.enter_ratio, 3.0);
  EXPECT_NEAR(c.exit_ratio, 1.8, 1e-12);
  StragglerDetector at_default(def, {0, 0}), at3(c, {0, 0});
  for (int s = 0; s < 10; ++s) {
    at_default.observe({1.0, 2.0});
    EXPECT_TRUE(at3.observe({1.0, 2.0}).stragglers.empty()) << s;
  }
  EXPECT_EQ(at_default.observe({1.0, 2.0}).stragglers, V({1}));
  for (int s = 0; s < 4; ++s) at3.observe({1.0, 3.5});
  ASSERT_EQ(at3.observe({1.0, 3.5}).stragglers, V({1}));
  for (int s = 0; s < 10; ++s) EXPECT_EQ(at3.observe({1.0, 2.0}).stragglers, V({1})) << s;
  for (int s = 0; s < 4; ++s) EXPECT_EQ(at3.observe({1.0, 1.5}).stragglers, V({1})) << s;
  EXPECT_TRUE(at3.observe({1.0, 1.5}).stragglers.empty());
}

TEST(Straggler, TiesAndEqualRanksAreNeverStragglers) {
  StragglerDetector d({}, {0, 0, 0});
  for (int s = 0; s < 10; ++s) {
    const StragglerStep st = d.observe({1.5, 1.5, 1.5});
    EXPECT_TRUE(st.stragglers.empty());
    EXPECT_EQ(st.slowest_rank, 0);  // ties go to the lowest rank
    EXPECT_DOUBLE_EQ(st.slowest_ratio, 1.0);
  }
  // Exactly at the threshold is not above it.
  StragglerDetector e({}, {0, 0});
  for (int s = 0; s < 10; ++s) EXPECT_TRUE(e.observe({1.0, 1.25}).stragglers.empty());
}

TEST(Straggler, OneRankHasNoPeers) {
  StragglerDetector d({}, {0});
  for (int s = 0; s < 10; ++s) {
    const StragglerStep st = d.observe({5.0});
    EXPECT_TRUE(st.stragglers.empty());
    EXPECT_EQ(st.slowest_rank, 0);
    EXPECT_DOUBLE_EQ(st.slowest_ratio, 1.0);
  }
}

TEST(Straggler, PipelineStagesAreComparedWithinTheStage) {
  // pp = 2, dp = 2: ranks 0,1 in stage 0, ranks 2,3 in stage 1. Stage 1 holds more blocks (3x the time) by
  // design: not a straggler. Rank 3 at 2x its stage peer is.
  StragglerDetector d({}, {0, 0, 1, 1});
  StragglerStep st;
  for (int s = 0; s < 5; ++s) st = d.observe({1.0, 1.0, 3.0, 6.0});
  EXPECT_EQ(st.stragglers, V({3}));
  EXPECT_EQ(st.slowest_rank, 3);
  EXPECT_DOUBLE_EQ(st.slowest_ratio, 2.0);
}

// The verdict in words, which the watchdog's report carries (src/comm/watchdog.hpp, set_context).
TEST(Straggler, DescribeNamesTheFlaggedRanksWithTheirRatioAndRun) {
  StragglerDetector d({}, {0, 0, 0, 0});
  EXPECT_EQ(d.describe(), "");  // nothing observed yet
  d.observe({1.0, 1.0, 1.0, 1.04});
  EXPECT_EQ(d.describe(), "no straggler (slowest at the last step: rank 3 at 1.04x its peers' median compute)");
  for (int s = 0; s < 6; ++s) d.observe({1.0, 3.0, 1.0, 1.0});  // flagged at the 4th slow step, then 2 more
  EXPECT_EQ(d.describe(), "stragglers: rank 1 at 3.00x its peers' median compute at the last step (flagged for the "
                          "last 3 steps)");
  d.observe({1.0, 2.5, 1.0, 1.5});  // rank 3 above 1.25x but not for 4 of 5 steps: not named
  EXPECT_EQ(d.describe(), "stragglers: rank 1 at 2.50x its peers' median compute at the last step (flagged for the "
                          "last 4 steps)");
}

TEST(Straggler, BadInputIsRefused) {
  StragglerDetector d({}, {0, 0});
  EXPECT_THROW(d.observe({1.0}), std::invalid_argument);
  StragglerConfig bad;
  bad.k = 6;  // more than the window
  EXPECT_THROW(StragglerDetector(bad, {0, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace gt
