#pragma once
// cuDNN convolutions on device memory: the ResNet's convolutions on device builds (issue 21; docs/vision.md,
// "What remains"), through conv.hpp's dispatch (detail::conv_*_cudnn: one CudnnConv per shape, cached per
// thread). The same three passes and layout as conv.hpp's host convolutions, for one ConvShape: activations
// N x H x W x C (cuDNN's NHWC), weights O x KH x KW x I (cuDNN's NHWC filter format, KRSC), fp32 operands with fp32
// accumulation and no TF32 (CUDNN_FMA_MATH: the host passes' numbers, up to the order of the sums). Built only on
// CUDA builds with cuDNN; `vision_conv_cudnn` (ctest label gpu1, so scripts/gpu_check.sh runs it) checks every
// pass against the host loops.
#include <cstddef>
#include <memory>

#include "src/vision/conv.hpp"

namespace gt::vision {

class CudnnConv {
 public:
  // Descriptors and the fastest algorithm of each pass that cuDNN's heuristics offer for this shape, with their
  // workspace (allocated once, the largest of the three). gt::Error naming the call when cuDNN refuses.
  // stream: the CUDA stream to run on (null: the default stream); synchronize: each call returns when its pass has
  // finished (what the tests want), otherwise it returns at once and the stream orders it (what the network wants:
  // the Kokkos kernels around it run on the same stream).
  explicit CudnnConv(const ConvShape& s, void* stream = nullptr, bool synchronize = true);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Device pointers, sizes as ConvShape's; outputs overwritten. On the current CUDA device and the constructor's
  // stream.
  void forward(const float* x, const float* w, float* y);            // y = conv(x, w)
  void backward_data(const float* dy, const float* w, float* dx);    // dx = conv^T(dy, w)
  void backward_weights(const float* x, const float* dy, float* dw);  // dw = sum over the batch of x (*) dy

  struct State;  // cuDNN's handle, descriptors, algorithms and workspace (conv_cudnn.cpp)

 private:
  ConvShape s_;
  bool sync_ = true;
  std::unique_ptr<State> st_;
};

// Whether a CUDA device is visible to this process (the test skips without one).
bool cuda_device_present();

}  // namespace gt::vision
