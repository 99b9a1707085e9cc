#pragma once
// AdamW (Loshchilov & Hutter): decoupled weight decay, bias-corrected moments, 1-based step.
//   g <- g * g_scale (gradient clipping);  m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2
//   p <- p - lr * ( (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps) + wd * p )
#include <cmath>

#include "kernels/lanes.hpp"

namespace gt {

// p, g, m, v: (N); p, m, v updated in place. The scalars take T from the arrays (a double lr converts).
template <class T>
void adamw_update(T* p, const T* g, T* m, T* v, long N, no_deduce_t<T> lr, no_deduce_t<T> beta1,
                  no_deduce_t<T> beta2, no_deduce_t<T> eps, no_deduce_t<T> wd, int step, no_deduce_t<T> g_scale) {
  const T bc1 = T(1.0 - std::pow(double(beta1), step));
  const T bc2 = T(1.0 - std::pow(double(beta2), step));
  Kokkos::parallel_for("adamw_update", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = (ch + 1) * kChunk < N ? (ch + 1) * kChunk : N;
    for (long i = ch * kChunk; i < i1; ++i) {
      const T gi = g[i] * g_scale;
      const T mi = beta1 * m[i] + (T(1) - beta1) * gi;
      const T vi = beta2 * v[i] + (T(1) - beta2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const T mhat = mi / bc1;
      const T vhat = vi / bc2;
      p[i] -= lr * (mhat / (math::sqrt(vhat) + eps) + wd * p[i]);
    }
  });
}

// Multiplier that clips a gradient of global norm `norm` to `max_norm`; max_norm <= 0 disables clipping.
inline double clip_scale(double norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  const double s = max_norm / (norm + 1e-6);
  return s < 1.0 ? s : 1.0;
}

}  // namespace gt
