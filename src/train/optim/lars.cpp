#include "src/train/optim/lars.hpp"

#include <algorithm>
#include <cmath>

namespace gt {

LarsTrust::LarsTrust(TrainState& state, const Grid& grid, const ZeroPlan& plan, double eta, double weight_decay)
    : eta_(eta), wd_(weight_decay) {
  const Range shard = plan.sharded() ? plan.shard : Range{0, state.layout().size()};
  const std::vector<TensorSpec>& tensors = state.layout().tensors();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorSpec& s = tensors[t];
    adapted_.push_back(s.decay && weight_decay > 0 ? 1 : 0);
    const Range r = intersect(s, shard);
    const Range own = owned_range(s);
    std::vector<FlatPiece> mine;
    if (r.size() > 0 && owner(s, grid) && std::min(r.end, own.end) > r.begin)
      append_pieces(&mine, long(r.begin), long(std::min(r.end, own.end)), 0.0f);
    owned_.push_back(to_device(mine));
    if (r.size() == 0) continue;
    append_pieces(&update_, long(r.begin), long(r.end), float(s.decay ? weight_decay : 0.0));
    tensor_of_piece_.resize(update_.size(), int(t));
  }
  trust_.assign(tensors.size(), 1.0);
  update_dev_ = Kokkos::View<FlatPiece*, mem_space>("lars_pieces", update_.size());
}

PieceView LarsTrust::pieces(const float* w, long w0, const float* g, long g0, float g_scale, Comm& group) {
  const size_t T = owned_.size();
  std::vector<double> sums(2 * T, 0.0);  // ||w||^2 of each tensor, then ||g||^2 (as stored)
  for (size_t t = 0; t < T; ++t) {
    if (!adapted_[t] || owned_[t].extent(0) == 0) continue;
    sums[t] = sum_squares_pieces(w, w0, owned_[t]);
    sums[T + t] = sum_squares_pieces(g, g0, owned_[t]);
  }
  if (group.size() > 1) group.allreduce(sums.data(), sums.size(), DType::F64, ReduceOp::Sum);
  for (size_t t = 0; t < T; ++t) {
    const double wn = std::sqrt(sums[t]), gn = std::sqrt(sums[T + t]) * double(g_scale);
    trust_[t] = adapted_[t] && wn > 0 && gn > 0 ? eta_ * wn / (gn + wd_ * wn) : 1.0;
  }
  for (size_t k = 0; k < update_.size(); ++k) update_[k].scale = float(trust_[size_t(tensor_of_piece_[k])]);
  // into the view allocated once (to_device would allocate one per step on the optimizer's path)
  Kokkos::deep_copy(update_dev_, Kokkos::View<const FlatPiece*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                     update_.data(), update_.size()));
  return update_dev_;
}

}  // namespace gt
