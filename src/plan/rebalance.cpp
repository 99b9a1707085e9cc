#include "src/plan/rebalance.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "src/core/error.hpp"

namespace gt::plan {

std::vector<int> partition_by_cost(const std::vector<double>& block_cost, int stages, double first_extra,
                                   double last_extra) {
  const int blocks = static_cast<int>(block_cost.size());
  if (stages <= 0) throw Error("pipeline: the number of stages must be positive");
  if (blocks < stages)
    throw Error("pipeline: " + std::to_string(blocks) + " blocks cannot fill " + std::to_string(stages) +
                " stages (every stage needs at least one block)");
  std::vector<double> prefix(blocks + 1, 0.0);
  for (int i = 0; i < blocks; ++i) prefix[i + 1] = prefix[i] + block_cost[i];
  auto cost = [&](int s, int a, int b) {  // stage s holds blocks [a, b)
    double c = prefix[b] - prefix[a];
    if (s == 0) c += first_extra;
    if (s == stages - 1) c += last_extra;
    return c;
  };
  // best[s][b]: smallest possible slowest stage placing the first b blocks on the first s stages, over the
  // cut a (stage s-1 holds [a, b)). best[s-1][a] does not decrease with a and the last stage's cost does not
  // increase (costs are >= 0), so the optimum sits where they cross: found by bisection, O(log blocks) per
  // (s, b) instead of a scan over every a, which made the memory pre-check spin for minutes at n_layer = 1e6.
  // The earlier cut wins a tie (within 1e-12), as the scan did.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(blocks + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(blocks + 1, 0));
  best[0][0] = 0;
  const auto near = [](double v, double ref) { return v <= ref + 1e-12 * std::max(1.0, std::abs(ref)); };
  for (int s = 1; s <= stages; ++s)
    for (int b = s; b <= blocks - (stages - s); ++b) {
      const std::vector<double>& prev = best[s - 1];
      // a1: the first cut whose prefix is at least its last stage's cost (b when there is none)
      int lo = s - 1, hi = b;
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (prev[mid] >= cost(s - 1, mid, b)) hi = mid;
        else lo = mid + 1;
      }
      const int a1 = lo;
      int a = a1;
      double v = a1 < b ? prev[a1] : inf;
      if (a1 > s - 1) {
        // before a1 the value is the last stage's cost, smallest at a1 - 1; the first cut within the tie
        const double g = cost(s - 1, a1 - 1, b);
        if (near(g, v) || g < v) {
          int l = s - 1, h = a1 - 1;
          while (l < h) {
            const int mid = l + (h - l) / 2;
            if (near(cost(s - 1, mid, b), g)) h = mid;
            else l = mid + 1;
          }
          a = l;
          v = g;
        }
      }
      best[s][b] = v;
      cut[s][b] = a;
    }
  std::vector<int> begin(stages + 1);
  begin[stages] = blocks;
  for (int s = stages, b = blocks; s > 0; --s) {
    b = cut[s][b];
    begin[s - 1] = b;
  }
  return begin;
}

std::vector<double> stage_costs(const std::vector<int>& begin, const std::vector<double>& block_cost,
                                double first_extra, double last_extra) {
  const int stages = static_cast<int>(begin.size()) - 1;
  std::vector<double> c(stages, 0.0);
  for (int s = 0; s < stages; ++s) {
    for (int i = begin[s]; i < begin[s + 1]; ++i) c[s] += block_cost[i];
    if (s == 0) c[s] += first_extra;
    if (s == stages - 1) c[s] += last_extra;
  }
  return c;
}

std::vector<int> partition_by_speed(const std::vector<double>& block_cost, const std::vector<double>& stage_scale,
                                    double first_extra, double last_extra) {
  const int blocks = static_cast<int>(block_cost.size()), stages = static_cast<int>(stage_scale.size());
  if (stages <= 0 || blocks < stages)
    throw Error("pipeline: " + std::to_string(blocks) + " blocks cannot fill " + std::to_string(stages) +
                " stages (every stage needs at least one block)");
  for (double f : stage_scale)
    if (!(f > 0)) throw Error("pipeline: a stage speed scale is not a positive number");
  std::vector<double> prefix(size_t(blocks) + 1, 0.0);
  for (int i = 0; i < blocks; ++i) prefix[size_t(i) + 1] = prefix[size_t(i)] + block_cost[size_t(i)];
  auto time = [&](int s, int a, int b) {  // stage s holds blocks [a, b)
    double c = prefix[size_t(b)] - prefix[size_t(a)];
    if (s == 0) c += first_extra;
    if (s == stages - 1) c += last_extra;
    return stage_scale[size_t(s)] * c;
  };
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][b]: the smallest slowest stage placing the first b blocks on the first s stages; cut[s][b] where
  // stage s - 1 begins in it.
  std::vector<std::vector<double>> best(size_t(stages) + 1, std::vector<double>(size_t(blocks) + 1, inf));
  std::vector<std::vector<int>> cut(size_t(stages) + 1, std::vector<int>(size_t(blocks) + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s)
    for (int b = s; b <= blocks - (stages - s); ++b)
      for (int a = s - 1; a < b; ++a) {
        const double v = std::max(best[size_t(s) - 1][size_t(a)], time(s - 1, a, b));
        if (v < best[size_t(s)][size_t(b)]) {  // strict: the earliest cut keeps a tie
          best[size_t(s)][size_t(b)] = v;
          cut[size_t(s)][size_t(b)] = a;
        }
      }
  std::vector<int> begin(size_t(stages) + 1);
  begin[size_t(stages)] = blocks;
  for (int s = stages, b = blocks; s > 0; --s) {
    b = cut[size_t(s)][size_t(b)];
    begin[size_t(s) - 1] = b;
  }
  return begin;
}

UnitCosts modelled_unit_costs(const ModelShape& m, double flop_per_byte) {
  const double h = double(m.h), s = double(m.s), V = double(m.V);
  UnitCosts c;
  c.block = 3.0 * (24.0 * h * h + 4.0 * s * h);
  c.head = 6.0 * V * h + 16.0 * V * flop_per_byte;
  c.embedding = (12.0 + 16.0) * h * flop_per_byte;
  return c;
}

std::vector<int> modelled_partition(const ModelShape& m, int stages) {
  const UnitCosts c = modelled_unit_costs(m);
  return partition_by_cost(std::vector<double>(size_t(m.L), 1.0), stages, c.embedding / c.block, c.head / c.block);
}

RebalanceProposal propose_rebalance(const std::vector<double>& block_cost, double first_extra, double last_extra,
                                    const std::vector<int>& current, double threshold) {
  const int stages = static_cast<int>(current.size()) - 1;
  if (stages < 1 || current.front() != 0 || current.back() != static_cast<int>(block_cost.size()))
    throw Error("rebalance: the current partition does not cover the measured blocks");
  RebalanceProposal r;
  r.current = current;
  r.proposed = partition_by_cost(block_cost, stages, first_extra, last_extra);
  r.current_cost = stage_costs(current, block_cost, first_extra, last_extra);
  r.proposed_cost = stage_costs(r.proposed, block_cost, first_extra, last_extra);
  const double now = *std::max_element(r.current_cost.begin(), r.current_cost.end());
  const double then = *std::max_element(r.proposed_cost.begin(), r.proposed_cost.end());
  r.gain = then > 0 ? now / then : 1.0;
  r.worth = r.gain >= 1.0 + threshold;
  return r;
}

}  // namespace gt::plan
