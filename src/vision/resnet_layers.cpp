// Forward and backward of the ResNet's layers; weight gradients are written (not accumulated): each parameter
// is used once per forward pass, and the model clears nothing between steps.
#include "src/vision/resnet_layers.hpp"

#include <algorithm>

#include "src/vision/classifier.hpp"

namespace gt::vision::detail {

void ConvLayer::forward(const Dims& in, const float* params, const float* x, std::vector<float>& y) const {
  y.resize(out(in).size());
  conv_forward(shape(in), x, params + w_off, y.data());
}

void ConvLayer::backward(const Dims& in, const float* params, const float* x, const float* dy, float* grads,
                         std::vector<float>* dx) const {
  if (dx) dx->resize(in.size());
  conv_backward(shape(in), x, dy, params + w_off, dx ? dx->data() : nullptr, grads + w_off);
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

void BatchNormLayer::backward(const Dims& d, const float* params, const float* x, const float* y, const float* dy,
                              float* grads, std::vector<float>& dx) const {
  dx.resize(d.size());
  batchnorm_backward(p, long(d.n) * d.h * d.w, x, y, dy, params + gamma_off, saved, dx.data(), grads + gamma_off,
                     grads + beta_off);
}

void ResBlock::forward(const Dims& d, const float* params, const float* input, bool train) {
  const size_t n = convs.size();
  in = d;
  x = input;
  conv_in.resize(n);
  a.resize(n);
  b.resize(n);
  Dims cur = d;
  const float* h = x;
  for (size_t k = 0; k < n; ++k) {
    conv_in[k] = cur;
    convs[k].forward(cur, params, h, a[k]);
    cur = convs[k].out(cur);
    bns[k].forward(cur, params, a[k].data(), b[k], train);  // ReLU'd in the pass but for the last unit
    h = b[k].data();
  }
  mid = cur;
  const float* shortcut = x;
  if (has_proj) {
    proj.forward(d, params, x, ap);
    bn_proj.forward(mid, params, ap.data(), bp, train);
    shortcut = bp.data();
  }
  out.resize(mid.size());
  const float* last = b[n - 1].data();
  for (long i = 0; i < mid.size(); ++i) out[i] = std::max(0.f, last[i] + shortcut[i]);  // the sum, ReLU'd
}

void ResBlock::backward(const float* params, const float* dout, float* grads, std::vector<float>& dx) {
  const size_t n = convs.size();
  g_sum.resize(mid.size());
  relu_backward(mid.size(), out.data(), dout, g_sum.data());
  const float* g_out = g_sum.data();  // the last unit's output gradient: the sum's, before any ReLU
  for (size_t k = n; k-- > 0;) {
    const Dims od = convs[k].out(conv_in[k]);
    bns[k].backward(od, params, a[k].data(), b[k].data(), g_out, grads, g_a);  // b[k]: relu(bn(a[k])) but the last
    convs[k].backward(conv_in[k], params, k == 0 ? x : b[k - 1].data(), g_a.data(), grads, k == 0 ? &dx : &g_prev);
    if (k > 0) {
      g_h.swap(g_prev);
      g_out = g_h.data();
    }
  }
  if (has_proj) {
    bn_proj.backward(mid, params, ap.data(), bp.data(), g_sum.data(), grads, g_proj);
    proj.backward(in, params, x, g_proj.data(), grads, &g_xproj);
    for (long i = 0; i < in.size(); ++i) dx[i] += g_xproj[i];
  } else {
    for (long i = 0; i < in.size(); ++i) dx[i] += g_sum[i];
  }
}

}  // namespace gt::vision::detail
