// Pooling: the vision code's entry points onto kernels/pool.hpp.
#include "src/vision/pool.hpp"

#include "kernels/pool.hpp"

namespace gt::vision {

void maxpool_forward(const PoolShape& s, const float* x, float* y, Buffer<long>& argmax) {
  argmax.resize(size_t(s.out_size()));
  gt::maxpool_forward(y, argmax.data(), x, s);
}

void maxpool_backward(const PoolShape& s, const float* dy, const Buffer<long>& argmax, float* dx) {
  gt::maxpool_backward(dx, dy, argmax.data(), s);
}

void avgpool_forward(const PoolShape& s, const float* x, float* y) { gt::avgpool_forward(y, x, s); }

void avgpool_backward(const PoolShape& s, const float* dy, float* dx) { gt::avgpool_backward(dx, dy, s); }

}  // namespace gt::vision
