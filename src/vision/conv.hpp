#pragma once
// 2-D convolution for the vision models (issue 21), channels-last: activations N x H x W x C, weights
// O x KH x KW x I (the layout oneDNN calls acdb for both), no bias (every ResNet conv is followed by BatchNorm).
// Three passes: forward, backward-data (the gradient of the input) and backward-weights. The backend is cuDNN on
// device builds (the pointers are then device memory; conv_cudnn.hpp), oneDNN when a host build has it
// (primitives created on first use and cached per thread by shape, on the rank's one thread), otherwise a naive
// loop nest; conv_backend() names the one in use.
#include <cstddef>
#include <string>

#include "src/vision/bf16.hpp"

namespace gt::vision {

struct ConvShape {
  int n = 1, h = 1, w = 1, c = 1;  // input batch, height, width, channels
  int k = 1;                       // output channels
  int r = 1, s = 1;                // kernel height, width
  int stride = 1, pad = 1;         // the same in both dimensions, symmetric padding
  // Multiply in bfloat16: x, w and dy are rounded to bf16 (nearest even), products summed in fp32, results fp32
  // (the mixed precision of train.precision = "bf16", as PyTorch's autocast runs convolutions on bf16 CPUs).
  bool bf16 = false;
  // Allow Winograd F(4x4, 3x3) for an fp32 3x3 stride-1 shape (model.conv_algorithm = "winograd"): 4x fewer
  // multiplications in the products, at 1.4-2.6x the direct sums' rounding error (~1e-6 relative; tested). Used where
  // it pays (64 or more channels in and out) and the backend has a JIT kernel for it (oneDNN: AVX-512 CPUs); the
  // direct sums otherwise, and always for bf16 and the loop backend. conv_uses_winograd(s) says which.
  bool winograd = false;
  int out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int out_w() const { return (w + 2 * pad - s) / stride + 1; }
  long in_size() const { return long(n) * h * w * c; }
  long out_size() const { return long(n) * out_h() * out_w() * k; }
  long weight_size() const { return long(k) * r * s * c; }
};

enum class ConvBackend { naive, onednn, cudnn };

// The backend in use: cuDNN on device builds, else oneDNN when compiled in, unless `set_conv_backend(naive)` chose
// the loops (tests do, to check one against the other).
ConvBackend conv_backend();
void set_conv_backend(ConvBackend b);  // throws gt::Error when the build has no such backend
std::string conv_backend_name(ConvBackend b);
// Whether ConvShape::bf16 runs on native bf16 kernels (oneDNN's JIT for this CPU: AVX512_BF16 or AMX). Otherwise
// it is emulated: the operands are rounded to bf16 in fp32 copies and the fp32 pass runs on them, the same math
// (a product of two bf16 values is exact in fp32) without the speed.
bool conv_bf16_native();
// Whether the passes of shape s run Winograd (ConvShape::winograd asked for it, and the backend has it here).
bool conv_uses_winograd(const ConvShape& s);

// y = conv(x, w)                           x: in_size, w: weight_size, y: out_size (overwritten)
void conv_forward(const ConvShape& s, const float* x, const float* w, float* y);
// dx = conv^T(dy, w)                       dx overwritten
void conv_backward_data(const ConvShape& s, const float* dy, const float* w, float* dx);
// dw = sum over the batch of x (*) dy      dw overwritten
void conv_backward_weights(const ConvShape& s, const float* x, const float* dy, float* dw);
// Both backward passes of a layer (dx skipped when null), the same results as the two calls above; with bf16 the
// gradient dy is converted once for both.
void conv_backward(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw);
// Whether conv_backward_add_dx runs for shape s: the backend's backward-data pass takes a beta (the fp32 1x1
// stride-1 shapes, which run as sgemm: conv_gemm.cpp). A residual block's input gradient is its first conv's plus
// the shortcut's; with this the sum is made as the conv's is written, not in a pass of its own.
bool conv_backward_adds_dx(const ConvShape& s);
// conv_backward with dx += conv^T(dy, w) (dx not null); only where conv_backward_adds_dx(s), gt::Error otherwise.
void conv_backward_add_dx(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw);
// Whether conv_backward_add takes add_dw for shape s: fp32 passes that were measured to gain from running a
// layer's backward over its batch in slices of images (ConvLayer::backward_slices): the sgemm 1x1s, whose dw takes
// a beta, and Winograd and the ImageNet stem (7x7 on 3 channels), whose slices' dw are summed through a scratch
// copy. (The strided 3x3s neither gained nor lost.)
bool conv_backward_sums_dw(const ConvShape& s);
// conv_backward with a beta on each output: dx = conv^T(dy, w) (+ dx when add_dx; dx may be null without it),
// dw = sum of x (*) dy (+ dw when add_dw). add_dx only where conv_backward_adds_dx(s), add_dw only where
// conv_backward_sums_dw(s), gt::Error otherwise. With add_dw a layer's backward runs over its batch in slices of
// images, s describing one slice.
void conv_backward_add(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw,
                       bool add_dx, bool add_dw);

// The same passes (ConvShape::bf16 only) for a caller that keeps its operands in bf16: xb is x already rounded
// (in_size), dyb dy (out_size); the results are fp32, equal to the fp32-operand forms' on the same values. They
// save the conversions those make on every call: a layer converts its input once in forward and keeps it for
// backward-weights, and BatchNorm's backward writes its gradient in bf16 for the convolution before it.
void conv_forward(const ConvShape& s, const bf16_bits* xb, const float* w, float* y);
void conv_backward(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, float* dx,
                   float* dw);
// ... with y written in bf16: the fp32 sums rounded to nearest even as they are stored (oneDNN's bf16 destination),
// for a BatchNorm that reads bf16 (half the bytes of the element-wise passes that follow every convolution)
void conv_forward(const ConvShape& s, const bf16_bits* xb, const float* w, bf16_bits* yb);
// ... and backward with dx written in bf16 the same way (oneDNN's bf16 diff_src; PyTorch's autocast keeps these
// gradients in bf16 too), for the BatchNorm backward before this conv in a residual block; dw stays fp32
void conv_backward(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, bf16_bits* dxb,
                   float* dw);

namespace detail {
void conv_forward_naive(const ConvShape& s, const float* x, const float* w, float* y);
void conv_backward_data_naive(const ConvShape& s, const float* dy, const float* w, float* dx);
void conv_backward_weights_naive(const ConvShape& s, const float* x, const float* dy, float* dw);
bool onednn_available();
bool onednn_bf16_native();  // oneDNN has a JIT (not reference) bf16 kernel for every pass on this CPU
bool onednn_uses_winograd(const ConvShape& s);
void conv_forward_onednn(const ConvShape& s, const float* x, const float* w, float* y);
void conv_backward_data_onednn(const ConvShape& s, const float* dy, const float* w, float* dx);
void conv_backward_weights_onednn(const ConvShape& s, const float* x, const float* dy, float* dw);
void conv_backward_onednn(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw);
void conv_forward_onednn(const ConvShape& s, const bf16_bits* xb, const float* w, float* y);
void conv_forward_onednn(const ConvShape& s, const bf16_bits* xb, const float* w, bf16_bits* yb);
void conv_backward_onednn(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, float* dx,
                          float* dw);
void conv_backward_onednn(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w,
                          bf16_bits* dxb, float* dw);
// oneDNN's sgemm in place of some fp32 passes (conv_gemm.cpp): whether shape s runs its backward-data or
// backward-weights that way, and the passes. The strided shapes' backward-weights gathers the input's patches into
// at most `budget` bytes at a time (the batch in chunks of images; at least one image a chunk).
bool gemm_backward_data(const ConvShape& s);
bool gemm_backward_weights(const ConvShape& s);
constexpr size_t kPatchBudget = size_t(32) << 20;
// dx = conv^T(dy, w) + beta * dx (beta 0: dx overwritten, never read)
void conv_backward_data_gemm(const ConvShape& s, const float* dy, const float* w, float* dx, float beta = 0.f);
// dw = sum of x (*) dy + beta * dw
void conv_backward_weights_gemm(const ConvShape& s, const float* x, const float* dy, float* dw,
                                size_t budget = kPatchBudget, float beta = 0.f);
// cuDNN on device memory (conv_cudnn.cpp; fp32 only so far), on the stream of the Kokkos kernels around them
bool cudnn_available();
void conv_forward_cudnn(const ConvShape& s, const float* x, const float* w, float* y);
void conv_backward_data_cudnn(const ConvShape& s, const float* dy, const float* w, float* dx);
void conv_backward_weights_cudnn(const ConvShape& s, const float* x, const float* dy, float* dw);
}  // namespace detail

}  // namespace gt::vision
