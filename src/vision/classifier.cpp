// Head kernels. The batch and class counts are small (<= 256 x 1000), so plain loops; the softmax subtracts the
// row's maximum before exp and sums in double so that large logits neither overflow nor lose the small terms.
#include "src/vision/classifier.hpp"

#include <cmath>
#include <vector>

namespace gt::vision {

void relu_forward(long n, const float* x, float* y) {
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

void relu_backward(long n, const float* y, const float* dy, float* dx) {
  for (long i = 0; i < n; ++i) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

void linear_forward(int batch, int features, int classes, const float* x, const float* w, const float* b,
                    float* logits) {
  for (int n = 0; n < batch; ++n)
    for (int k = 0; k < classes; ++k) {
      float acc = b[k];
      for (int f = 0; f < features; ++f) acc += x[long(n) * features + f] * w[long(k) * features + f];
      logits[long(n) * classes + k] = acc;
    }
}

void linear_backward(int batch, int features, int classes, const float* x, const float* w, const float* dlogits,
                     float* dx, float* dw, float* db) {
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

double softmax_xent(int batch, int classes, const float* logits, const int* labels, float* dlogits,
                    int* correct) {
  double loss = 0.0;
  std::vector<double> e(classes);
  for (int n = 0; n < batch; ++n) {
    const float* z = logits + long(n) * classes;
    int best = 0;
    for (int k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    double sum = 0.0;
    for (int k = 0; k < classes; ++k) sum += e[k] = std::exp(double(z[k]) - z[best]);
    const int y = labels[n];
    loss += std::log(sum) - (double(z[y]) - z[best]);
    for (int k = 0; k < classes; ++k) dlogits[long(n) * classes + k] = float((e[k] / sum - (k == y)) / batch);
    if (correct && best == y) ++*correct;
  }
  return loss / batch;
}

}  // namespace gt::vision
