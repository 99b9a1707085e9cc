#pragma once
// LayerNorm over the last dimension: out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5),
// biased variance. On the host one work item per row; the row is read from memory once (the second pass for
// the variance hits L1), which keeps the variance accurate (no E[x^2]-E[x]^2 cancellation). On the device one
// team per row with coalesced reads and team reductions (lanes.hpp), the same two passes.
// Storage type T (float, double, bf16_t, fp16_t) for the rows and the parameters; the statistics, the
// parameter gradients and all arithmetic in A = acc_t<T> (float for the 16-bit types), each output rounded
// to T once.
#include "kernels/colsum.hpp"
#include "kernels/lanes.hpp"

namespace gt {

// inp: (N,C)  weight, bias: (C)  out: (N,C) set  mean, rstd: (N) set, in A
template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N,
                       int C) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("layernorm_forward", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      T* o = out + i * C;
      A sum = 0, sq = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) { a += x[c]; }, sum);
      const A m = sum / A(C);
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) {
        const A d = x[c] - m;
        a += d * d;
      }, sq);
      const A s = A(1) / math::sqrt(sq / A(C) + A(1e-5));
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) { o[c] = T((x[c] - m) * s * weight[c] + bias[c]); });
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
    const A m = lanes_sum(x, C) / A(C);
    const A var = lanes_sum_sq_dev(x, m, C) / A(C);
    const A s = A(1) / math::sqrt(var + A(1e-5));
    for (int c = 0; c < C; ++c) o[c] = T((x[c] - m) * s * weight[c] + bias[c]);
    mean[i] = m;
    rstd[i] = s;
  });
}

// dout, inp: (N,C)  weight: (C)  mean, rstd: (N)  dinp: (N,C) acc  dweight, dbias: (C) acc (A: the fp32
// gradient buffer of a half model)  partials: colsum_partials_elems(N, 2*C) scratch (none on the host split)
// With n = (x-mean)*rstd and g = weight*dout:  dx = rstd * (g - mean(g) - n * mean(g*n)).
// dinp accumulates because it is the residual stream's gradient. dweight/dbias are column sums over rows, a
// fixed order and no atomics: on the host a second kernel over column blocks, rows in order; on the device the
// two-level column sums of colsum.hpp.
template <class T>
void layernorm_backward(T* dinp, acc_t<T>* dweight, acc_t<T>* dbias, acc_t<T>* partials, const T* dout, const T* inp,
                        const T* weight, const acc_t<T>* mean, const acc_t<T>* rstd, int N, int C) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("layernorm_backward_dinp", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      T* dx = dinp + i * C;
      const A m = mean[i];
      const A s = rstd[i];
      A sum_g = 0, sum_gn = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) { a += A(weight[c]) * A(g[c]); }, sum_g);
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) {
        a += A(weight[c]) * A(g[c]) * ((x[c] - m) * s);
      }, sum_gn);
      const A mean_g = sum_g / A(C), mean_gn = sum_gn / A(C);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) {
        dx[c] = T(dx[c] + s * (A(weight[c]) * A(g[c]) - mean_g - (x[c] - m) * s * mean_gn));
      });
    });
    column_sums<2>("layernorm_backward_dparams", Kokkos::Array<A*, 2>{{dweight, dbias}}, partials, N, C,
                   KOKKOS_LAMBDA(long i, int c, A* acc) {
                     const long ic = i * C + c;
                     acc[0] += (inp[ic] - mean[i]) * rstd[i] * dout[ic];
                     acc[1] += A(dout[ic]);
                   });
  } else {
    Kokkos::parallel_for("layernorm_backward_dinp", range(0, N), KOKKOS_LAMBDA(long i) {
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      T* dx = dinp + i * C;
      const A m = mean[i];
      const A s = rstd[i];
      A acc_g[kLanes] = {};
      A acc_gn[kLanes] = {};
      int c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int k = 0; k < kLanes; ++k) {
          const A wg = A(weight[c + k]) * A(g[c + k]);
          acc_g[k] += wg;
          acc_gn[k] += wg * ((x[c + k] - m) * s);
        }
      for (int k = 0; c + k < C; ++k) {
        const A wg = A(weight[c + k]) * A(g[c + k]);
        acc_g[k] += wg;
        acc_gn[k] += wg * ((x[c + k] - m) * s);
      }
      const A mean_g = detail::combine_sum(acc_g) / A(C);
      const A mean_gn = detail::combine_sum(acc_gn) / A(C);
      for (int j = 0; j < C; ++j) {
        const A n = (x[j] - m) * s;
        dx[j] = T(dx[j] + s * (A(weight[j]) * A(g[j]) - mean_g - n * mean_gn));
      }
    });
    const int nblk = col_block_count(C);
    Kokkos::parallel_for("layernorm_backward_dparams", range(0, nblk), KOKKOS_LAMBDA(long blk) {
      const int c0 = static_cast<int>(blk) * kColBlock;
      const int c1 = c0 + kColBlock < C ? c0 + kColBlock : C;
      for (long i = 0; i < N; ++i) {
        const T* x = inp + i * C;
        const T* g = dout + i * C;
        const A m = mean[i];
        const A s = rstd[i];
        for (int c = c0; c < c1; ++c) {
          dweight[c] += (x[c] - m) * s * g[c];
          dbias[c] += A(g[c]);
        }
      }
    });
  }
}

}  // namespace gt
