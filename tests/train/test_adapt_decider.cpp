// Unit tests of the live-rebalancing decider (parallel.adapt = rebalance) against hand-computed partitions: unit
// block costs and no embedding/head extras, so every stage time and gain below is arithmetic on small integers
// (exact in double).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_decider.hpp"

namespace gt {
namespace {

using V = std::vector<int>;
using D = std::vector<double>;

plan::UnitCosts unit_blocks() {
  plan::UnitCosts c;
  c.block = 1;
  return c;
}

AdaptDecider four_stages(AdaptSettings s = {}, V partition = {0, 2, 4, 6, 8}, AdaptHistory h = {}) {
  return AdaptDecider(s, {0, 1, 2, 3}, unit_blocks(), partition, h);
}

// Stage 1 takes 2 ms per block, the others 1: on 2,2,2,2 the stages measure 2,4,2,2 ms. The best partition gives
// stage 1 one block (2 ms) and the other 7 blocks to three stages of 1 ms per block (3 ms, a gain of 4 / 3):
// 3,1,2,2, 2,1,3,2 and 2,1,2,3 are equal; partition_by_speed's tie rule (the earliest start of each stage, from
// the last stage back) picks 2,1,2,3. The first step is warm-up; the window of 5 is full at step 6, when 5 of 5
// steps were imbalanced.
TEST(AdaptDecider, MovesBlocksOffASlowStageAfterTheWindow) {
  AdaptDecider d = four_stages();
  const D slow1 = {2, 4, 2, 2};
  for (int step = 1; step <= 5; ++step) EXPECT_FALSE(d.observe(step, slow1).evaluated) << step;
  const AdaptDecision m = d.observe(6, slow1);
  ASSERT_TRUE(m.evaluated);
  EXPECT_TRUE(m.move);
  EXPECT_EQ(m.current, V({0, 2, 4, 6, 8}));
  EXPECT_EQ(m.proposed, V({0, 2, 3, 5, 8}));
  EXPECT_EQ(m.stage_ms, D({2, 4, 2, 2}));
  EXPECT_EQ(m.predicted_ms, D({2, 2, 2, 3}));
  EXPECT_DOUBLE_EQ(m.gain, 4.0 / 3.0);
  EXPECT_FALSE(m.predicted_from_measurement);
  EXPECT_EQ(stage_blocks_text(m.proposed), "2,1,2,3");
}

TEST(AdaptDecider, BalancedStagesAreNeverEvaluated) {
  AdaptDecider d = four_stages();
  for (int step = 1; step <= 60; ++step) EXPECT_FALSE(d.observe(step, {2, 2, 2, 2}).evaluated) << step;
}

// 3 slow steps in every 5: the k-of-window rule never fires; the median would not see them either.
TEST(AdaptDecider, IsolatedSlowStepsDoNotMove) {
  AdaptDecider d = four_stages();
  for (int step = 1; step <= 60; ++step) {
    const D t = step % 5 < 3 ? D{2, 4, 2, 2} : D{2, 2, 2, 2};
    EXPECT_FALSE(d.observe(step, t).evaluated) << step;
  }
}

// Votes come from single steps, the decision from the window's medians: stage 1 slow in two steps and stage 2 in
// the next two (every one a vote: gain 4 / 3), then a balanced step. Each rank's median is 2 ms, balanced: the
// evaluation keeps the partition (gain 1), and the next one waits `interval` steps although every window of 5
// still holds 4 votes.
TEST(AdaptDecider, KeepOnTheMedianAndWaitTheInterval) {
  AdaptDecider d = four_stages();
  std::vector<int> evaluated;
  for (int step = 1; step <= 40; ++step) {
    const int phase = (step - 2 + 50) % 5;  // steps 2, 3: stage 1 slow; 4, 5: stage 2; 6: balanced; repeat
    const D t = phase < 2 ? D{2, 4, 2, 2} : phase < 4 ? D{2, 2, 4, 2} : D{2, 2, 2, 2};
    const AdaptDecision m = d.observe(step, t);
    if (!m.evaluated) continue;
    evaluated.push_back(step);
    EXPECT_FALSE(m.move) << step;
    EXPECT_DOUBLE_EQ(m.gain, 1.0) << step;
    EXPECT_EQ(m.proposed, m.current) << step;
  }
  EXPECT_EQ(evaluated, V({6, 16, 26, 36}));
}

// After a move to 3,1,2,2 stage 1 recovers (1 ms per block: 3,1,2,2 ms). The model alone would move back to
// 2,2,2,2 (predicted 2 ms, gain 1.5), but that partition measured 4 ms at step 6: within 4 x interval steps the
// measurement predicts (gain 3 / 4 < 1.1: no vote, no oscillation); after it expires the model's move back is taken.
TEST(AdaptDecider, MeasuredPartitionsPredictUntilTheyExpire) {
  AdaptHistory h;
  h.measured["2,2,2,2"] = {6, 4.0};
  h.last_evaluation = 6;
  AdaptSettings s;  // interval 10: measurements expire 40 steps after they were taken
  AdaptDecider d = four_stages(s, {0, 3, 4, 6, 8}, h);
  const D recovered = {3, 1, 2, 2};
  int first_move = -1;
  for (int step = 7; step <= 70 && first_move < 0; ++step) {
    const AdaptDecision m = d.observe(step, recovered);
    if (!m.evaluated) continue;
    if (m.move) {
      first_move = step;
      EXPECT_EQ(m.proposed, V({0, 2, 4, 6, 8}));
      EXPECT_FALSE(m.predicted_from_measurement);
      EXPECT_DOUBLE_EQ(m.gain, 1.5);
    } else {
      ADD_FAILURE() << "step " << step << ": an evaluation that keeps (the measurement gives no votes)";
    }
  }
  // While 2,2,2,2's measurement is fresh (steps 7-46) it predicts 4 ms: gain 0.75, no step votes. From step 47 on
  // the model's 1.5 votes; 4 votes of 5 at step 50.
  EXPECT_EQ(first_move, 50) << "moved back while the measurement of 2,2,2,2 was fresh, or never";
}

TEST(AdaptDecider, BadInput) {
  AdaptDecider d = four_stages();
  EXPECT_THROW(d.observe(1, {1, 1, 1}), Error);
  EXPECT_THROW(d.observe(1, {1, NAN, 1, 1}), Error);
  EXPECT_THROW(AdaptDecider({}, {0, 4}, unit_blocks(), {0, 2, 4, 6, 8}), Error);  // stage 4 of 4 stages
}

}  // namespace
}  // namespace gt

namespace gt {
namespace {

// The move must pay for itself: the case of the first test (2,2,2,2 -> 2,1,2,3 at step 6, 4 ms -> 3 ms a step)
// with the run's length known. No move measured yet: the cost is estimated at 4 x 4 ms = 16 ms; the saving is
// 1 ms per step left. 40 steps: 34 ms > 32 ms, a move. 20 steps: 14 ms < 32, keep. A measured cost of 100 ms
// (carried from an earlier move) keeps it even at 40 steps.
TEST(AdaptDecider, AMoveMustPayForItself) {
  for (const auto& [total, cost, move] : std::vector<std::tuple<int, double, bool>>{{40, -1, true}, {20, -1, false},
                                                                                    {40, 100, false}}) {
    AdaptSettings s;
    s.total_steps = total;
    AdaptHistory h;
    h.move_cost_ms = cost;
    AdaptDecider d = four_stages(s, {0, 2, 4, 6, 8}, h);
    AdaptDecision m;
    for (int step = 1; step <= 6; ++step) m = d.observe(step, {2, 4, 2, 2});
    ASSERT_TRUE(m.evaluated);
    EXPECT_EQ(m.move, move) << total << " steps, cost " << cost;
    EXPECT_DOUBLE_EQ(m.saved_ms, 1.0 * (total - 6));
    EXPECT_DOUBLE_EQ(m.cost_ms, cost >= 0 ? cost : 16.0);
  }
}

}  // namespace
}  // namespace gt

namespace gt {
namespace {

// The measured-noise rule (adapt_noise.hpp), as the data-parallel shares' decider has it. Two stages of 8 unit
// blocks each; stage 0 measures 8 ms (1 per block) every step. Stage 1 over the window of steps 2..6: 10, 10, 12,
// 14, 10 ms. Every step votes (gains 10/9, 12/10, 14/10.5 >= 1.1), the median is 10 ms (1.25 per block), whose
// best partition is 9,7 (max(9, 8.75) = 9): gain 10/9 = 1.11. The spread (p75 - p25) / median = (12 - 10) / 10 =
// 0.2 puts the bar at 1 + 2 x 0.2 = 1.4: kept. The same window with the rule off (noise_factor 0) moves, so the
// rule is what keeps it.
AdaptDecision two_stages_window(const D& stage1_ms, double noise_factor) {
  AdaptSettings s;
  s.noise_factor = noise_factor;
  AdaptDecider d(s, {0, 1}, unit_blocks(), {0, 8, 16});
  d.observe(1, {8, stage1_ms[0]});  // warm-up
  AdaptDecision last;
  for (size_t i = 0; i < stage1_ms.size(); ++i) last = d.observe(int(i) + 2, {8, stage1_ms[i]});
  return last;
}

TEST(AdaptDeciderNoise, AGainWithinTheNoiseIsKept) {
  const AdaptDecision m = two_stages_window({10, 10, 12, 14, 10}, 2.0);
  ASSERT_TRUE(m.evaluated);
  EXPECT_NEAR(m.noise, 0.2, 1e-12);
  EXPECT_NEAR(m.needed, 1.4, 1e-12);
  EXPECT_DOUBLE_EQ(m.gain, 10.0 / 9.0);
  EXPECT_EQ(m.proposed, V({0, 9, 16}));
  EXPECT_FALSE(m.move);
  const AdaptDecision off = two_stages_window({10, 10, 12, 14, 10}, 0.0);
  ASSERT_TRUE(off.evaluated);
  EXPECT_DOUBLE_EQ(off.needed, 1.1);
  EXPECT_TRUE(off.move);
}

// A real 2x slowdown under the same relative jitter (16, 16, 19.2, 22.4, 16: spread 0.2) still moves: median 16 ms,
// 2 per block, best 11,5 (max(11, 10) = 11), gain 16/11 = 1.45 >= 1.4.
TEST(AdaptDeciderNoise, AClearSlowdownStillMovesUnderTheSameNoise) {
  const AdaptDecision m = two_stages_window({16, 16, 19.2, 22.4, 16}, 2.0);
  ASSERT_TRUE(m.evaluated);
  EXPECT_NEAR(m.needed, 1.4, 1e-12);
  EXPECT_DOUBLE_EQ(m.gain, 16.0 / 11.0);
  EXPECT_EQ(m.proposed, V({0, 11, 16}));
  EXPECT_TRUE(m.move);
}

// The bar follows the bottleneck's noise, not a fast stage's: stage 0 jitters 4, 8, 5, 7, 4 ms (a spread of 0.6,
// as the fast stages of 4 ranks on 2 cores measured) while stage 1, 2 per block, is steady at 16 ms and decides
// every step. Bar 1.1; medians 5 (0.625 per block) and 16 give 12,4 (max(7.5, 8) = 8), gain 2: moves. With the
// spread taken over every stage the bar would be 1 + 2 x 0.6 = 2.2 and the move held back.
TEST(AdaptDeciderNoise, AFastStagesJitterDoesNotRaiseTheBar) {
  AdaptDecider d(AdaptSettings{}, {0, 1}, unit_blocks(), {0, 8, 16});
  d.observe(1, {4, 16});
  const D stage0 = {4, 8, 5, 7, 4};
  AdaptDecision m;
  for (size_t i = 0; i < stage0.size(); ++i) m = d.observe(int(i) + 2, {stage0[i], 16});
  ASSERT_TRUE(m.evaluated);
  EXPECT_DOUBLE_EQ(m.noise, 0.0);
  EXPECT_DOUBLE_EQ(m.needed, 1.1);
  EXPECT_EQ(m.proposed, V({0, 12, 16}));
  EXPECT_DOUBLE_EQ(m.gain, 2.0);
  EXPECT_TRUE(m.move);
}

// Steady times: no spread, the bar is the configured gain (the tests above this block rely on it).
TEST(AdaptDeciderNoise, SteadyTimesKeepTheConfiguredBar) {
  const AdaptDecision m = two_stages_window({16, 16, 16, 16, 16}, 2.0);
  ASSERT_TRUE(m.evaluated);
  EXPECT_DOUBLE_EQ(m.noise, 0.0);
  EXPECT_DOUBLE_EQ(m.needed, 1.1);
}

}  // namespace
}  // namespace gt
