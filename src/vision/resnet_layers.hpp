#pragma once
// The ResNet's layers over the model's flat parameter and gradient arrays (offsets into them, not copies).
// Each layer keeps what its backward needs from the last training forward. Internal to resnet.cpp.
#include <vector>

#include "src/vision/batchnorm.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision::detail {

// A shape in channels-last activations.
struct Dims {
  int n = 0, h = 0, w = 0, c = 0;
  long size() const { return long(n) * h * w * c; }
};

struct ConvLayer {
  int cin = 0, cout = 0, kernel = 3, stride = 1, pad = 1;
  long w_off = 0;
  ConvShape shape(const Dims& in) const { return {in.n, in.h, in.w, cin, cout, kernel, kernel, stride, pad}; }
  Dims out(const Dims& in) const {
    const ConvShape s = shape(in);
    return {in.n, s.out_h(), s.out_w(), cout};
  }
  void forward(const Dims& in, const float* params, const float* x, std::vector<float>& y) const;
  // dx may be null (the stem's input needs no gradient)
  void backward(const Dims& in, const float* params, const float* x, const float* dy, float* grads,
                std::vector<float>* dx) const;
};

struct BatchNormLayer {
  BatchNormParams p;
  long gamma_off = 0, beta_off = 0;
  std::vector<float> running_mean, running_var;
  BatchNormSaved saved;
  void init(int channels);
  void forward(const Dims& d, const float* params, const float* x, std::vector<float>& y, bool train);
  void backward(const Dims& d, const float* params, const float* x, const float* dy, float* grads,
                std::vector<float>& dx) const;
};

// conv - BN - ReLU - conv - BN, plus the shortcut (identity, or 1x1 stride-2 conv - BN), then ReLU.
struct BasicBlock {
  ConvLayer conv1, conv2, proj;
  BatchNormLayer bn1, bn2, bn_proj;
  bool has_proj = false;
  Dims in, mid;
  const float* x = nullptr;  // the block's input of the last forward (the previous layer's output, kept there)
  std::vector<float> a1, b1, a2, b2, ap, bp, out;
  void forward(const Dims& d, const float* params, const float* input, bool train);
  // dout: gradient of out; dx (resized) receives the gradient of the input
  void backward(const float* params, const float* dout, float* grads, std::vector<float>& dx);
};

}  // namespace gt::vision::detail
