#include "src/train/optimizer.hpp"

#include <cmath>

#include "kernels/kernels.hpp"

namespace gt {

Optimizer::Optimizer(const TrainConfig& cfg, Grid& grid, TrainState& state)
    : cfg_(cfg), grid_(grid), state_(state) {}

double Optimizer::grad_norm() {
  double sumsq = 0;
  const float* g = state_.grads();
  for (const TensorSpec& s : state_.layout().tensors())
    if (owner(s, grid_)) sumsq += sum_squares(g + s.offset, long(s.size));
  if (grid_.mp().size() > 1) grid_.mp().allreduce(&sumsq, 1, DType::F64, ReduceOp::Sum);
  return std::sqrt(sumsq);
}

void Optimizer::step(int step, double lr, double norm, double loss_scale) {
  // Unscaling folds into the clipping multiplier (exact for the power-of-two scales the scaler uses).
  const float g_scale = static_cast<float>(clip_scale(norm / loss_scale, cfg_.grad_clip) / loss_scale);
  float* p = state_.master();
  const float* g = state_.grads();
  float* m = state_.adam_m();
  float* v = state_.adam_v();
  for (const TensorSpec& s : state_.layout().tensors())
    adamw_update(p + s.offset, g + s.offset, m + s.offset, v + s.offset, long(s.size), float(lr), float(cfg_.beta1),
                 float(cfg_.beta2), float(cfg_.eps), float(s.decay ? cfg_.weight_decay : 0.0), step, g_scale);
}

}  // namespace gt
