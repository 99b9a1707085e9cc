#pragma once
// The learning rate of every step: linear warm-up, then cosine decay to min_lr or a step decay (x factor at each
// milestone); train.lr_scaling = linear scales the peak by the global batch (lr_scaling.hpp). Runs given in epochs
// (train.epochs, warmup_epochs, milestones) are resolved into steps once, against the training split's size. A
// pure function of the step, so a restart needs no schedule state beyond the step itself.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "src/core/config.hpp"

namespace gt {

// Warm-up to lr over warmup_steps, then cosine decay to min_lr over decay_steps (0: until total_steps), then min_lr.
inline double learning_rate(int step, double lr, double min_lr, int warmup_steps, int decay_steps, int total_steps) {
  if (warmup_steps > 0 && step < warmup_steps) return lr * double(step + 1) / double(warmup_steps);
  const int decay = decay_steps > 0 ? decay_steps : std::max(1, total_steps - warmup_steps);
  const double t = std::min(1.0, double(step - warmup_steps) / double(decay));
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(3.14159265358979323846 * t));
}

class LrSchedule {
 public:
  // samples_per_epoch: the training split's size (train.epochs needs one: a synthetic source has none and is refused
  // with one line); global_batch: samples per optimizer step.
  LrSchedule(const TrainConfig& t, const ConfigChoices& c, int64_t global_batch, int64_t samples_per_epoch);
  int total_steps() const { return total_; }    // train.steps, or the epochs' steps
  int warmup_steps() const { return warmup_; }  // train.warmup_steps, or the warm-up epochs' steps
  const std::vector<int>& milestones() const { return milestones_; }  // lr_decay = step: in steps
  double at(int updates) const;                  // the rate of the update after `updates` updates

 private:
  const TrainConfig& t_;
  LrScaling scaling_;
  LrDecay decay_;
  int64_t global_batch_;
  int total_ = 0, warmup_ = 0;
  std::vector<int> milestones_;
};

}  // namespace gt
