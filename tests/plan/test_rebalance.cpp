// Pipeline rebalancing against brute force over every contiguous partition of a deliberately unbalanced
// cost table (attention-heavy blocks, a heavy head). Exact: both compare sums of the same numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "src/core/error.hpp"
#include "src/plan/rebalance.hpp"

using namespace gt::plan;

namespace {
// The smallest value of objective(begin) over every placement of stages - 1 cuts in n blocks (begin: the stages'
// first blocks, and n).
double min_over_partitions(int n, int stages, const std::function<double(const std::vector<int>&)>& objective) {
  double best = 1e300;
  std::vector<int> begin(stages + 1, 0);
  begin[stages] = n;
  std::function<void(int, int)> rec = [&](int s, int from) {
    if (s == stages) return void(best = std::min(best, objective(begin)));
    for (int b = from; b <= n - (stages - s); ++b) {
      begin[s] = b;
      rec(s + 1, b + 1);
    }
  };
  rec(1, 1);
  return best;
}
// Smallest achievable slowest stage by trying every placement of stages - 1 cuts.
double brute_force(const std::vector<double>& cost, int stages, double first, double last) {
  return min_over_partitions(int(cost.size()), stages, [&](const std::vector<int>& begin) {
    const auto c = stage_costs(begin, cost, first, last);
    return *std::max_element(c.begin(), c.end());
  });
}
}  // namespace

TEST(PlanRebalance, MatchesBruteForce) {
  const std::vector<double> cost = {5, 1, 1, 7, 1, 1, 1, 9, 2, 2, 3, 1};
  for (int stages = 1; stages <= 6; ++stages)
    for (double last : {0.0, 4.0, 12.0}) {
      const auto begin = partition_by_cost(cost, stages, 0.5, last);
      ASSERT_EQ(static_cast<int>(begin.size()), stages + 1);
      EXPECT_EQ(begin.front(), 0);
      EXPECT_EQ(begin.back(), static_cast<int>(cost.size()));
      for (int s = 0; s < stages; ++s) EXPECT_LT(begin[s], begin[s + 1]);  // every stage has a block
      const auto c = stage_costs(begin, cost, 0.5, last);
      EXPECT_DOUBLE_EQ(*std::max_element(c.begin(), c.end()), brute_force(cost, stages, 0.5, last));
    }
}

// The equal split of an unbalanced table: the proposal must find the better partition and predict the gain
// as the ratio of slowest stages; a balanced table proposes nothing worth a re-partition.
TEST(PlanRebalance, ProposalOnUnbalancedTable) {
  const std::vector<double> cost = {1, 1, 1, 1, 4, 4, 4, 4};  // equal counts: stage costs 4 and 16
  const RebalanceProposal r = propose_rebalance(cost, 0, 0, {0, 4, 8}, 0.05);
  EXPECT_TRUE(r.worth);
  EXPECT_DOUBLE_EQ(*std::max_element(r.current_cost.begin(), r.current_cost.end()), 16.0);
  const double after = *std::max_element(r.proposed_cost.begin(), r.proposed_cost.end());
  EXPECT_DOUBLE_EQ(after, brute_force(cost, 2, 0, 0));
  EXPECT_DOUBLE_EQ(r.gain, 16.0 / after);
  const RebalanceProposal flat = propose_rebalance(std::vector<double>(8, 1.0), 0, 0, {0, 4, 8}, 0.05);
  EXPECT_FALSE(flat.worth);
  EXPECT_DOUBLE_EQ(flat.gain, 1.0);
  EXPECT_THROW(partition_by_cost({1, 2}, 3, 0, 0), gt::Error);
  EXPECT_THROW(propose_rebalance(cost, 0, 0, {0, 4, 7}, 0.05), gt::Error);
}

namespace {
// The scan over every cut that partition_by_cost used before the bisection (O(stages x blocks^2)): the same
// choices are required of the bisection, ties to the earlier cut included.
std::vector<int> scan_partition(const std::vector<double>& cost, int stages, double first, double last) {
  const int n = static_cast<int>(cost.size());
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  auto c = [&](int s, int a, int b) { return prefix[b] - prefix[a] + (s == 0 ? first : 0) + (s == stages - 1 ? last : 0); };
  const double inf = 1e300;
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s)
    for (int b = s; b <= n - (stages - s); ++b)
      for (int a = s - 1; a < b; ++a) {
        if (best[s - 1][a] == inf) continue;
        const double v = std::max(best[s - 1][a], c(s - 1, a, b));
        if (v < best[s][b] - 1e-12 * std::max(1.0, std::abs(v))) {
          best[s][b] = v;
          cut[s][b] = a;
        }
      }
  std::vector<int> begin(stages + 1);
  begin[stages] = n;
  for (int s = stages, b = n; s > 0; --s) begin[s - 1] = b = cut[s][b];
  return begin;
}
}  // namespace

// Seeded tables of small integer costs (0 included: plateaus, many ties) and equal costs: identical cuts.
TEST(PlanRebalance, BisectionMakesTheScansCuts) {
  uint64_t x = 12345;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + int(next() % 24);
    std::vector<double> cost(n);
    for (double& v : cost) v = trial % 3 == 0 ? 1.0 : double(next() % 4);
    const double first = double(next() % 3), last = double(next() % 5);
    for (int stages = 1; stages <= std::min(n, 6); ++stages)
      EXPECT_EQ(partition_by_cost(cost, stages, first, last), scan_partition(cost, stages, first, last))
          << "trial " << trial << " stages " << stages;
  }
}

// A million equal blocks (model.n_layer = 1e6 in the memory pre-check): even stages, first and last one block
// lighter for their extras. (The scan took minutes here; no time is asserted, the test's limit bounds it.)
TEST(PlanRebalance, MillionBlocks) {
  const std::vector<double> cost(1000000, 1.0);
  EXPECT_EQ(partition_by_cost(cost, 1, 0.5, 0.5), (std::vector<int>{0, 1000000}));
  const std::vector<int> four = partition_by_cost(cost, 4, 0.0, 0.0);
  EXPECT_EQ(four, (std::vector<int>{0, 250000, 500000, 750000, 1000000}));
}

namespace {
// The slowest stage's time of a partition on stages of unequal speed (stage s: scale[s] x its cost).
double scaled_max(const std::vector<int>& begin, const std::vector<double>& cost, const std::vector<double>& scale,
                  double first, double last) {
  const auto c = stage_costs(begin, cost, first, last);
  double m = 0;
  for (size_t s = 0; s < c.size(); ++s) m = std::max(m, scale[s] * c[s]);
  return m;
}
// The best by trying every placement of the cuts.
double brute_force_scaled(const std::vector<double>& cost, const std::vector<double>& scale, double first,
                          double last) {
  return min_over_partitions(int(cost.size()), int(scale.size()), [&](const std::vector<int>& begin) {
    return scaled_max(begin, cost, scale, first, last);
  });
}
}  // namespace

// Live rebalancing (parallel.adapt = rebalance): stages of unequal speed. Against brute force on the unbalanced
// table and on uniform blocks (the trainer's case), one stage 2x or 3x slower, each position; exact (both sides
// multiply and compare the same sums).
TEST(PlanRebalance, SpeedScaledMatchesBruteForce) {
  const std::vector<double> table = {5, 1, 1, 7, 1, 1, 1, 9, 2, 2, 3, 1}, uniform(8, 1.0);
  for (const auto* cost : {&table, &uniform})
    for (int stages = 1; stages <= 4; ++stages)
      for (int slow = 0; slow < stages; ++slow)
        for (double k : {1.0, 2.0, 3.0}) {
          std::vector<double> scale(size_t(stages), 1.0);
          scale[size_t(slow)] = k;
          const auto begin = partition_by_speed(*cost, scale, 0.3, 1.5);
          ASSERT_EQ(static_cast<int>(begin.size()), stages + 1);
          EXPECT_EQ(begin.front(), 0);
          EXPECT_EQ(begin.back(), static_cast<int>(cost->size()));
          for (int s = 0; s < stages; ++s) EXPECT_LT(begin[s], begin[s + 1]);
          EXPECT_DOUBLE_EQ(scaled_max(begin, *cost, scale, 0.3, 1.5), brute_force_scaled(*cost, scale, 0.3, 1.5));
        }
}

// Equal speeds give partition_by_cost's optimum; a 2x stage 1 of 4 on 8 equal blocks gets fewer blocks than its
// peers (the case of the live rebalancing test and benchmark).
TEST(PlanRebalance, SpeedScaledCases) {
  const std::vector<double> uniform(8, 1.0);
  const auto even = partition_by_speed(uniform, {1, 1, 1, 1}, 0, 0);
  EXPECT_EQ(even, (std::vector<int>{0, 2, 4, 6, 8}));
  const auto slow1 = partition_by_speed(uniform, {1, 2, 1, 1}, 0, 0);
  EXPECT_EQ(slow1[2] - slow1[1], 1);
  EXPECT_THROW(partition_by_speed(uniform, {1, 0, 1}, 0, 0), gt::Error);
  EXPECT_THROW(partition_by_speed({1, 1}, {1, 1, 1}, 0, 0), gt::Error);
}
