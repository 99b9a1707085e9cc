#pragma once
// parallel.adapt = rebalance (issue 25, docs/adaptive.md): the trainer's seam for live pipeline rebalancing.
// After each step the trainer hands it the step's per-rank compute times (StragglerMonitor's all-gathered
// array, the same on every rank); the AdaptDecider says whether to move blocks; a move is agreed by a broadcast
// from world rank 0 (every rank computes the same decision from the same array; the broadcast makes the
// agreement explicit, so no rank can continue on another partition). Each evaluation is logged (the log line,
// "adapt" in that step's metrics.jsonl line, and the list in summary.json). The move itself (the state
// handed to a trainer rebuilt on the new partition) is StateHandoff's (state_handoff.hpp).
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/train/adapt/adapt_decider.hpp"
#include "src/train/report/step_stats.hpp"

namespace gt {

// What the adapter carries from one trainer to the next.
struct AdaptCarry {
  AdaptHistory history;
  std::vector<std::string> decisions;  // JSON objects of every evaluation so far
};

// Throws gt::Error (one line, the same on every rank) when parallel.adapt = rebalance cannot run with the rest
// of the configuration: one pipeline stage, the interleaved schedule, 2:4 sparsity masks or top-k residuals
// (state the move does not carry yet).
void check_adapt_rebalance(const Config& cfg, int pp);

class PipelineAdapter {
 public:
  // Collective over the world (gathers every rank's pipeline stage).
  PipelineAdapter(const Config& cfg, Grid& grid, std::vector<int> partition, AdaptCarry carry);

  // Collective over the world, after step `step` completed: true when the run moves to proposed() now. Writes
  // the evaluation into s->adapt_json (empty when none ran).
  bool after_step(int step, const std::vector<double>& compute_ms, StepStats* s);
  const std::vector<int>& proposed() const { return proposed_; }
  AdaptCarry carry() const { return {decider_.history(), decisions_}; }
  // The carry with the measured time of the move it is handed over in (the next decisions weigh it).
  static void set_move_cost(AdaptCarry* c, double ms) { c->history.move_cost_ms = ms; }
  std::string decisions_json() const;  // "[{...}, ...]"

 private:
  Grid& grid_;
  AdaptDecider decider_;
  std::vector<std::string> decisions_;
  std::vector<int> proposed_;
};

}  // namespace gt
