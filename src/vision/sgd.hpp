#pragma once
// SGD with momentum and weight decay, the ResNet recipe (PyTorch's form): g' = g + wd * w (only for tensors
// that take decay: convolution and classifier weights, not BatchNorm's gamma/beta or biases), v = mu * v + g',
// w -= lr * v. The decay choice is the caller's per tensor.

namespace gt::vision {

struct SgdParams {
  float lr = 0.1f, momentum = 0.9f, weight_decay = 5e-4f;
};

void sgd_step(const SgdParams& p, bool decay, long n, float* w, const float* g, float* velocity);

}  // namespace gt::vision
