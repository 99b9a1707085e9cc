#pragma once
// SGD with momentum over the flat state, in the pieces of adamw_flat.hpp (one kernel for the whole model), as
// PyTorch's torch.optim.SGD computes it (dampening 0, not Nesterov), the ResNet recipe:
//   d = g * g_scale + wd * w      (coupled weight decay: the tensor's wd, 0 for BatchNorm and biases)
//   v = momentum * v + d          (v starts at 0, so the first step's v is d, as PyTorch's first buffer)
//   w = w - lr * v
// g_scale unscales and clips (Optimizer::step). LARS (src/train/optim/lars.hpp) multiplies d by its tensor's trust ratio
// (the piece's scale, 1.0f otherwise: then g_scale * 1 and wd * 1 are exact, the same bits as plain SGD). Shapes:
// pieces (P) over the flat layout; element i is p[i - p0], g[i - g0], v[i - v0].
#include "kernels/adamw_flat.hpp"

namespace gt {

namespace detail {
template <class T>
KOKKOS_INLINE_FUNCTION void sgd_element(T* p, const T* g, T* v, long i, T lr, T momentum, T wd, T g_scale) {
  const T d = g[i] * g_scale + wd * p[i];
  v[i] = momentum * v[i] + d;
  p[i] = p[i] - lr * v[i];
}
}  // namespace detail

template <class T>
void sgd_pieces(T* p, long p0, const T* g, long g0, T* v, long v0, const PieceView& pieces, no_deduce_t<T> lr,
                no_deduce_t<T> momentum, no_deduce_t<T> g_scale) {
  const long P = static_cast<long>(pieces.extent(0));
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("sgd_pieces", RowTeams(P, Kokkos::AUTO), KOKKOS_LAMBDA(const RowTeam& tm) {
      const FlatPiece pc = pieces(tm.league_rank());
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, pc.begin, pc.end), [&](long i) {
        detail::sgd_element(p + (i - p0), g + (i - g0), v + (i - v0), 0, lr, momentum, T(pc.wd * pc.scale),
                            g_scale * T(pc.scale));
      });
    });
    return;
  }
  Kokkos::parallel_for("sgd_pieces", range(0, P), KOKKOS_LAMBDA(long k) {
    const FlatPiece pc = pieces(k);
    T* pp = p + (pc.begin - p0);
    const T* gp = g + (pc.begin - g0);
    T* vp = v + (pc.begin - v0);
    const T wd = T(pc.wd * pc.scale), gs = g_scale * T(pc.scale);
    for (long i = 0; i < pc.end - pc.begin; ++i) detail::sgd_element(pp, gp, vp, i, lr, momentum, wd, gs);
  });
}

}  // namespace gt
