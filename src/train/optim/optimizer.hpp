#pragma once
// The optimizer of one rank: the global gradient norm (every element of the global model counted once, over
// the model-parallel group, and under ZeRO over the DP shards too), clipping, and AdamW on the fp32 master
// parameters with the TrainState's moments, over the elements this rank updates (all of them, or its ZeRO
// shard: src/train/dp/zero.hpp).
#include "kernels/adamw_flat.hpp"
#include "kernels/sgd_flat.hpp"
#include "src/core/config.hpp"
#include "src/grid/grid.hpp"
#include "src/train/train_state.hpp"
#include "src/train/dp/zero.hpp"
#include "src/train/optim/lars.hpp"

#include <memory>

namespace gt {

class Optimizer {
 public:
  // kind (train.optimizer): AdamW, or SGD with momentum (kernels/sgd_flat.hpp), whose velocity is the AdamM buffer
  // (saved as adam_m; AdamV stays allocated and zero, so checkpoints keep one form), or LARS: that SGD with each
  // weight tensor's step scaled by its trust ratio (src/train/optim/lars.hpp).
  Optimizer(const TrainConfig& cfg, Grid& grid, TrainState& state, ZeroPlan plan = {},
            OptimizerKind kind = OptimizerKind::AdamW);

  double grad_norm();
  // The global L2 norm of the gradients as stored (multiplied by the loss scale). Collective over the
  // model-parallel group, and over the world when the state is sharded (each shard's owned squares, summed over
  // the DP group too); inf/NaN when any gradient of any rank overflowed (the DP and embedding all-reduces
  // before it spread a non-finite value to every rank, this one to the whole model-parallel group).
  // One AdamW (or SGD) step (1-based update number `step`) with learning rate lr on the stored gradients divided by
  // loss_scale and clipped to train.grad_clip by their global norm (norm / loss_scale).
  void step(int step, double lr, double norm, double loss_scale);

 private:
  const TrainConfig& cfg_;
  Grid& grid_;
  TrainState& state_;
  ZeroPlan plan_;
  OptimizerKind kind_;
  // The element ranges of the two fused passes, made once (kernels/adamw_flat.hpp): the owned tensors within this
  // rank's shard (the norm), and every tensor within it with its weight decay (AdamW).
  PieceView norm_pieces_, adam_pieces_;
  std::unique_ptr<LarsTrust> lars_;  // LARS only
};

}  // namespace gt
