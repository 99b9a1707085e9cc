#pragma once
// The vision models' head and the ReLU between their convolutions, in fp32 (the sizes are small: batch <= 256,
// classes <= 1000, features <= 2048): a fully connected layer (logits = x W^T + b, W classes x features: GEMMs)
// and softmax cross-entropy, per row; the ReLU one work item per element.
// Softmax cross-entropy is one work item per row on both splits: the row's loss (double) and whether its arg-max
// is the label go to per-row arrays, which the caller adds up (a batch's worth of values, in row order).
#include "kernels/elementwise.hpp"
#include "kernels/lanes.hpp"
#include "kernels/linear.hpp"

namespace gt {

// x, y: (n) y = max(x, 0); y may be x
inline void relu_forward(float* y, const float* x, long n) {
  Kokkos::parallel_for("relu_forward", range(0, n), KOKKOS_LAMBDA(long i) { y[i] = x[i] > 0.f ? x[i] : 0.f; });
}

// y, dy, dx: (n) dx = dy where the forward output y is positive (the same test as on its input); dx may be dy.
// dy is read whatever the test says: a select, where a load under the condition became a masked load that GCC 12
// kept in a stack slot between iterations (a store and a reload on every vector).
inline void relu_backward(float* dx, const float* y, const float* dy, long n) {
  Kokkos::parallel_for("relu_backward", range(0, n), KOKKOS_LAMBDA(long i) {
    const float g = dy[i];
    dx[i] = y[i] > 0.f ? g : 0.f;
  });
}

// The layer is gt::linear_forward / linear_backward (kernels/linear.hpp): its GEMMs go to the host's BLAS or
// cuBLAS. A loop per logit ran ResNet-50's head (16 x 2048 x 1000) at ~3 GFLOP/s on one core, 0.9% of its step:
// the compiler may not reorder a float sum, so the loop did not vectorise.
// x: (batch, features)   w: (classes, features)   b: (classes)   logits: (batch, classes) set
inline void fc_forward(float* logits, const float* x, const float* w, const float* b, int batch, int features,
                       int classes) {
  linear_forward<float>(logits, x, w, b, batch, features, classes);
}

// Scratch floats fc_backward needs (db's column sums on the device split; 0 on the host split).
inline long fc_backward_partials(int batch, int classes) { return colsum_partials_elems(batch, classes); }

// dlogits: (batch, classes)   dx: (batch, features) set   dw: (classes, features) set   db: (classes) set
// partials: fc_backward_partials(batch, classes) floats of scratch (may be null when that is 0)
inline void fc_backward(float* dx, float* dw, float* db, float* partials, const float* x, const float* w,
                        const float* dlogits, int batch, int features, int classes) {
  fill<float>(dw, long(classes) * features, 0.f);  // linear_backward accumulates its weight and bias gradients
  fill<float>(db, classes, 0.f);
  linear_backward<float>(dx, dw, db, partials, dlogits, x, w, batch, features, classes);
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
