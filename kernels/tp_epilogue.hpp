#pragma once
// The parts of layers that must run once, after a tensor-parallel all-reduce of partial results: the bias
// of a row-parallel linear layer fused with the residual add, and the position embedding added to the
// vocab-parallel token embedding. Forward and backward side by side. Storage type T, arithmetic and the bias
// gradient in A = acc_t<T> (fp32 for the 16-bit types).
#include "kernels/colsum.hpp"
#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt {

// in: res (N,C), y (N,C), bias (C)   out: out (N,C) set = res + y + bias (one fused pass: the row-parallel
// layer's bias and the residual add). One work item per row on the host split, per element on the device split
// (coalesced); the same arithmetic, so the same bits, on both.
template <class T>
void residual_bias_forward(T* out, const T* res, const T* y, const T* bias, int N, int C) {
  using A = acc_t<T>;
  if constexpr (kHostBlocking) {
    Kokkos::parallel_for("residual_bias_forward", range(0, long(N)), KOKKOS_LAMBDA(long i) {
      T* o = out + i * C;
      const T* r = res + i * C;
      const T* v = y + i * C;
      GT_IVDEP
      for (int c = 0; c < C; ++c) o[c] = T(A(r[c]) + A(v[c]) + A(bias[c]));
    });
  } else {
    Kokkos::parallel_for("residual_bias_forward", range(0, long(N) * C), KOKKOS_LAMBDA(long e) {
      out[e] = T(A(res[e]) + A(y[e]) + A(bias[e % C]));
    });
  }
}

// in: dout (N,C)   out: dbias (C) acc = column sums   partials: colsum_partials_elems(N, C) scratch (none on the
// host split). A fixed order, no atomics: one work item per column on the host, the two-level column sums of
// colsum.hpp on the device.
template <class T>
void bias_backward(acc_t<T>* dbias, acc_t<T>* partials, const T* dout, int N, int C) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {
    column_sums<1>("bias_backward", Kokkos::Array<A*, 1>{{dbias}}, partials, N, C,
                   KOKKOS_LAMBDA(long i, int c, A* acc) { acc[0] += A(dout[i * C + c]); });
  } else {
    Kokkos::parallel_for("bias_backward", range(0, long(C)), KOKKOS_LAMBDA(long c) {
      acc_t<T> s = 0;
      for (long i = 0; i < N; ++i) s += acc_t<T>(dout[i * C + c]);
      dbias[c] += s;
    });
  }
}

// in: x (BT,C) token embeddings, wpe (T,C)   out: x += wpe[i % T]. Backward: embedding_backward's dwpe.
// One work item per row on the host split, per element on the device split; the same arithmetic.
template <class T>
void add_positions(T* x, const T* wpe, int BT, int T_, int C) {
  using A = acc_t<T>;
  if constexpr (kHostBlocking) {
    Kokkos::parallel_for("add_positions", range(0, long(BT)), KOKKOS_LAMBDA(long i) {
      const T* p = wpe + (i % T_) * C;
      T* xi = x + i * C;
      GT_IVDEP
      for (int c = 0; c < C; ++c) xi[c] = T(A(xi[c]) + A(p[c]));
    });
  } else {
    Kokkos::parallel_for("add_positions", range(0, long(BT) * C), KOKKOS_LAMBDA(long e) {
      const long i = e / C;
      x[e] = T(A(x[e]) + A(wpe[(i % T_) * C + (e - i * C)]));
    });
  }
}

}  // namespace gt
