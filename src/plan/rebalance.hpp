#pragma once
// Pipeline partitioning by measured or modelled cost: contiguous block ranges per stage that minimise the
// slowest stage. Pure functions (tests/plan/test_rebalance.cpp checks them against brute force).
#include <vector>

namespace gt::plan {

// First block of each stage (size stages + 1, begin[stages] = blocks) minimising max over stages of
// sum(cost of its blocks) + first_extra (stage 0: embedding) + last_extra (last stage: head and loss).
// Every stage gets at least one block; ties go to the earlier cut (as src/train/schedule.cpp's
// partition_stages, which this generalises from equal to per-block costs). Throws gt::Error if blocks < stages.
std::vector<int> partition_by_cost(const std::vector<double>& block_cost, int stages, double first_extra,
                                   double last_extra);

// Cost of every stage of a partition.
std::vector<double> stage_costs(const std::vector<int>& begin, const std::vector<double>& block_cost,
                                double first_extra, double last_extra);

struct RebalanceProposal {
  std::vector<int> current, proposed;            // first block per stage (+ end)
  std::vector<double> current_cost, proposed_cost;  // per stage
  double gain = 1.0;     // slowest stage now / slowest stage proposed (>= 1)
  bool worth = false;    // gain exceeds the threshold
};

// From measured per-block forward+backward times (and the first/last stages' extra work), the partition
// that balances them and the predicted gain over `current`; `worth` when gain >= 1 + threshold.
RebalanceProposal propose_rebalance(const std::vector<double>& block_cost, double first_extra, double last_extra,
                                    const std::vector<int>& current, double threshold);

}  // namespace gt::plan
