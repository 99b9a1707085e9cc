#pragma once
// Vocab-parallel softmax cross-entropy (Megatron style). This rank holds the logits of vocab columns
// [v0, v0+Vl). Phases, with the caller all-reducing over the tensor-parallel group in between
// (with one rank no reduction is needed):
//   1. ce_row_max          -> all-reduce MAX of rowmax
//   2. ce_row_sumexp       -> all-reduce SUM of sumexp and tlogit (only the owning rank has a nonzero tlogit)
//   3. ce_loss             loss_i = log(sumexp_i) + rowmax_i - tlogit_i (ce_loss_accumulate: their sum, on the device)
//   4. ce_backward_inplace logits <- scale * (softmax - onehot(target))
// The logits are in the storage type T; the row statistics, the loss and all arithmetic in A = acc_t<T>
// (fp32 for the 16-bit types), so the reductions over the vocabulary never round to 16 bits.
#include <cstdint>

#include "kernels/fastmath.hpp"
#include "kernels/lanes.hpp"

namespace gt {

// logits: (N,Vl)  rowmax: (N) set
template <class T>
void ce_row_max(acc_t<T>* rowmax, const T* logits, int N, int Vl) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("ce_row_max", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = logits + i * Vl;
      A m = x[0];
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, Vl), [&](int j, A& a) { a = A(x[j]) > a ? A(x[j]) : a; },
                              Kokkos::Max<A>(m));
      Kokkos::single(Kokkos::PerTeam(tm), [&]() { rowmax[i] = m; });
    });
    return;
  }
  Kokkos::parallel_for("ce_row_max", range(0, N), KOKKOS_LAMBDA(long i) {
    rowmax[i] = lanes_max(logits + i * Vl, Vl);
  });
}

// logits: (N,Vl)  rowmax: (N, global)  targets: (N) global ids
// sumexp (N) set = sum_j exp(logits[i,j] - rowmax[i]);  tlogit (N) set = logits[i, tgt-v0] if owned, else 0
template <class T>
void ce_row_sumexp(acc_t<T>* sumexp, acc_t<T>* tlogit, const T* logits, const acc_t<T>* rowmax,
                   const int32_t* targets, int N, int Vl, int v0) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("ce_row_sumexp", row_teams(N), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long i = tm.league_rank();
      const T* x = logits + i * Vl;
      const A m = rowmax[i];
      A sum = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, Vl), [&](int j, A& a) { a += kexp(x[j] - m); }, sum);
      Kokkos::single(Kokkos::PerTeam(tm), [&]() {
        sumexp[i] = sum;
        const long t = static_cast<long>(targets[i]) - v0;
        tlogit[i] = (t >= 0 && t < Vl) ? A(x[t]) : A(0);
      });
    });
    return;
  }
  Kokkos::parallel_for("ce_row_sumexp", range(0, N), KOKKOS_LAMBDA(long i) {
    const T* x = logits + i * Vl;
    const A m = rowmax[i];
    A acc[kLanes] = {};
    int j = 0;
    for (; j + kLanes <= Vl; j += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += kexp(x[j + k] - m);
    for (int k = 0; j + k < Vl; ++k) acc[k] += kexp(x[j + k] - m);
    sumexp[i] = detail::combine_sum(acc);
    const long t = static_cast<long>(targets[i]) - v0;
    tlogit[i] = (t >= 0 && t < Vl) ? A(x[t]) : A(0);
  });
}

// The loss of token i from its all-reduced row statistics, in A.
template <class A>
KOKKOS_INLINE_FUNCTION A ce_token_loss(const A* sumexp, const A* rowmax, const A* tlogit, long i) {
  return math::log(sumexp[i]) + rowmax[i] - tlogit[i];
}

// sumexp, rowmax, tlogit: (N, all reduced)  loss: (N) set
template <class A>
void ce_loss(A* loss, const A* sumexp, const A* rowmax, const A* tlogit, int N) {
  Kokkos::parallel_for("ce_loss", range(0, N), KOKKOS_LAMBDA(long i) { loss[i] = ce_token_loss(sumexp, rowmax, tlogit, i); });
}

// sumexp, rowmax, tlogit: (N, all reduced)  loss_sum: one double in memory of the execution space,
// += sum_i loss_i, each token loss computed in A (as ce_loss stores it) and summed in double. Stays on the
// device: the caller reads loss_sum once per step, not once per micro-batch. One kernel, deterministic: the
// host split adds the tokens in order (the sum the host loop over ce_loss's output made); the device split is
// one team (a fixed tree for a given team size; N = B*T rows of a few flops each do not need more).
template <class A>
void ce_loss_accumulate(double* loss_sum, const A* sumexp, const A* rowmax, const A* tlogit, int N) {
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("ce_loss_accumulate", RowTeams(1, Kokkos::AUTO), KOKKOS_LAMBDA(const RowTeam& tm) {
      double s = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, N), [&](int i, double& a) {
        a += static_cast<double>(ce_token_loss(sumexp, rowmax, tlogit, i));
      }, s);
      Kokkos::single(Kokkos::PerTeam(tm), [&]() { loss_sum[0] += s; });
    });
    return;
  }
  Kokkos::parallel_for("ce_loss_accumulate", range(0, 1), KOKKOS_LAMBDA(long) {
    double s = 0;
    for (int i = 0; i < N; ++i) s += static_cast<double>(ce_token_loss(sumexp, rowmax, tlogit, i));
    loss_sum[0] += s;
  });
}

// logits: (N,Vl) in, dlogits out = scale * (exp(l - rowmax)/sumexp - [j == tgt-v0])
template <class T>
void ce_backward_inplace(T* logits, const acc_t<T>* rowmax, const acc_t<T>* sumexp, const int32_t* targets, int N,
                         int Vl, int v0, acc_t<T> scale) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one work item per element, consecutive items on consecutive columns
    Kokkos::parallel_for("ce_backward_inplace", range(0, long(N) * Vl), KOKKOS_LAMBDA(long e) {
      const long i = e / Vl;
      const long j = e - i * Vl;
      const A p = kexp(logits[e] - rowmax[i]) / sumexp[i];
      logits[e] = T(scale * (j == static_cast<long>(targets[i]) - v0 ? p - A(1) : p));
    });
    return;
  }
  Kokkos::parallel_for("ce_backward_inplace", range(0, N), KOKKOS_LAMBDA(long i) {
    T* x = logits + i * Vl;
    const A m = rowmax[i];
    const A inv = A(1) / sumexp[i];
    const long t = static_cast<long>(targets[i]) - v0;
    const bool own = t >= 0 && t < Vl;
    const A xt = own ? A(x[t]) : A(0);
    for (int j = 0; j < Vl; ++j) x[j] = T(scale * (kexp(x[j] - m) * inv));
    if (own) x[t] = T(scale * (kexp(xt - m) * inv - A(1)));
  });
}

}  // namespace gt
