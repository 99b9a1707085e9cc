// Forward and backward of the ResNet's layers; weight gradients are written (not accumulated): each parameter
// is used once per forward pass, and the model clears nothing between steps.
#include "src/vision/resnet_layers.hpp"

#include "src/vision/classifier.hpp"

namespace gt::vision::detail {

void ConvLayer::forward(const Dims& in, const float* params, const float* x, std::vector<float>& y) const {
  y.resize(out(in).size());
  conv_forward(shape(in), x, params + w_off, y.data());
}

void ConvLayer::backward(const Dims& in, const float* params, const float* x, const float* dy, float* grads,
                         std::vector<float>* dx) const {
  const ConvShape s = shape(in);
  conv_backward_weights(s, x, dy, grads + w_off);
  if (dx) {
    dx->resize(in.size());
    conv_backward_data(s, dy, params + w_off, dx->data());
  }
}

void BatchNormLayer::init(int channels) {
  p.channels = channels;
  running_mean.assign(channels, 0.f);
  running_var.assign(channels, 1.f);
}

void BatchNormLayer::forward(const Dims& d, const float* params, const float* x, std::vector<float>& y,
                             bool train) {
  y.resize(d.size());
  const long rows = long(d.n) * d.h * d.w;
  if (train)
    batchnorm_forward_train(p, rows, x, params + gamma_off, params + beta_off, y.data(), saved,
                            running_mean.data(), running_var.data());
  else
    batchnorm_forward_eval(p, rows, x, params + gamma_off, params + beta_off, running_mean.data(),
                           running_var.data(), y.data());
}

void BatchNormLayer::backward(const Dims& d, const float* params, const float* x, const float* dy, float* grads,
                              std::vector<float>& dx) const {
  dx.resize(d.size());
  batchnorm_backward(p, long(d.n) * d.h * d.w, x, dy, params + gamma_off, saved, dx.data(), grads + gamma_off,
                     grads + beta_off);
}

void BasicBlock::forward(const Dims& d, const float* params, const float* input, bool train) {
  in = d;
  x = input;
  mid = conv1.out(d);
  conv1.forward(d, params, x, a1);
  bn1.forward(mid, params, a1.data(), b1, train);
  relu_forward(mid.size(), b1.data(), b1.data());
  conv2.forward(mid, params, b1.data(), a2);
  bn2.forward(mid, params, a2.data(), b2, train);
  const float* shortcut = x;
  if (has_proj) {
    proj.forward(d, params, x, ap);
    bn_proj.forward(mid, params, ap.data(), bp, train);
    shortcut = bp.data();
  }
  out.resize(mid.size());
  for (long i = 0; i < mid.size(); ++i) out[i] = b2[i] + shortcut[i];
  relu_forward(mid.size(), out.data(), out.data());
}

void BasicBlock::backward(const float* params, const float* dout, float* grads, std::vector<float>& dx) {
  std::vector<float> dsum(mid.size()), da(mid.size()), dr;
  relu_backward(mid.size(), out.data(), dout, dsum.data());
  bn2.backward(mid, params, a2.data(), dsum.data(), grads, da);
  conv2.backward(mid, params, b1.data(), da.data(), grads, &dr);
  relu_backward(mid.size(), b1.data(), dr.data(), dr.data());  // b1 holds relu(bn1(a1))
  bn1.backward(mid, params, a1.data(), dr.data(), grads, da);
  conv1.backward(in, params, x, da.data(), grads, &dx);
  if (has_proj) {
    std::vector<float> dp, dxp;
    bn_proj.backward(mid, params, ap.data(), dsum.data(), grads, dp);
    proj.backward(in, params, x, dp.data(), grads, &dxp);
    for (long i = 0; i < in.size(); ++i) dx[i] += dxp[i];
  } else {
    for (long i = 0; i < in.size(); ++i) dx[i] += dsum[i];
  }
}

}  // namespace gt::vision::detail
