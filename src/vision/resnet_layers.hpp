#pragma once
// The ResNet's layers over the model's flat parameter and gradient arrays (offsets into them, not copies).
// Each layer keeps what its backward needs from the last training forward. Internal to resnet.cpp.
#include <vector>

#include "src/vision/batchnorm.hpp"
#include "src/vision/buffer.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision::detail {

// A shape in channels-last activations.
struct Dims {
  int n = 0, h = 0, w = 0, c = 0;
  long size() const { return long(n) * h * w * c; }
};

// A convolution's output: fp32, or bf16 from a bf16 convolution (the BatchNorm after it reads half the bytes).
// visit(fn) calls fn with a pointer to the one in use.
struct ConvOut {
  bool bf16 = false;
  Buffer<float> f;
  Buffer<bf16_bits> h;
  template <class Fn>
  void visit(Fn&& fn) const {
    if (bf16)
      fn(static_cast<const bf16_bits*>(h.data()));
    else
      fn(static_cast<const float*>(f.data()));
  }
};

struct ConvLayer {
  int cin = 0, cout = 0, kernel = 3, stride = 1, pad = 1;
  long w_off = 0;
  bool bf16 = false;  // multiply in bf16 (ResNetConfig::bf16)
  bool fp16 = false;  // fp16 operands and outputs, emulated in fp32 (ResNetConfig::fp16, fp16.hpp)
  bool winograd = false;  // fp32 3x3 stride 1 may run Winograd (ResNetConfig::winograd)
  long slice_bytes = 0;   // backward over slices of images of about this many bytes of dy (backward_slices)
  // fp16: the input, the weights and the output gradient rounded to fp16 (the input kept for backward-weights)
  Buffer<float> xr{}, wr{}, dyr{};
  // bf16: the input as the convolution reads it, rounded once by forward and kept for backward-weights, and the
  // output gradient, which the BatchNorm after this conv writes in bf16 (dy_bf16): no conversion in the passes
  Buffer<bf16_bits> xb{}, dyb{};
  // bf16: the input forward read and backward-weights reads again: xb, or another conv's xb of the same tensor
  // (forward_on: a block's projection reads what its first conv rounded)
  const bf16_bits* xin = nullptr;
  ConvShape shape(const Dims& in) const {
    return {in.n, in.h, in.w, cin, cout, kernel, kernel, stride, pad, bf16, winograd};
  }
  Dims out(const Dims& in) const {
    const ConvShape s = shape(in);
    return {in.n, s.out_h(), s.out_w(), cout};
  }
  // x: fp32, or null with bf16 when x_bf16() holds it (written by the BatchNorm before this conv); y: in bf16 with
  // bf16, fp32 otherwise
  void forward(const Dims& in, const float* params, const float* x, ConvOut& y);
  // bf16 only: forward on an input already rounded by another conv (kept by it until this one's backward)
  void forward_on(const Dims& in, const float* params, const bf16_bits* rounded, ConvOut& y);
  bf16_bits* x_bf16(const Dims& in) {
    xb.resize(size_t(in.size()));
    return xb.data();
  }
  bf16_bits* dy_bf16(const Dims& in) {
    dyb.resize(size_t(out(in).size()));
    return dyb.data();
  }
  // Whether backward can add the input gradient into dx (add_dx) in its own pass: fp32 operands, and a backend
  // pass that takes a beta (conv_backward_adds_dx)
  bool adds_dx(const Dims& in) const { return !bf16 && !fp16 && conv_backward_adds_dx(shape(in)); }
  // Without bf16: x and dy in fp32. With bf16 both are ignored: xb (from forward) and dyb (dy_bf16(), written by
  // the BatchNorm after this conv) hold them.
  // dx may be null (the stem's input needs no gradient); fp32, or bf16 with bf16 (the gradient a BatchNorm before
  // this conv inside a block reads). add_dx (only where adds_dx(in)): dx += the input gradient, dx already sized.
  template <class DX>
  void backward(const Dims& in, const float* params, const float* x, const float* dy, float* grads,
                Buffer<DX>* dx, bool add_dx = false);
  // Images per slice when a training forward runs over the batch a slice at a time, the BatchNorm after this conv
  // summing each slice of the output as it is written (unit_conv_forward): 0 for the whole batch at once. fp32, and
  // only where the output, more than 8 x slice_bytes, is well beyond what stays in cache until the BatchNorm's own
  // pass would read it.
  int forward_slices(const Dims& in) const;
  // Images per slice when backward runs over the batch a slice at a time, the BatchNorm after this conv making each
  // slice's dy just before (unit_backward): 0 for the whole batch at once. Only where dw can be summed over the
  // slices (conv_backward_sums_dw: the sgemm 1x1s and Winograd) and dy, more than twice slice_bytes, would not
  // stay in cache between the BatchNorm that writes it and the passes that read it
  // (ResNetConfig::backward_slice_bytes).
  int backward_slices(const Dims& in) const;
  // backward over images [n0, n1) of the batch `in` describes (x, dy and dx at image n0's rows): dx written, or
  // added to with add_dx; dw written when n0 is 0 and added to otherwise. Only where backward_slices(in) > 0.
  void backward_slice(const Dims& in, int n0, int n1, const float* params, const float* x, const float* dy,
                      float* grads, float* dx, bool add_dx);
};

struct BatchNormLayer {
  BatchNormParams p;
  long gamma_off = 0, beta_off = 0;
  Buffer<float> running_mean, running_var;  // updated by the host, read by the kernels, saved by checkpoints
  BatchNormSaved saved;
  void init(int channels);
  // x: the conv's output (fp32 or bf16); y: d.size() values, fp32 or bf16 (the input of the bf16 conv after it)
  template <class X>
  void forward(const Dims& d, const float* params, const X* x, Buffer<float>& y, bool train);
  // residual: a block's shortcut, y = relu(BN(x) + residual) (batchnorm_forward_train's)
  template <class X, class Out>
  void forward(const Dims& d, const float* params, const X* x, Out* y, bool train, const float* residual = nullptr);
  // x: the forward's input (its ReLU mask, when p.relu, is redone from it: batchnorm_backward); dy: fp32 or bf16;
  // dx: d.size() values, fp32 or bf16
  template <class X, class DY, class Out>
  void backward(const Dims& d, const float* params, const X* x, const DY* dy, float* grads, Out* dx) const;
  // ... a block's last BatchNorm (forward with a residual): dy is end's masked gradient, which it writes
  // (batchnorm_backward_block_end)
  template <class X, class Out>
  void backward(const Dims& d, const float* params, const X* x, const BlockEnd& end, float* grads, Out* dx) const;
  // The same in two steps (fp32; batchnorm_backward_begin): the sums and the parameter gradients over all d, then
  // dx for `rows` rows from x, dy and dx at the first of them (dy: end.g at a block's end)
  void backward_begin(const Dims& d, const float* params, const float* x, const float* dy, const BlockEnd* end,
                      float* grads) const;
  void backward_rows(long rows, const float* params, const float* x, const float* dy, float* dx) const;
};

// A conv - BN unit's conv in a training or evaluation forward: conv.forward, or, where conv.forward_slices(in),
// the conv a slice of images at a time, each slice's output summed into the BatchNorm's moments at once
// (batchnorm_moments_slice; the BatchNorm's forward then takes no pass of its own for them).
void unit_conv_forward(ConvLayer& conv, BatchNormLayer& bn, const Dims& in, const float* params, const float* x,
                       ConvOut& y, bool train);

// Back through a conv - BN unit: BN (and its ReLU) into `g_a` (or the conv's bf16 gradient), then the conv.
// a: the conv's output of the forward (ConvOut: fp32 or bf16); x: the conv's input; dy: fp32, or bf16 from the
// bf16 conv after this unit in a block; dx as ConvLayer::backward's. add_dx: as ConvLayer::backward's (an fp32
// conv only). end: the unit at a block's end, whose BN takes its gradient from end (dy then unused: null).
template <class A, class DY, class DX>
void unit_backward(ConvLayer& conv, const Dims& conv_in, const BatchNormLayer& bn, const float* params,
                   const A* a, const float* x, const DY* dy, float* grads, Buffer<float>& g_a, Buffer<DX>* dx,
                   bool add_dx = false, const BlockEnd* end = nullptr);

// A residual block: a chain of conv - BN units with ReLU after each but the last (fused into the BN: its
// p.relu), plus the shortcut (identity, or
// a 1x1 strided conv - BN where the shape changes), added, then ReLU. Basic (ResNet-18/34, the small-image nets):
// 3x3, 3x3. Bottleneck (ResNet-50): 1x1 reduce, 3x3, 1x1 expand to 4x the stage width, with the stride on the 3x3
// (torchvision's "v1.5" placement, which its published ResNet-50 uses).
struct ResBlock {
  std::vector<ConvLayer> convs;
  std::vector<BatchNormLayer> bns;
  ConvLayer proj;
  BatchNormLayer bn_proj;
  bool has_proj = false;
  Dims in, mid;              // the block's input and output shapes
  std::vector<Dims> conv_in;  // each conv's input shape
  const float* x = nullptr;  // the block's input of the last forward (the previous layer's output, kept there)
  std::vector<ConvOut> a;                // per unit: the conv's output
  std::vector<Buffer<float>> b;     // per unit but the last: the BN's, ReLU'd (the last one's BN writes out)
  // Unit k's BN writes the next conv's input in bf16 (convs[k + 1].xb) instead of b[k]: no fp32 copy, no conversion
  bool lowered(size_t k) const { return k + 1 < convs.size() && convs[k + 1].bf16; }
  ConvOut ap;
  Buffer<float> bp, out;
  // backward's gradients, kept between steps: freshly allocated buffers of this size come from mmap, and their
  // page faults cost more than some of the layers (a ResNet-50 step at batch 16 touches ~2 GB of them).
  // g_xproj: the projection's input gradient, only where the first conv cannot add into dx (adds_into_dx)
  Buffer<float> g_sum, g_h, g_a, g_prev, g_proj, g_xproj;
  // The block's input gradient is its first conv's plus the shortcut's. Where the first conv's backward adds into
  // its output (ConvLayer::adds_dx: the bottleneck's 1x1 in fp32), the shortcut's is written into dx first and the
  // conv's added as it is computed, instead of an add over the block's input of its own (measured in
  // docs/vision.md).
  bool adds_into_dx() const { return convs[0].adds_dx(in); }
  // bf16: the gradient between two bf16 convs' units inside the block (conv k's dx, unit k - 1's dy), as the
  // autocast convention keeps it; the block's input gradient and the shortcut's stay fp32 (they are summed)
  Buffer<bf16_bits> g_hb, g_prevb;
  void forward(const Dims& d, const float* params, const float* input, bool train);
  // dout: gradient of out; dx (resized) receives the gradient of the input
  void backward(const float* params, const float* dout, float* grads, Buffer<float>& dx);
};

}  // namespace gt::vision::detail
