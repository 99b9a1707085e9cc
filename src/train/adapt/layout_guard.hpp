#pragma once
// parallel.adapt = full (issue 25, docs/adaptive.md, "The guard"): when the layout decider must not switch. The
// calibrated planner models identical devices, so a switch predicted while one rank or one stage is measurably
// slower than its peers is a switch on the wrong evidence (the benchmark of `full`: pp 4 -> dp 4 on a predicted
// 1.19x, measured 1.06, switched back, below no adaptation); that case belongs to the rebalancers. Two signs, each
// by its existing definition (no second one here):
//   - the straggler detector (straggler.hpp) flags a rank at the evaluation's step (ranks compared within a stage);
//   - the stages' devices are unequal by the rebalancing decider's figure and bar (AdaptDecider::balance_on,
//     imbalanced: the gain a partition balanced for the measured speeds predicts, >= 1 + parallel.rebalance_gain)
//     on each rank's median compute over the evaluation's window, taken on the partition for equal devices (the
//     cost model's) rather than the one running: under parallel.adapt = full the live rebalancer may already have
//     balanced the stage times around a slow device, and the devices are no more equal for that. At pp = 4 every
//     stage is one rank: a slow stage has no peers to be a straggler against and shows only here.
// A third reason comes from outside (hold's `also`): data-parallel shares the rebalancer made uneven.
// Pure (no MPI, no clock): fed every step the all-gathered compute array (the same on every rank), so every rank
// holds the same reason; the decision itself is agreed by the layout adapter's broadcast as before.
#include <memory>
#include <string>
#include <vector>

#include "src/train/adapt/adapt_decider.hpp"

namespace gt {

class LayoutGuard {
 public:
  // window: the layout decider's (its evaluation's window). balance: the rebalancing decider on this run's
  // partition, or null where stages are not compared (pp = 1: one stage; the interleaved schedule). reference: the
  // partition for equal devices (first block per stage, + n_layer), which balance's figure is taken on.
  LayoutGuard(int window, std::unique_ptr<AdaptDecider> balance, std::vector<int> reference = {});
  // After every step: every world rank's compute ms. The first step after the start or a switch is warm-up, not
  // counted, as in the layout decider, so both windows hold the same steps.
  void observe(const std::vector<double>& compute_ms);
  // At an evaluation, the flagged ranks at its step: why no switch may be made now, "" when nothing is imbalanced.
  // "straggler: rank 1" / "stragglers: ranks 1, 3"; "imbalance: stage 1 is 1.90x the mean stage time (...)"; both
  // joined by "; " when both hold; `also` (another reason, "" for none) after them.
  std::string hold(const std::vector<int>& stragglers, const std::string& also = "") const;

 private:
  std::string stage_imbalance() const;
  int window_;
  std::unique_ptr<AdaptDecider> balance_;
  std::vector<int> reference_;
  bool warm_ = false;
  std::vector<std::vector<double>> recent_;  // [step in window][world rank] compute ms
};

}  // namespace gt
