#pragma once
// AdamW (Loshchilov & Hutter): decoupled weight decay, bias-corrected moments, 1-based step.
//   g <- g * g_scale (gradient clipping);  m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2
//   p <- p - lr * ( (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps) + wd * p )
#include <cmath>

#include "kernels/lanes.hpp"

namespace gt {

namespace detail {
// The AdamW update of element i (bc1, bc2: the bias corrections 1 - beta^step). One definition for the per-tensor
// and the fused kernel (adamw_flat.hpp), so both give the same bits.
template <class T>
KOKKOS_INLINE_FUNCTION void adamw_element(T* p, const T* g, T* m, T* v, long i, T lr, T beta1, T beta2, T eps, T wd,
                                          T bc1, T bc2, T g_scale) {
  const T gi = g[i] * g_scale;
  const T mi = beta1 * m[i] + (T(1) - beta1) * gi;
  const T vi = beta2 * v[i] + (T(1) - beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  const T mhat = mi / bc1;
  const T vhat = vi / bc2;
  p[i] -= lr * (mhat / (math::sqrt(vhat) + eps) + wd * p[i]);
}

template <class T>
T bias_correction(no_deduce_t<T> beta, int step) {
  return T(1.0 - std::pow(double(beta), step));
}
}  // namespace detail

// p, g, m, v: (N); p, m, v updated in place. The scalars take T from the arrays (a double lr converts).
template <class T>
void adamw_update(T* p, const T* g, T* m, T* v, long N, no_deduce_t<T> lr, no_deduce_t<T> beta1,
                  no_deduce_t<T> beta2, no_deduce_t<T> eps, no_deduce_t<T> wd, int step, no_deduce_t<T> g_scale) {
  const T bc1 = detail::bias_correction<T>(beta1, step);
  const T bc2 = detail::bias_correction<T>(beta2, step);
  Kokkos::parallel_for("adamw_update", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = (ch + 1) * kChunk < N ? (ch + 1) * kChunk : N;
    for (long i = ch * kChunk; i < i1; ++i) detail::adamw_element(p, g, m, v, i, lr, beta1, beta2, eps, wd, bc1, bc2, g_scale);
  });
}

// Multiplier that clips a gradient of global norm `norm` to `max_norm`; max_norm <= 0 disables clipping.
inline double clip_scale(double norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double s = max_norm / (norm + 1e-6);
  return s < 1.0 ? s : 1.0;
}

}  // namespace gt
