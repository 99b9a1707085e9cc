#include "src/vision/sgd.hpp"

namespace gt::vision {

void sgd_step(const SgdParams& p, bool decay, long n, float* w, const float* g, float* velocity) {
  const float wd = decay ? p.weight_decay : 0.f;
  for (long i = 0; i < n; ++i) {
    velocity[i] = p.momentum * velocity[i] + (g[i] + wd * w[i]);
    w[i] -= p.lr * velocity[i];
  }
}

}  // namespace gt::vision
