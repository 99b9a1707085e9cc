#include "src/train/optim/lr_schedule.hpp"

#include <string>

#include "src/core/error.hpp"
#include "src/train/optim/lr_scaling.hpp"

namespace gt {

LrSchedule::LrSchedule(const TrainConfig& t, const ConfigChoices& c, int64_t global_batch, int64_t samples_per_epoch)
    : t_(t), scaling_(c.lr_scaling), decay_(c.lr_decay), global_batch_(global_batch), total_(t.steps),
      warmup_(t.warmup_steps) {
  const bool in_epochs = t.epochs > 0;
  // A source without epochs says 2^40 samples (data_source.hpp); an epoch of it is no length a run can have.
  if (in_epochs && samples_per_epoch >= (int64_t(1) << 40))
    throw Error("train.epochs needs a dataset of fixed size (data.source = hdf5 or an image file); this source "
                "has no epochs: give train.steps instead");
  const double steps_per_epoch = double(samples_per_epoch) / double(global_batch);
  if (in_epochs) {
    const double steps = std::ceil(t.epochs * steps_per_epoch);
    if (steps > 1e9) throw Error("train.epochs = " + std::to_string(t.epochs) + " is more than 1e9 steps");
    total_ = std::max(1, int(steps));
    warmup_ = int(std::lround(t.warmup_epochs * steps_per_epoch));
  }
  for (double m : t.lr_milestone_points())
    milestones_.push_back(in_epochs ? int(std::lround(m * steps_per_epoch)) : int(m));
}

double LrSchedule::at(int updates) const {
  double peak = t_.lr;
  if (scaling_ == LrScaling::Linear) {  // warm-up from lr to the scaled peak (Goyal et al.'s gradual warm-up)
    if (updates < warmup_)
      return scaled_learning_rate(scaling_, t_.lr, global_batch_, t_.lr_reference_batch, warmup_, updates);
    peak = scaled_learning_rate(scaling_, t_.lr, global_batch_, t_.lr_reference_batch, warmup_, warmup_);
  }
  if (decay_ == LrDecay::Cosine) return learning_rate(updates, peak, t_.min_lr, warmup_, t_.decay_steps, total_);
  if (updates < warmup_) return peak * double(updates + 1) / double(warmup_);  // the cosine path's warm-up
  const long passed = std::upper_bound(milestones_.begin(), milestones_.end(), updates) - milestones_.begin();
  return peak * std::pow(t_.lr_decay_factor, double(passed));
}

}  // namespace gt
