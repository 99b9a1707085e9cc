#pragma once
// GELU, tanh approximation (GPT-2): gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
// Computed through the identity 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + e^{-2u}): one exp and one divide,
// and no cancellation for negative u (where 1 + tanh u would lose digits).
// Backward: with s = sigmoid(2u), 1 - tanh(u)^2 = 4 s (1-s) and 1-s = e^{-2u} s, so
//   gelu'(x) = s + 2 x s (1-s) sqrt(2/pi) (1 + 3*0.044715 x^2).
// Storage type T; the arithmetic in A = acc_t<T> (float for the 16-bit types), each output rounded once.
#include "kernels/fastmath.hpp"
#include "kernels/lanes.hpp"

namespace gt {

namespace detail {
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_u(T x) {
  const T k = T(0.7978845608028654);  // sqrt(2/pi)
  return k * (x + T(0.044715) * x * x * x);
}
// gelu(x), in A
template <class A>
KOKKOS_INLINE_FUNCTION A gelu_value(A x) {
  return x / (A(1) + kexp(A(-2) * gelu_u(x)));
}
// gelu'(x) * dout, in A
template <class A>
KOKKOS_INLINE_FUNCTION A gelu_grad_times(A x, A dout) {
  // e is capped so that e*s stays finite (e = inf at x < -10 would give inf*0); s is ~1e-30 there anyway
  const A e_raw = kexp(A(-2) * gelu_u(x));
  const A e = e_raw < A(1e30) ? e_raw : A(1e30);
  const A s = A(1) / (A(1) + e);
  const A one_minus_s = e * s;
  const A du = A(0.7978845608028654) * (A(1) + A(3 * 0.044715) * x * x);
  return (s + A(2) * x * s * one_minus_s * du) * dout;
}
}  // namespace detail

// inp, out: (N) ; out set
template <class T>
void gelu_forward(T* out, const T* inp, long N) {
  Kokkos::parallel_for("gelu_forward", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = (ch + 1) * kChunk < N ? (ch + 1) * kChunk : N;
    for (long i = ch * kChunk; i < i1; ++i) out[i] = T(detail::gelu_value(acc_t<T>(inp[i])));
  });
}

// inp, dout: (N) ; dinp set
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, long N) {
  Kokkos::parallel_for("gelu_backward", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = (ch + 1) * kChunk < N ? (ch + 1) * kChunk : N;
    for (long i = ch * kChunk; i < i1; ++i)
      dinp[i] = T(detail::gelu_grad_times(acc_t<T>(inp[i]), acc_t<T>(dout[i])));
  });
}

}  // namespace gt
