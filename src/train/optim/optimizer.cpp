#include "src/train/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include <vector>

#include "kernels/kernels.hpp"

namespace gt {

Optimizer::Optimizer(const TrainConfig& cfg, Grid& grid, TrainState& state, ZeroPlan plan, OptimizerKind kind)
    : cfg_(cfg), grid_(grid), state_(state), plan_(plan), kind_(kind) {
  if (!plan_.sharded()) plan_.shard = Range{0, state_.layout().size()};
  std::vector<FlatPiece> norm, adam;
  for (const TensorSpec& s : state_.layout().tensors()) {
    const Range r = intersect(s, plan_.shard);
    if (r.size() == 0) continue;
    const Range own = owned_range(s);  // a replicated key/value head counts once
    if (owner(s, grid_) && std::min(r.end, own.end) > r.begin)
      append_pieces(&norm, long(r.begin), long(std::min(r.end, own.end)), 0.0f);
    append_pieces(&adam, long(r.begin), long(r.end), float(s.decay ? cfg_.weight_decay : 0.0));
  }
  norm_pieces_ = to_device(norm);
  adam_pieces_ = to_device(adam);
  if (kind_ == OptimizerKind::LARS)
    lars_ = std::make_unique<LarsTrust>(state_, grid_, plan_, cfg_.lars_eta, cfg_.weight_decay);
}

double Optimizer::grad_norm() {
  // Each element of the global model once: the owner rule picks one copy within the model-parallel group, and
  // under ZeRO the shards split the rest over the DP group, so the shard sums add up over the world. A norm of
  // a shard alone would clip every rank by a different, too small norm (the FSDP paper's warning).
  // One pass over every owned range (one kernel, one host sync). The host blocks are those of a per-tensor
  // sum_squares; the block sums of all tensors are added in one sequence instead of tensor by tensor (a change of
  // association in double, ~1e-16 relative: test_optimizer_fused bounds it against the per-tensor sum).
  const StateBuffer& g = reduced_grads(state_);
  double sumsq = sum_squares_pieces(static_cast<const float*>(g.data), long(g.extent.begin), norm_pieces_);
  Comm& group = plan_.sharded() ? grid_.world() : grid_.mp();
  if (group.size() > 1) group.allreduce(&sumsq, 1, DType::F64, ReduceOp::Sum);
  return std::sqrt(sumsq);
}

void Optimizer::step(int step, double lr, double norm, double loss_scale) {
  // Unscaling folds into the clipping multiplier (exact for the power-of-two scales the scaler uses).
  const float g_scale = static_cast<float>(clip_scale(norm / loss_scale, cfg_.grad_clip) / loss_scale);
  // Each buffer holds its extent of the flat elements (all, or the shard): element i is at i - extent.begin.
  float* p = state_.master();  // fp32 masters (sharded under ZeRO when they are a buffer of their own)
  const size_t po = state_.buffer(state_.master_id()).extent.begin;
  const StateBuffer& gb = reduced_grads(state_);
  const float* g = static_cast<const float*>(gb.data);
  const size_t go = gb.extent.begin, mo = state_.buffer(Buffer::AdamM).extent.begin;
  // One kernel over every tensor's range in the shard, each with its weight decay: the same elementwise
  // arithmetic as one adamw_update per tensor, so the same bits.
  if (kind_ == OptimizerKind::SGD)
    sgd_pieces(p, long(po), g, long(go), state_.adam_m(), long(mo), adam_pieces_, float(lr), float(cfg_.momentum),
               g_scale);
  else if (kind_ == OptimizerKind::LARS)  // the norms over the same group as grad_norm's
    sgd_pieces(p, long(po), g, long(go), state_.adam_m(), long(mo),
               lars_->pieces(p, long(po), g, long(go), g_scale, plan_.sharded() ? grid_.world() : grid_.mp()),
               float(lr), float(cfg_.momentum), g_scale);
  else
    adamw_pieces(p, long(po), g, long(go), state_.adam_m(), state_.adam_v(), long(mo), adam_pieces_, float(lr),
               float(cfg_.beta1), float(cfg_.beta2), float(cfg_.eps), step, g_scale);
  // A 16-bit working copy is rounded from the updated masters by HalfMasters::after_update (half_masters.hpp).
}

}  // namespace gt
