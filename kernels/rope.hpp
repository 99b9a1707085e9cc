#pragma once
// Rotary position embeddings (RoPE, Su et al. 2021) on query and key heads, in place. Pairing: the two halves of
// each head, (i, i + hd/2) for i < hd/2 (GPT-NeoX's and Hugging Face's "rotate_half"); Meta's reference code rotates
// interleaved pairs (2i, 2i+1) instead, a fixed permutation of the head's columns (of the q and k weights' rows):
// the same model up to that permutation. Position t (= row % T) turns pair i by the angle t theta^(-2i/hd):
//   x'_i = x_i cos - x_{i+hd/2} sin,   x'_{i+hd/2} = x_{i+hd/2} cos + x_i sin.
// The rotation is orthogonal, so the backward is the same kernel with the angle negated (rope_apply's `inverse`).
// The angles' cosines and sines are tabulated once per model in double and stored in A (rope_tables): an fp32 angle
// t * freq would be off by ~t 2^-24 radians (5e-4 at t = 8192).
#include "kernels/lanes.hpp"

namespace gt {

// cos, sin: (T, hd/2) set, in A.
template <class A>
void rope_tables(A* cos_t, A* sin_t, int T_, int hd, double theta) {
  const int h2 = hd / 2;
  Kokkos::parallel_for("rope_tables", range(0, long(T_) * h2), KOKKOS_LAMBDA(long e) {
    const long t = e / h2;
    const int i = static_cast<int>(e % h2);
    const double ang = double(t) * math::exp(-2.0 * double(i) / double(hd) * math::log(theta));
    cos_t[e] = A(math::cos(ang));
    sin_t[e] = A(math::sin(ang));
  });
}

// x: N rows of stride ld (row r at position r % T_); in each row, `groups` groups of columns group_stride apart, each
// starting with `heads` heads of hd columns to rotate (the q and k heads of the grouped qkv layout: per key/value
// group G query heads and its key head rotated, its value head not; groups = 1 for plain runs of heads). Rotated in
// place by the tables (inverse: by the negated angle, the backward of the forward rotation).
template <class T>
void rope_apply(T* x, const acc_t<T>* cos_t, const acc_t<T>* sin_t, long N, int T_, int groups, int heads,
                long group_stride, int hd, long ld, bool inverse) {
  using A = acc_t<T>;
  const int h2 = hd / 2;
  const A sgn = inverse ? A(-1) : A(1);
  if constexpr (!kHostBlocking) {  // one work item per (row, group, head, pair)
    Kokkos::parallel_for("rope_apply", range(0, N * groups * heads * h2), KOKKOS_LAMBDA(long e) {
      const int i = static_cast<int>(e % h2);
      long rest = e / h2;
      const int h = static_cast<int>(rest % heads);
      rest /= heads;
      const int g = static_cast<int>(rest % groups);
      const long r = rest / groups;
      const long tab = (r % T_) * h2 + i;
      T* v = x + r * ld + g * group_stride + long(h) * hd;
      const A c = cos_t[tab], s = sgn * sin_t[tab], a = A(v[i]), b = A(v[i + h2]);
      v[i] = T(a * c - b * s);
      v[i + h2] = T(b * c + a * s);
    });
    return;
  }
  Kokkos::parallel_for("rope_apply", range(0, N), KOKKOS_LAMBDA(long r) {
    const A* c = cos_t + (r % T_) * h2;
    const A* s = sin_t + (r % T_) * h2;
    for (int g = 0; g < groups; ++g)
      for (int h = 0; h < heads; ++h) {
        T* v = x + r * ld + g * group_stride + long(h) * hd;
        GT_IVDEP for (int i = 0; i < h2; ++i) {
          const A a = A(v[i]), b = A(v[i + h2]), si = sgn * s[i];
          v[i] = T(a * c[i] - b * si);
          v[i + h2] = T(b * c[i] + a * si);
        }
      }
  });
}

}  // namespace gt
