#pragma once
// The optimizer's two passes over the flat state buffers, one kernel each for the whole model (a GPU launches two
// kernels and syncs the host once per step, instead of one norm, one sync and one AdamW per tensor):
//   sum_squares_pieces: sum of g^2 over a set of element ranges (the tensors this rank owns), in double;
//   adamw_pieces:       AdamW over a set of element ranges, each with its tensor's weight decay.
// A piece is at most kSumBlock elements of one tensor, cut from the start of that tensor's range, so the host's
// blocks are exactly those of sum_squares() over each tensor; only the order in which the block sums of
// different tensors are added differs (see src/train/optim/optimizer.cpp). Shapes: pieces (P); the element ranges index
// the flat layout, and each buffer pointer comes with the flat index of its first element (its extent's begin).
// Storage type T (the fp32 masters and moments, or a 16-bit type once issue 9 stores them so): arithmetic in T for
// float, as adamw_update does.
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/elementwise.hpp"

namespace gt {

struct FlatPiece {
  long begin = 0, end = 0;  // flat element range [begin, end), end - begin <= kSumBlock
  float wd = 0;             // the tensor's weight decay (0 for biases, LayerNorm and embeddings per config)
  float scale = 1;          // SGD: the tensor's step multiplier this step (LARS' trust ratio; 1 otherwise)
};

// Cuts [begin, end) into pieces of at most kSumBlock elements from `begin` and appends them.
inline void append_pieces(std::vector<FlatPiece>* out, long begin, long end, float wd) {
  for (long b = begin; b < end; b += kSumBlock) out->push_back(FlatPiece{b, b + kSumBlock < end ? b + kSumBlock : end, wd});
}

using PieceView = Kokkos::View<const FlatPiece*, mem_space>;

// Copies a host piece list to the device (once, when the optimizer is made).
inline PieceView to_device(const std::vector<FlatPiece>& pieces) {
  Kokkos::View<FlatPiece*, mem_space> d("flat_pieces", pieces.size());
  Kokkos::View<const FlatPiece*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(pieces.data(), pieces.size());
  Kokkos::deep_copy(d, h);
  return d;
}

// sum over every piece of sum_{i in piece} x[i - x0]^2. One reduction: the host split sums each piece as
// sum_squares' block (kLanes lanes), the device split one team per piece (coalesced, team tree reduction).
template <class T>
double sum_squares_pieces(const T* x, long x0, const PieceView& pieces) {
  const long P = static_cast<long>(pieces.extent(0));
  double total = 0.0;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_reduce("sum_squares_pieces", RowTeams(P, Kokkos::AUTO), KOKKOS_LAMBDA(const RowTeam& tm, double& acc) {
      const FlatPiece pc = pieces(tm.league_rank());
      double s = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, pc.begin, pc.end), [&](long i, double& a) {
        const double v = static_cast<double>(x[i - x0]);
        a += v * v;
      }, s);
      Kokkos::single(Kokkos::PerTeam(tm), [&]() { acc += s; });
    }, total);
    return total;
  }
  Kokkos::parallel_reduce("sum_squares_pieces", range(0, P), KOKKOS_LAMBDA(long k, double& acc) {
    const FlatPiece pc = pieces(k);
    acc += detail::block_sum_squares(x + (pc.begin - x0), 0, pc.end - pc.begin);
  }, total);
  return total;
}

// AdamW (adamw.hpp) on every element of every piece: p, m, v updated in place; element i of the layout is
// p[i - p0], g[i - g0], m[i - m0], v[i - m0] (m and v share one extent).
template <class T>
void adamw_pieces(T* p, long p0, const T* g, long g0, T* m, T* v, long m0, const PieceView& pieces, no_deduce_t<T> lr,
                  no_deduce_t<T> beta1, no_deduce_t<T> beta2, no_deduce_t<T> eps, int step, no_deduce_t<T> g_scale) {
  const T bc1 = detail::bias_correction<T>(beta1, step);
  const T bc2 = detail::bias_correction<T>(beta2, step);
  const long P = static_cast<long>(pieces.extent(0));
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("adamw_pieces", RowTeams(P, Kokkos::AUTO), KOKKOS_LAMBDA(const RowTeam& tm) {
      const FlatPiece pc = pieces(tm.league_rank());
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, pc.begin, pc.end), [&](long i) {
        detail::adamw_element(p + (i - p0), g + (i - g0), m + (i - m0), v + (i - m0), 0, lr, beta1, beta2, eps,
                              T(pc.wd), bc1, bc2, g_scale);
      });
    });
    return;
  }
  Kokkos::parallel_for("adamw_pieces", range(0, P), KOKKOS_LAMBDA(long k) {
    const FlatPiece pc = pieces(k);
    T* pp = p + (pc.begin - p0);
    const T* gp = g + (pc.begin - g0);
    T* mp = m + (pc.begin - m0);
    T* vp = v + (pc.begin - m0);
    const T wd = T(pc.wd);
    for (long i = 0; i < pc.end - pc.begin; ++i)
      detail::adamw_element(pp, gp, mp, vp, i, lr, beta1, beta2, eps, wd, bc1, bc2, g_scale);
  });
}

}  // namespace gt
