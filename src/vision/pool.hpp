#pragma once
// Max and average pooling over channels-last activations (N x H x W x C), square windows, symmetric padding
// (gt::PoolShape, kernels/pool_shape.hpp). Average pooling divides by the full window (padding counts as zeros), so
// global average pooling is the case window = H = W, stride 1, pad 0. Max pooling records the winning input index
// for backward. The kernels are kernels/pool.hpp's (host and device splits).
#include "kernels/pool_shape.hpp"
#include "src/vision/buffer.hpp"

namespace gt::vision {

using gt::PoolShape;

// argmax: out_size entries, the flat input index each output took (ties: the first in row-major window order).
void maxpool_forward(const PoolShape& s, const float* x, float* y, Buffer<long>& argmax);
void maxpool_backward(const PoolShape& s, const float* dy, const Buffer<long>& argmax, float* dx);
void avgpool_forward(const PoolShape& s, const float* x, float* y);
void avgpool_backward(const PoolShape& s, const float* dy, float* dx);

}  // namespace gt::vision
