#pragma once
// Learning rate at a 0-based step: linear warm-up to lr over warmup_steps, then cosine decay to min_lr over
// decay_steps (0: until total_steps), then min_lr. A pure function of the step, so a restart needs no
// schedule state beyond the step itself.
#include <algorithm>
#include <cmath>

namespace gt {

inline double learning_rate(int step, double lr, double min_lr, int warmup_steps, int decay_steps, int total_steps) {
  if (warmup_steps > 0 && step < warmup_steps) return lr * double(step + 1) / double(warmup_steps);
  const int decay = decay_steps > 0 ? decay_steps : std::max(1, total_steps - warmup_steps);
  const double t = std::min(1.0, double(step - warmup_steps) / double(decay));
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(3.14159265358979323846 * t));
}

}  // namespace gt
