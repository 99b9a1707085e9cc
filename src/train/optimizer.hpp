#pragma once
// The optimizer of one rank: the global gradient norm (every element of the global model counted once, over
// the model-parallel group), clipping, and AdamW on the fp32 master parameters with the TrainState's moments.
#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/train/train_state.hpp"

namespace gt {

class Optimizer {
 public:
  Optimizer(const TrainConfig& cfg, Grid& grid, TrainState& state);

  // The global L2 norm of the gradients. Collective over the model-parallel group.
  double grad_norm();
  // One AdamW step (1-based step number `step`) with learning rate lr on gradients clipped to
  // train.grad_clip by the given global norm.
  void step(int step, double lr, double norm);

 private:
  const TrainConfig& cfg_;
  Grid& grid_;
  TrainState& state_;
};

}  // namespace gt
