#pragma once
// Max and average pooling over channels-last activations (N x H x W x C), square windows, symmetric padding.
// Average pooling divides by the full window (padding counts as zeros), so global average pooling is the case
// window = H = W, stride 1, pad 0. Max pooling records the winning input index for backward.
#include <vector>

namespace gt::vision {

struct PoolShape {
  int n = 1, h = 1, w = 1, c = 1;
  int window = 2, stride = 2, pad = 0;
  int out_h() const { return (h + 2 * pad - window) / stride + 1; }
  int out_w() const { return (w + 2 * pad - window) / stride + 1; }
  long in_size() const { return long(n) * h * w * c; }
  long out_size() const { return long(n) * out_h() * out_w() * c; }
};

// argmax: out_size entries, the flat input index each output took (ties: the first in row-major window order).
void maxpool_forward(const PoolShape& s, const float* x, float* y, std::vector<long>& argmax);
void maxpool_backward(const PoolShape& s, const float* dy, const std::vector<long>& argmax, float* dx);
void avgpool_forward(const PoolShape& s, const float* x, float* y);
void avgpool_backward(const PoolShape& s, const float* dy, float* dx);

}  // namespace gt::vision
