#pragma once
// A pooling window over channels-last activations (N x H x W x C): square windows, symmetric padding. Plain data
// without Kokkos, so that host code (src/vision) can describe a pooling without compiling through Kokkos, and the
// kernels (kernels/pool.hpp) can capture it by value on the device.

namespace gt {

struct PoolShape {
  int n = 1, h = 1, w = 1, c = 1;
  int window = 2, stride = 2, pad = 0;
  int out_h() const { return (h + 2 * pad - window) / stride + 1; }
  int out_w() const { return (w + 2 * pad - window) / stride + 1; }
  long in_size() const { return long(n) * h * w * c; }
  long out_size() const { return long(n) * out_h() * out_w() * c; }
};

}  // namespace gt
