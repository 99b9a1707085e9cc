#pragma once
// parallel.adapt = rebalance (issue 25, docs/adaptive.md): when to move pipeline blocks between stages, and
// where to. A pure class (no MPI, no clock): fed once per step the compute milliseconds of every rank (the array
// StragglerMonitor all-gathers, the same on every rank), it returns the same decision on every rank.
//
// The cost model, refreshed from measurement each step: the blocks' relative costs and the first and last
// stages' extra work come from plan::modelled_unit_costs (the blocks are identical in shape, so what one block
// costs against another is the FLOP model's; a measured difference between equal blocks is noise), and each
// stage's speed from what it measured: scale[s] = its compute over the modelled cost of the units it holds (its
// slowest rank's, as its TP and DP peers wait for that one). A stage on a device k times slower, or with k times
// the work the model predicts, measures a k times larger scale; the proposal is plan::partition_by_speed, the
// predicted time of stage s on a partition scale[s] x its modelled cost.
//
// Hysteresis (so the partition does not oscillate on noise):
//   - the first step after the start and after every move is not counted (warm-up on the new partition);
//   - a step counts as imbalanced when its own measurement predicts a gain >= 1 + gain_threshold;
//   - the decider evaluates only when at least k of the last `window` counted steps were imbalanced and
//     `interval` steps have passed since the last evaluation that moved or kept (an evaluation that keeps the
//     partition also waits `interval` steps, so a borderline case is not logged every step);
//   - the evaluation uses each rank's median over the window (one disturbed step does not decide), and moves
//     when the predicted gain is >= 1 + t and the proposal differs from the current partition, with t =
//     max(gain_threshold, noise_factor x the window's spread): the relative interquartile range over the window
//     of each step's slowest stage time (adapt_noise.hpp, the rule the data-parallel shares' decider has): a gain
//     within the bottleneck's own step-to-step noise is not believed;
//   - a move must pay for itself: the predicted saving (slowest stage now - predicted, per step) times the steps
//     left must exceed twice the move's cost (the last move's measured time; before any, 4 x the slowest stage's
//     time, about what a move took here: docs/adaptive.md). Twice, for the prediction's error. Late in a run,
//     and for small gains that noise on a shared machine produces, the partition stays;
//   - a partition this run has measured within the last 4 x interval steps is predicted by that measurement
//     instead of the model (measurement beats model: a stage whose extra work the model misjudges cannot make
//     the decider move back and forth between two partitions); older measurements expire, so a rank that
//     recovers lets the blocks move back.
#include <map>
#include <string>
#include <vector>

#include "src/plan/rebalance.hpp"

namespace gt {

struct AdaptSettings {
  double gain_threshold = 0.1;  // parallel.rebalance_gain
  int window = 5, k = 4;        // as the straggler detector (straggler.hpp)
  int interval = 10;            // parallel.adapt_interval: steps between two evaluations
  int total_steps = 0;          // train.steps (0: unknown, the move's cost is not weighed)
  double noise_factor = 2.0;    // the measured-noise rule (adapt_noise.hpp); 0: the configured gain alone
};

struct AdaptDecision {
  bool evaluated = false;  // an evaluation ran at this step (then logged, whether it moves or keeps)
  bool move = false;
  std::vector<int> current, proposed;  // first block per stage (+ n_layer)
  std::vector<double> stage_ms;        // measured: window median of each stage's slowest rank
  std::vector<double> predicted_ms;    // per stage on `proposed`
  double gain = 1;                     // slowest measured stage / slowest predicted stage
  double needed = 1;                   // the gain a move needs here: 1 + max(gain_threshold, noise_factor x noise)
  double noise = 0;                    // the window's spread ((p75 - p25) / median of each step's slowest stage)
  bool predicted_from_measurement = false;  // `proposed` was measured earlier (see the header)
  double saved_ms = 0;  // predicted saving over the steps left (0 when total_steps is unknown)
  double cost_ms = 0;   // the move's expected cost (measured or estimated)
};

// What a decider carries from one partition to the next (the trainer is rebuilt on each move).
struct AdaptHistory {
  int last_evaluation = -1000000;  // step of the last evaluation
  double move_cost_ms = -1;        // the last move's measured time (-1: none yet)
  // partition (stage_blocks text) -> (step measured, slowest stage ms)
  std::map<std::string, std::pair<int, double>> measured;
};

class AdaptDecider {
 public:
  // stage_of_rank: the pipeline stage of every world rank; partition: the current first block per stage.
  AdaptDecider(AdaptSettings s, std::vector<int> stage_of_rank, plan::UnitCosts costs, std::vector<int> partition,
               AdaptHistory history = {});

  // One completed step (1-based number `step`): every rank's compute milliseconds. Throws gt::Error on an array
  // of the wrong size or a non-finite entry.
  AdaptDecision observe(int step, const std::vector<double>& compute_ms);

  const AdaptHistory& history() const { return history_; }
  const std::vector<int>& partition() const { return partition_; }  // the one running

  // The figure and the bar a step is judged imbalanced by (the votes above): the proposal for these per-rank
  // compute times (gain: slowest measured stage over slowest predicted on the partition balanced for the measured
  // speeds) and whether its gain is >= 1 + gain_threshold. Also the layout decider's guard (layout_guard.hpp):
  // one definition of a stage imbalance for both.
  AdaptDecision balance(const std::vector<double>& rank_ms) const { return propose(rank_ms); }
  // The same figure for the stage speeds these times measure on the current partition, but as if the stages held
  // `reference` (the partition for equal devices): current = reference, stage_ms the times predicted there. Once
  // the rebalancer has balanced the stage times around a slow device, balance() sees nothing while this still
  // sees the unequal speeds (the layout guard's question is whether the devices are equal, not the times).
  AdaptDecision balance_on(const std::vector<double>& rank_ms, const std::vector<int>& reference) const;
  bool imbalanced(const AdaptDecision& d) const { return d.gain >= imbalance_bar(); }
  double imbalance_bar() const { return 1.0 + s_.gain_threshold; }

 private:
  std::vector<double> stage_scales(const std::vector<double>& rank_ms, std::vector<double>* stage_ms) const;
  AdaptDecision propose(const std::vector<double>& rank_ms) const;
  double window_spread() const;

  AdaptSettings s_;
  std::vector<int> stage_of_rank_;
  plan::UnitCosts costs_;
  std::vector<int> partition_;
  AdaptHistory history_;
  int counted_ = 0;                          // steps observed on this partition
  std::vector<std::vector<double>> recent_;  // the last `window` counted steps' arrays
  std::vector<bool> imbalanced_;             // and whether each predicted a gain
};

// "3,1,2,2": the blocks per stage of a partition (parallel.stage_blocks).
std::string stage_blocks_text(const std::vector<int>& begin);

}  // namespace gt
