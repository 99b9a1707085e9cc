#pragma once
// Figures of one training step: what each rank measured locally (StepTimes), and what the run reports after
// one reduction over the world (StepStats: means over ranks, the slowest rank, the loss).
#include <cmath>
#include <string>

#include "src/comm/comm.hpp"
#include "src/train/adapt/straggler.hpp"

namespace gt {

// One rank's measurements of one step, in milliseconds unless named otherwise.
struct StepTimes {
  double loss_sum = 0;      // summed token losses (nonzero only on the rank that owns the loss)
  bool stop_requested = false;
  double step_ms = 0, fwd_ms = 0, bwd_ms = 0, opt_ms = 0, data_ms = 0;
  double comm_tp_ms = 0, comm_pp_ms = 0, comm_dp_ms = 0, comm_other_ms = 0;  // exposed (blocked) time
  double energy_j = NAN;  // this rank's share of the joules its device used in the step (NaN: no counter)
  // A rank's compute time is its step time less the time it was blocked in communication.
  double compute_ms() const { return step_ms - (comm_tp_ms + comm_pp_ms + comm_dp_ms + comm_other_ms); }
};

struct StepStats {
  double loss = 0, lr = 0, grad_norm = 0;
  double ms = 0, ms_max = 0;                          // this step: mean over ranks and slowest rank
  double fwd_ms = 0, bwd_ms = 0, opt_ms = 0, data_ms = 0;  // means over ranks
  double comm_tp_ms = 0, comm_pp_ms = 0, comm_dp_ms = 0, comm_other_ms = 0;  // exposed, means over ranks
  // Stragglers: the slowest-computing rank waits least: what it still waits is the cost of communication
  // itself (transfer, reduction), while the others' extra waiting is load imbalance (a slower core, a slower
  // stage).
  double compute_ms = 0, compute_ms_max = 0;  // mean over ranks and slowest rank
  double val_loss = -1;
  double val_top1 = -1;  // a classifier's evaluation accuracy (top-1 hits / images); -1: none
  double energy_j = -1;         // joules of the step over all ranks (src/energy; -1: some rank has no counter)
  double loss_scale = 1;        // the scale this step ran with
  bool skipped = false;         // overflow: no update on any rank
  std::string bad;              // why the step was bad (step_guard.hpp), "" when it was good
  int rolled_back_to = -1;      // the bad step rolled the run back to this checkpoint step
  bool stop_requested = false;  // some rank was asked to stop (signal or stop file)
  // The DP gradient reduction of this rank (GradBuckets::wire_stats): bytes sent by the transport formulas
  // (-1: no DP reduction), a dense fp32 all-reduce's bytes over those, the error-feedback residual's norm
  // (-1: no residual). Not reduced over ranks.
  double wire_bytes = -1, compression_ratio = 0, residual_norm = -1;
  // parallel.adapt = monitor: the straggler detector's verdict after this step (the same on every rank).
  bool straggler_monitored = false;
  StragglerStep straggler;
  // parallel.adapt = rebalance: the evaluation of the pipeline partition at this step (a JSON object,
  // pipeline_adapter.hpp); empty when none ran.
  std::string adapt_json;

  double comm_ms() const { return comm_tp_ms + comm_pp_ms + comm_dp_ms + comm_other_ms; }
};

// Collective over `world`: two small all-reduces (sums for the loss, the stop flag and the means; maxima
// for the slowest rank). loss = summed losses / tokens_per_step.
StepStats reduce_step_stats(const StepTimes& local, Comm& world, double tokens_per_step);

// Means of the timing fields over history[first, end) (the loss fields are left 0).
StepStats mean_step_stats(const StepStats* begin, const StepStats* end);

}  // namespace gt
