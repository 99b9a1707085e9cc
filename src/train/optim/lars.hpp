#pragma once
// LARS (You, Gitman, Ginsburg 2017, "Large Batch Training of Convolutional Networks"), train.optimizer = "lars":
// SGD with momentum whose step for each weight tensor is multiplied by its trust ratio
//   trust = eta * ||w|| / (||g|| + wd * ||w||)      (train.lars_eta; g unscaled and clipped as SGD sees it)
//   d = trust * (g + wd * w);  v = momentum * v + d;  w = w - lr * v
// so that no layer's update is large against its weights when the batch (and with it lr) grows. Tensors without
// weight decay (BatchNorm, biases) keep trust 1, as the paper and NVIDIA's LARC leave them; so does a tensor whose
// weight or gradient norm is 0 (a zero-initialised tensor would otherwise never move).
// The norms are the global tensors': each rank sums the elements it owns within its shard (the same owner rule as
// the global gradient norm), and the per-tensor sums are added over the same group (model-parallel, or the world
// under ZeRO), so every rank of a tensor uses the same ratio.
#include <vector>

#include "kernels/adamw_flat.hpp"
#include "src/grid/grid.hpp"
#include "src/train/dp/zero.hpp"
#include "src/train/train_state.hpp"

namespace gt {

class LarsTrust {
 public:
  // update: the optimizer's pieces (every tensor in the shard, with its decay), in the order the layout lists them
  LarsTrust(TrainState& state, const Grid& grid, const ZeroPlan& plan, double eta, double weight_decay);

  // The optimizer's pieces with this step's trust ratio as each piece's scale. Collective over `group`.
  // w: fp32 masters at w0; g: gradients as stored at g0, times g_scale to unscale and clip.
  PieceView pieces(const float* w, long w0, const float* g, long g0, float g_scale, Comm& group);

  // The last step's ratio per tensor of the layout (1 where none applies), for tests and the report.
  const std::vector<double>& trust() const { return trust_; }

 private:
  double eta_, wd_;
  std::vector<PieceView> owned_;      // per tensor: the elements this rank counts for its norms
  std::vector<char> adapted_;         // per tensor: has weight decay (LARS applies)
  std::vector<FlatPiece> update_;     // the optimizer's pieces (host copy, scales rewritten each step)
  Kokkos::View<FlatPiece*, mem_space> update_dev_;  // their device copy, allocated once, refilled each step
  std::vector<int> tensor_of_piece_;  // update_[k] belongs to tensor tensor_of_piece_[k]
  std::vector<double> trust_;
};

}  // namespace gt
