#include "src/train/extensions/loss_scaler.hpp"

#include "src/core/error.hpp"

namespace gt {

LossScaler::LossScaler(const TrainConfig& t, bool dynamic)
    : dynamic_(dynamic),
      min_(t.loss_scale_min),
      growth_(t.loss_scale_growth),
      backoff_(t.loss_scale_backoff),
      window_(t.loss_scale_window),
      hysteresis_(t.loss_scale_hysteresis) {
  s_.scale = dynamic ? t.loss_scale_initial : 1.0;
  s_.hysteresis_left = hysteresis_;
  initial_ = s_;
}

bool LossScaler::update(bool overflow, int step) {
  if (!overflow) {
    if (dynamic_ && ++s_.clean_steps == window_) {
      s_.clean_steps = 0;
      s_.hysteresis_left = hysteresis_;
      s_.scale *= growth_;
    }
    return false;
  }
  if (!dynamic_)
    throw Error("non-finite gradients (inf/NaN) at step " + std::to_string(step) +
                " with loss scaling off (train.loss_scale = none): the run diverged");
  s_.clean_steps = 0;
  if (--s_.hysteresis_left > 0) return true;
  s_.hysteresis_left = 0;
  if (s_.scale <= min_)
    throw Error("loss scale stuck at the minimum (train.loss_scale_min = " + std::to_string(min_) +
                "): gradients still overflow at step " + std::to_string(step) +
                "; the run would train on garbage (fp16 range exceeded: try bf16, a lower learning rate, or check "
                "the data)");
  s_.scale = s_.scale * backoff_ < min_ ? min_ : s_.scale * backoff_;
  return true;
}

void LossScaler::save_meta(CheckpointMeta& meta) const {
  if (!dynamic_) return;
  meta.reals["loss_scale"] = s_.scale;
  meta.ints["loss_scale.clean_steps"] = s_.clean_steps;
  meta.ints["loss_scale.hysteresis_left"] = s_.hysteresis_left;
}

void LossScaler::load_meta(const CheckpointMeta& meta) {
  if (!dynamic_) return;
  const auto scale = meta.reals.find("loss_scale");
  if (scale == meta.reals.end()) {
    s_ = initial_;
    return;
  }
  // The counters go with the scale: a checkpoint without them does not verify (src/io/checkpoint.hpp).
  s_.scale = scale->second;
  s_.clean_steps = static_cast<int>(meta.ints.at("loss_scale.clean_steps"));
  s_.hysteresis_left = static_cast<int>(meta.ints.at("loss_scale.hysteresis_left"));
}

void LossScaler::report(JsonObject& summary) const {
  summary.str("loss_scaling", dynamic_ ? "dynamic" : "none").num("loss_scale", s_.scale);
}

}  // namespace gt
