#pragma once
// The linear scaling rule with gradual warmup (Goyal et al. 2017), for `train.lr_scaling = none | linear` (issue
// 21). With k = global batch / reference batch the target rate
// is k x base; warmup starts at the unscaled base (not at zero: the paper's "gradual warmup" from 0.1) and rises
// linearly to the target over warmup_steps, after which the target holds and the caller's decay schedule (cosine,
// step) multiplies it. A pure function of the step, so a resumed run needs no state.
#include <algorithm>

#include "src/core/enums.hpp"
#include "src/core/error.hpp"

namespace gt {

inline double scaled_learning_rate(LrScaling mode, double base_lr, long global_batch, long reference_batch,
                                   long warmup_steps, long step) {
  if (mode == LrScaling::None) return base_lr;
  if (global_batch <= 0 || reference_batch <= 0)
    throw Error("train.lr_scaling = linear needs a positive global batch and reference batch");
  const double target = base_lr * double(global_batch) / double(reference_batch);
  if (warmup_steps <= 0 || step >= warmup_steps) return target;
  return base_lr + (target - base_lr) * double(step) / double(warmup_steps);
}

}  // namespace gt
