#pragma once
// SwiGLU's gate (Llama's MLP: down(silu(gate x) o (up x))): out = silu(g) o u, silu(g) = g sigmoid(g), with
// sigmoid(g) = 1 / (1 + exp(-g)) (kexp: the vectorisable fast exp for float). Backward, with s = sigmoid(g):
// du = dout o silu(g),  dg = dout o u o s (1 + g (1 - s)). Element-wise: on the host one work item per row (the
// inner loop vectorises), on the device one per element (lanes.hpp). Storage type T, arithmetic in A = acc_t<T>,
// each output rounded once.
#include "kernels/fastmath.hpp"
#include "kernels/lanes.hpp"

namespace gt {

namespace detail {
template <class A>
KOKKOS_INLINE_FUNCTION A sigmoid(A g) {
  return A(1) / (A(1) + kexp(-g));
}
}  // namespace detail

// gu: (N, 2F), row = [gate (F) | up (F)] (the column-parallel gate and up projections in one GEMM)  out: (N, F) set
template <class T>
void swiglu_forward(T* out, const T* gu, long N, int F) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one work item per output element
    Kokkos::parallel_for("swiglu_forward", range(0, N * F), KOKKOS_LAMBDA(long e) {
      const long r = e / F, j = e % F;
      const A g = A(gu[r * 2 * F + j]);
      out[e] = T(g * detail::sigmoid(g) * A(gu[r * 2 * F + F + j]));
    });
    return;
  }
  Kokkos::parallel_for("swiglu_forward", range(0, N), KOKKOS_LAMBDA(long r) {
    const T* g = gu + r * 2 * F;
    const T* u = g + F;
    T* o = out + r * F;
    GT_IVDEP for (int j = 0; j < F; ++j) o[j] = T(A(g[j]) * detail::sigmoid(A(g[j])) * A(u[j]));
  });
}

// dout: (N, F)  gu: (N, 2F) as above  dgu: (N, 2F) set, row = [dgate | dup]
template <class T>
void swiglu_backward(T* dgu, const T* dout, const T* gu, long N, int F) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("swiglu_backward", range(0, N * F), KOKKOS_LAMBDA(long e) {
      const long r = e / F, j = e % F, ig = r * 2 * F + j;
      const A g = A(gu[ig]), u = A(gu[ig + F]), d = A(dout[e]);
      const A s = detail::sigmoid(g);
      dgu[ig + F] = T(d * g * s);
      dgu[ig] = T(d * u * s * (A(1) + g * (A(1) - s)));
    });
    return;
  }
  Kokkos::parallel_for("swiglu_backward", range(0, N), KOKKOS_LAMBDA(long r) {
    const T* g = gu + r * 2 * F;
    const T* u = g + F;
    const T* d = dout + r * F;
    T* dg = dgu + r * 2 * F;
    T* du = dg + F;
    GT_IVDEP for (int j = 0; j < F; ++j) {
      const A gj = A(g[j]), s = detail::sigmoid(gj);
      du[j] = T(A(d[j]) * gj * s);
      dg[j] = T(A(d[j]) * A(u[j]) * s * (A(1) + gj * (A(1) - s)));
    }
  });
}

}  // namespace gt
