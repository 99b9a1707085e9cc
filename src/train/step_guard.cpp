#include "src/train/step_guard.hpp"

#include <cmath>
#include <cstdio>

#include "src/core/error.hpp"

namespace gt {

namespace {
std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}
}  // namespace

StepGuard::StepGuard(const TrainConfig& t, NonfinitePolicy policy)
    : policy_(policy),
      max_consecutive_(t.nonfinite_max_consecutive),
      loss_bound_(t.loss_bound),
      gnorm_bound_(t.gnorm_bound),
      spike_z_(t.spike_zscore),
      spike_window_(static_cast<size_t>(t.spike_window)) {}

std::string StepGuard::Window::spike(double x, double z, size_t n, const char* what) const {
  // Judged only over a full window: a short history gives a deviation too noisy to call anything a spike.
  if (z <= 0 || v.size() < n) return "";
  double mean = 0, var = 0;
  for (double y : v) mean += y;
  mean /= double(v.size());
  for (double y : v) var += (y - mean) * (y - mean);
  const double sd = std::sqrt(var / double(v.size()));
  if (!(sd > 0) || (x - mean) / sd <= z) return "";
  return std::string(what) + " spike: " + num(x) + " is " + num((x - mean) / sd) + " standard deviations above the mean " +
         num(mean) + " of the last " + std::to_string(n) + " steps (train.spike_zscore = " + num(z) + ")";
}

void StepGuard::Window::push(double x, size_t n) {
  if (n == 0) return;
  v.push_back(x);
  if (v.size() > n) v.pop_front();
}

std::string StepGuard::judge_grad_norm(double norm) {
  if (!std::isfinite(norm)) return "non-finite gradient norm (" + num(norm) + ")";
  if (gnorm_bound_ > 0 && norm > gnorm_bound_)
    return "gradient norm " + num(norm) + " beyond train.gnorm_bound = " + num(gnorm_bound_);
  return norms_.spike(norm, spike_z_, spike_window_, "gradient norm");
}

std::string StepGuard::judge_loss(double loss) {
  if (!std::isfinite(loss)) return "non-finite loss (" + num(loss) + ")";
  if (loss_bound_ > 0 && loss > loss_bound_) return "loss " + num(loss) + " beyond train.loss_bound = " + num(loss_bound_);
  return losses_.spike(loss, spike_z_, spike_window_, "loss");
}

BadStepAction StepGuard::settle(int step, const std::string& reason, double norm, double loss, bool updated) {
  if (reason.empty()) {
    consecutive_ = 0;
    losses_.push(loss, spike_window_);
    norms_.push(norm, spike_window_);
    return BadStepAction::None;
  }
  counts_.bad += 1;
  if (reason.find("spike") != std::string::npos) counts_.spikes += 1;
  const std::string what = "step " + std::to_string(step) + ": " + reason;
  if (policy_ == NonfinitePolicy::Stop)
    throw Error(what + " (train.nonfinite = stop; the last checkpoint is kept: resume from it with a lower train.lr, "
                       "or set train.nonfinite = skip or rollback)");
  if (policy_ == NonfinitePolicy::Skip) {
    if (++consecutive_ >= max_consecutive_)
      throw Error(what + "; " + std::to_string(consecutive_) + " bad steps in a row (train.nonfinite_max_consecutive = " +
                  std::to_string(max_consecutive_) + "): the run diverged, stopping (the last checkpoint is kept)");
    counts_.skipped += updated ? 0 : 1;
    return BadStepAction::Skip;
  }
  if (++rollbacks_since_checkpoint_ > max_consecutive_)
    throw Error(what + "; rolled back " + std::to_string(max_consecutive_) +
                " times without reaching a new checkpoint (train.nonfinite_max_consecutive): the run diverged, stopping");
  counts_.rollbacks += 1;
  return BadStepAction::Rollback;
}

}  // namespace gt
