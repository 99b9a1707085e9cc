#pragma once
// Dynamic loss scaling with Megatron's and DeepSpeed's semantics (docs/precision.md):
//   the loss is multiplied by scale() before backward, the gradients divided by it before the optimizer;
//   an overflow (inf/NaN in any gradient on any rank) skips the step on every rank, resets the clean-step
//   count and uses up one unit of hysteresis; once the hysteresis is used up, every overflow multiplies the
//   scale by `backoff`; `window` clean steps in a row multiply it by `growth` and refill the hysteresis (the
//   only refill: overflows that are not consecutive use it up too). A scale that would have to drop below
//   `min` means the run produces non-finite gradients at any scale: update() throws instead of training on.
// Disabled (train.loss_scale = none): scale 1; an overflow is an error at once (nothing to back off).
// A TrainExtension (extension.hpp) with no buffers: its scale and counters travel as checkpoint meta entries
// (loss_scale, loss_scale.clean_steps, loss_scale.hysteresis_left; only when it is on) and it writes its own
// summary.json fields. The Trainer still asks it for the scale and the overflow decision (the step's logic).
#include <string>

#include "src/core/config.hpp"
#include "src/train/extensions/extension.hpp"

namespace gt {

struct LossScalerState {
  double scale = 1;
  int clean_steps = 0;     // consecutive steps without overflow since the last growth or overflow
  int hysteresis_left = 0;
};

class LossScaler final : public TrainExtension {
 public:
  explicit LossScaler(const TrainConfig& t, bool dynamic);

  bool dynamic() const { return dynamic_; }
  double scale() const { return s_.scale; }
  const LossScalerState& state() const { return s_; }
  void restore(const LossScalerState& s) { s_ = s; }

  // Records the outcome of step `step`: returns true when it overflowed (the step must be skipped). Throws
  // gt::Error when the scale is stuck at the minimum (or scaling is disabled) and gradients still overflow.
  bool update(bool overflow, int step);

  std::vector<Buffer> buffers() const override { return {}; }
  std::vector<TensorShard> datasets(ExtensionIo&) override { return {}; }
  void save_meta(CheckpointMeta& meta) const override;
  // A checkpoint of a run without the scaler (fp32, bf16) leaves it at its initial state.
  void load_meta(const CheckpointMeta& meta) override;
  void report(JsonObject& summary) const override;  // loss_scaling, loss_scale (the scale at the end)

 private:
  bool dynamic_;
  LossScalerState initial_;
  double min_, growth_, backoff_;
  int window_, hysteresis_;
  LossScalerState s_;
};

}  // namespace gt
