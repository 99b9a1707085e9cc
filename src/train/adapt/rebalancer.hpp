#pragma once
// parallel.rebalance = auto: the pipeline partition recomputed from measured block times. For the first
// parallel.rebalance_after steps every rank times the units it computes (BlockTimer); then one world reduction
// gives every rank the slowest time of every unit, plan::propose_rebalance the partition that balances them,
// and when the predicted gain reaches 1 + parallel.rebalance_gain the trainer saves a checkpoint and the run
// continues on the new partition (src/cli/main.cpp rebuilds the trainer, which resumes from it).
// Also the partition itself: the deck's parallel.stage_blocks or the cost model's.
#include <memory>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/model/gpt.hpp"
#include "src/train/report/block_timer.hpp"

namespace gt {

// First block of every stage (size pp + 1): parallel.stage_blocks when set (its count must be pp), else the
// modelled costs (plan::modelled_partition).
std::vector<int> stage_partition(const Config& cfg, int pp);

class Rebalancer {
 public:
  // Times the model's units when rebalancing is on (pp > 1 and rebalance = auto) or to report the times after
  // an earlier rebalance (parallel.rebalanced_from); otherwise does nothing.
  Rebalancer(const Config& cfg, Grid& grid, StageModel& model, std::vector<int> partition);
  ~Rebalancer();
  // After each step of this run. Collective on the step that decides; true when the run should stop here and
  // continue on proposed_blocks() (then rebalanced_from() says what it measured).
  bool after_step(int steps_this_run);
  std::string proposed_blocks() const;  // "3,1": parallel.stage_blocks of the new partition
  const std::string& report() const { return report_; }

 private:
  const Config& cfg_;
  Grid& grid_;
  StageModel& model_;
  std::vector<int> partition_, proposed_;
  std::unique_ptr<BlockTimer> timer_;
  std::string report_;
};

}  // namespace gt
