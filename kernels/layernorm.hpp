#pragma once
// LayerNorm over the last dimension: out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5),
// biased variance. On the host one work item per row; the row is read from memory once (the second pass for
// the variance hits L1), which keeps the variance accurate (no E[x^2]-E[x]^2 cancellation). On the device one
// team per row with coalesced reads and team reductions (lanes.hpp), the same two passes.
#include "kernels/lanes.hpp"

namespace gt {

// inp: (N,C)  weight, bias: (C)  out: (N,C) set  mean, rstd: (N) set
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N, int C) {
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("layernorm_forward", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      T* o = out + i * C;
      T sum = 0, sq = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, T& a) { a += x[c]; }, sum);
      const T m = sum / T(C);
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, T& a) {
        const T d = x[c] - m;
        a += d * d;
      }, sq);
      const T s = T(1) / math::sqrt(sq / T(C) + T(1e-5));
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) { o[c] = (x[c] - m) * s * weight[c] + bias[c]; });
      Kokkos::single(Kokkos::PerTeam(tm), [&]() {
        mean[i] = m;
        rstd[i] = s;
      });
    });
    return;
  }
  Kokkos::parallel_for("layernorm_forward", range(0, N), KOKKOS_LAMBDA(long i) {
    const T* x = inp + i * C;
    T* o = out + i * C;
    const T m = lanes_sum(x, C) / T(C);
    const T var = lanes_sum_sq_dev(x, m, C) / T(C);
    const T s = T(1) / math::sqrt(var + T(1e-5));
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  });
}

// dout, inp: (N,C)  weight: (C)  mean, rstd: (N)  dinp: (N,C) acc  dweight, dbias: (C) acc
// With n = (x-mean)*rstd and g = weight*dout:  dx = rstd * (g - mean(g) - n * mean(g*n)).
// dinp accumulates because it is the residual stream's gradient. dweight/dbias are column sums over rows,
// done by a second kernel over column blocks (fixed row order, no atomics).
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                        const T* rstd, int N, int C) {
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("layernorm_backward_dinp", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      T* dx = dinp + i * C;
      const T m = mean[i];
      const T s = rstd[i];
      T sum_g = 0, sum_gn = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, T& a) { a += weight[c] * g[c]; }, sum_g);
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, T& a) {
        a += weight[c] * g[c] * ((x[c] - m) * s);
      }, sum_gn);
      const T mean_g = sum_g / T(C), mean_gn = sum_gn / T(C);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) {
        dx[c] += s * (weight[c] * g[c] - mean_g - (x[c] - m) * s * mean_gn);
      });
    });
  } else {
    Kokkos::parallel_for("layernorm_backward_dinp", range(0, N), KOKKOS_LAMBDA(long i) {
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      T* dx = dinp + i * C;
      const T m = mean[i];
      const T s = rstd[i];
      T acc_g[kLanes] = {};
      T acc_gn[kLanes] = {};
      int c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int k = 0; k < kLanes; ++k) {
          const T wg = weight[c + k] * g[c + k];
          acc_g[k] += wg;
          acc_gn[k] += wg * ((x[c + k] - m) * s);
        }
      for (int k = 0; c + k < C; ++k) {
        const T wg = weight[c + k] * g[c + k];
        acc_g[k] += wg;
        acc_gn[k] += wg * ((x[c + k] - m) * s);
      }
      const T mean_g = detail::combine_sum(acc_g) / T(C);
      const T mean_gn = detail::combine_sum(acc_gn) / T(C);
      for (int j = 0; j < C; ++j) {
        const T n = (x[j] - m) * s;
        dx[j] += s * (weight[j] * g[j] - mean_g - n * mean_gn);
      }
    });
  }
  const int nblk = col_block_count(C);
  Kokkos::parallel_for("layernorm_backward_dparams", range(0, nblk), KOKKOS_LAMBDA(long blk) {
    const int c0 = static_cast<int>(blk) * kColBlock;
    const int c1 = c0 + kColBlock < C ? c0 + kColBlock : C;
    for (long i = 0; i < N; ++i) {
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      const T m = mean[i];
      const T s = rstd[i];
      for (int c = c0; c < c1; ++c) {
        dweight[c] += (x[c] - m) * s * g[c];
        dbias[c] += g[c];
      }
    }
  });
}

}  // namespace gt
