#pragma once
// The bad-step policy (train.nonfinite, docs/reliability.md): a step is bad when its global gradient norm or its
// loss is non-finite, beyond train.gnorm_bound / train.loss_bound, or (train.spike_zscore > 0) a spike: more than
// spike_zscore standard deviations above the mean of the last spike_window good steps (llm.c's outlier detector).
// The judges only read figures that every rank already holds identically after the step's reductions (the norm
// before the update, the loss after the step-statistics reduction), so every rank decides alike with no extra
// collective. What a bad step does:
//   stop      gt::Error at the first bad step (nothing of the bad state is saved; the last checkpoint stays)
//   skip      no update (the step counts as skipped, like an fp16 overflow); Error after
//             train.nonfinite_max_consecutive bad steps in a row
//   rollback  reload the last valid checkpoint and go on with the data that follow the bad step (the batches
//             between the checkpoint and the bad step are not replayed); Error after
//             train.nonfinite_max_consecutive rollbacks without a good checkpoint in between
// The fp16 loss scaler's overflow skips (src/train/extensions/loss_scaler.*) are not bad steps: an overflow there is the
// expected signal that backs the scale off; only its gradient-norm verdict passes here once the scale is clean.
#include <deque>
#include <string>

#include "src/core/config.hpp"

namespace gt {

enum class BadStepAction { None, Skip, Rollback };

struct BadStepCounts {
  int bad = 0, skipped = 0, rollbacks = 0, spikes = 0;
};

class StepGuard {
 public:
  // policy: train.nonfinite, typed (Config::choices())
  StepGuard(const TrainConfig& t, NonfinitePolicy policy);

  // Before the update: the reason the (unscaled) global gradient norm makes step `step` bad, or "".
  std::string judge_grad_norm(double norm);
  // After the step statistics: the reason the loss makes the step bad, or "".
  std::string judge_loss(double loss);
  // The step's outcome (reason "" = good). A bad step returns what to do (Skip: no update, or Rollback) or throws
  // gt::Error (policy stop, or too many bad steps in a row). A good step feeds the spike windows. updated: the
  // step's update was applied already (a step bad by its loss alone: the loss is known only after the update).
  BadStepAction settle(int step, const std::string& reason, double norm, double loss, bool updated);
  // A checkpoint was written: a later rollback goes there and its count of attempts starts again.
  void on_checkpoint() { rollbacks_since_checkpoint_ = 0; }

  const BadStepCounts& counts() const { return counts_; }
  const char* policy() const { return enum_name(policy_); }

 private:
  struct Window {  // the last n values of good steps: running mean and deviation
    std::deque<double> v;
    std::string spike(double x, double z, size_t n, const char* what) const;
    void push(double x, size_t n);
  };

  NonfinitePolicy policy_;
  int max_consecutive_;
  double loss_bound_, gnorm_bound_, spike_z_;
  size_t spike_window_;
  Window losses_, norms_;
  int consecutive_ = 0, rollbacks_since_checkpoint_ = 0;
  BadStepCounts counts_;
};

}  // namespace gt
