#pragma once
// The vision models' head and the ReLU between their convolutions, in fp32 (the sizes are small: batch <= 256,
// classes <= 1000, features <= 2048): a fully connected layer (logits = x W^T + b, W classes x features) and
// softmax cross-entropy, per row.
//   host split: loops with the long dimension innermost (features), as the vision code always ran them;
//   device split: one work item per output element for the layer and per element for the ReLU; each sums its
//     terms in the order the host loops add them, so both splits give the same bits.
// Softmax cross-entropy is one work item per row on both splits: the row's loss (double) and whether its arg-max
// is the label go to per-row arrays, which the caller adds up (a batch's worth of values, in row order).
#include "kernels/lanes.hpp"

namespace gt {

// x, y: (n) y = max(x, 0); y may be x
inline void relu_forward(float* y, const float* x, long n) {
  Kokkos::parallel_for("relu_forward", range(0, n), KOKKOS_LAMBDA(long i) { y[i] = x[i] > 0.f ? x[i] : 0.f; });
}

// y, dy, dx: (n) dx = dy where the forward output y is positive (the same test as on its input); dx may be dy
inline void relu_backward(float* dx, const float* y, const float* dy, long n) {
  Kokkos::parallel_for("relu_backward", range(0, n), KOKKOS_LAMBDA(long i) { dx[i] = y[i] > 0.f ? dy[i] : 0.f; });
}

// x: (batch, features)   w: (classes, features)   b: (classes)   logits: (batch, classes) set
inline void fc_forward(float* logits, const float* x, const float* w, const float* b, int batch, int features,
                       int classes) {
  Kokkos::parallel_for("fc_forward", range(0, long(batch) * classes), KOKKOS_LAMBDA(long item) {
    const long n = item / classes, k = item % classes;
    float acc = b[k];
    for (int f = 0; f < features; ++f) acc += x[n * features + f] * w[k * features + f];
    logits[item] = acc;
  });
}

// dlogits: (batch, classes)   dx: (batch, features) set   dw: (classes, features) set   db: (classes) set
// Every sum in the order of the host loop (rows n for dw and db, classes k for dx), from zero.
template <class T>  // float; a template so that the split not taken is not compiled (nvcc: unreachable code)
void fc_backward(T* dx, T* dw, T* db, const T* x, const T* w, const T* dlogits, int batch, int features,
                 int classes) {
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("fc_backward_dw", range(0, long(classes) * features), KOKKOS_LAMBDA(long item) {
      const long k = item / features, f = item % features;
      float acc = 0.f;
      for (int n = 0; n < batch; ++n) acc += dlogits[long(n) * classes + k] * x[long(n) * features + f];
      dw[item] = acc;
    });
    Kokkos::parallel_for("fc_backward_db", range(0, classes), KOKKOS_LAMBDA(long k) {
      float acc = 0.f;
      for (int n = 0; n < batch; ++n) acc += dlogits[long(n) * classes + k];
      db[k] = acc;
    });
    Kokkos::parallel_for("fc_backward_dx", range(0, long(batch) * features), KOKKOS_LAMBDA(long item) {
      const long n = item / features, f = item % features;
      float acc = 0.f;
      for (int k = 0; k < classes; ++k) acc += dlogits[n * classes + k] * w[long(k) * features + f];
      dx[item] = acc;
    });
  } else {
    for (long i = 0; i < long(classes) * features; ++i) dw[i] = 0.f;
    for (int k = 0; k < classes; ++k) db[k] = 0.f;
    for (int n = 0; n < batch; ++n) {
      for (int f = 0; f < features; ++f) dx[long(n) * features + f] = 0.f;
      for (int k = 0; k < classes; ++k) {
        const float g = dlogits[long(n) * classes + k];
        db[k] += g;
        for (int f = 0; f < features; ++f) {
          dx[long(n) * features + f] += g * w[long(k) * features + f];
          dw[long(k) * features + f] += g * x[long(n) * features + f];
        }
      }
    }
  }
}

// logits: (batch, classes)   labels: (batch) in [0, classes)   dlogits: (batch, classes) set, the gradient of the
// batch's mean loss   row_loss: (batch) set, -log softmax(logits)[label]   row_hit: (batch) set, 1 where the row's
// first arg-max is its label. The row's maximum is subtracted before exp and the sum is in double, so large logits
// neither overflow nor lose the small terms.
inline void softmax_xent_rows(float* dlogits, double* row_loss, int* row_hit, const float* logits, const int* labels,
                              int batch, int classes) {
  Kokkos::parallel_for("softmax_xent_rows", range(0, batch), KOKKOS_LAMBDA(long n) {
    const float* z = logits + n * classes;
    float* dz = dlogits + n * classes;
    int best = 0;
    for (int k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    double sum = 0.0;
    for (int k = 0; k < classes; ++k) sum += math::exp(double(z[k]) - z[best]);
    const int y = labels[n];
    row_loss[n] = math::log(sum) - (double(z[y]) - z[best]);
    for (int k = 0; k < classes; ++k)
      dz[k] = float((math::exp(double(z[k]) - z[best]) / sum - (k == y ? 1.0 : 0.0)) / batch);
    row_hit[n] = best == y ? 1 : 0;
  });
}

}  // namespace gt
