#pragma once
// RMSNorm over the last dimension (Llama's pre-norm): out = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps).
// No mean subtraction, no bias. Work split as layernorm.hpp: on the host one work item per row (lanes.hpp sums),
// the weight gradient a second kernel over column blocks with the rows in order; on the device one team per row and
// the two-level column sums of colsum.hpp. Storage type T for rows and weight; rstd, the weight gradient and all
// arithmetic in A = acc_t<T>, each output rounded to T once.
#include "kernels/colsum.hpp"
#include "kernels/lanes.hpp"

namespace gt {

// inp: (N,C)  weight: (C)  out: (N,C) set  rstd: (N) set, in A
template <class T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C, acc_t<T> eps) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("rmsnorm_forward", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      T* o = out + i * C;
      A sq = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) { a += A(x[c]) * A(x[c]); }, sq);
      const A s = A(1) / math::sqrt(sq / A(C) + eps);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) { o[c] = T(A(x[c]) * s * A(weight[c])); });
      Kokkos::single(Kokkos::PerTeam(tm), [&]() { rstd[i] = s; });
    });
    return;
  }
  Kokkos::parallel_for("rmsnorm_forward", range(0, N), KOKKOS_LAMBDA(long i) {
    const T* x = inp + i * C;
    T* o = out + i * C;
    const A s = A(1) / math::sqrt(lanes_dot(x, x, C) / A(C) + eps);
    GT_IVDEP for (int c = 0; c < C; ++c) o[c] = T(A(x[c]) * s * A(weight[c]));
    rstd[i] = s;
  });
}

// dout, inp: (N,C)  weight: (C)  rstd: (N)  dinp: (N,C) acc (the residual stream's gradient)  dweight: (C) acc (A)
// partials: colsum_partials_elems(N, C) scratch (none on the host split)
// With n = x rstd and g = weight o dout:  dx = rstd (g - n mean(g o n)),  dweight = sum over rows of n o dout.
template <class T>
void rmsnorm_backward(T* dinp, acc_t<T>* dweight, acc_t<T>* partials, const T* dout, const T* inp, const T* weight,
                      const acc_t<T>* rstd, int N, int C) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("rmsnorm_backward_dinp", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      T* dx = dinp + i * C;
      const A s = rstd[i];
      A sum_gn = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, C), [&](int c, A& a) {
        a += A(weight[c]) * A(g[c]) * (A(x[c]) * s);
      }, sum_gn);
      const A mean_gn = sum_gn / A(C);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, C), [&](int c) {
        dx[c] = T(A(dx[c]) + s * (A(weight[c]) * A(g[c]) - A(x[c]) * s * mean_gn));
      });
    });
    column_sums<1>("rmsnorm_backward_dweight", Kokkos::Array<A*, 1>{{dweight}}, partials, N, C,
                   KOKKOS_LAMBDA(long i, int c, A* acc) {
                     const long ic = i * C + c;
                     acc[0] += A(inp[ic]) * rstd[i] * A(dout[ic]);
                   });
    return;
  }
  Kokkos::parallel_for("rmsnorm_backward_dinp", range(0, N), KOKKOS_LAMBDA(long i) {
    const T* x = inp + i * C;
    const T* g = dout + i * C;
    T* dx = dinp + i * C;
    const A s = rstd[i];
    A acc[kLanes] = {};
    int c = 0;
    for (; c + kLanes <= C; c += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += A(weight[c + k]) * A(g[c + k]) * (A(x[c + k]) * s);
    for (int k = 0; c + k < C; ++k) acc[k] += A(weight[c + k]) * A(g[c + k]) * (A(x[c + k]) * s);
    const A mean_gn = detail::combine_sum(acc) / A(C);
    GT_IVDEP for (int j = 0; j < C; ++j) dx[j] = T(A(dx[j]) + s * (A(weight[j]) * A(g[j]) - A(x[j]) * s * mean_gn));
  });
  Kokkos::parallel_for("rmsnorm_backward_dweight", range(0, col_block_count(C)), KOKKOS_LAMBDA(long blk) {
    const int c0 = static_cast<int>(blk) * kColBlock;
    const int c1 = c0 + kColBlock < C ? c0 + kColBlock : C;
    for (long i = 0; i < N; ++i) {
      const T* x = inp + i * C;
      const T* g = dout + i * C;
      const A s = rstd[i];
      for (int c = c0; c < c1; ++c) dweight[c] += A(x[c]) * s * A(g[c]);
    }
  });
}

}  // namespace gt
