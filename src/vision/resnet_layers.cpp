// Forward and backward of the ResNet's layers; weight gradients are written (not accumulated): each parameter
// is used once per forward pass, and the model clears nothing between steps.
#include "src/vision/resnet_layers.hpp"

#include <algorithm>
#include <type_traits>

#include "kernels/elementwise.hpp"
#include "src/vision/classifier.hpp"
#include "src/vision/fp16.hpp"

namespace gt::vision::detail {

void ConvLayer::forward(const Dims& in, const float* params, const float* x, ConvOut& y) {
  y.bf16 = bf16;
  if (fp16) {  // the emulation (fp16.hpp): fp16 values in, fp32 products, fp16 values out
    const long wn = long(cout) * kernel * kernel * cin;
    xr.resize(size_t(in.size()));
    wr.resize(size_t(wn));
    round_to_fp16(in.size(), x, xr.data());
    round_to_fp16(wn, params + w_off, wr.data());
    y.f.resize(out(in).size());
    conv_forward(shape(in), xr.data(), wr.data(), y.f.data());
    return round_fp16_in_place(long(y.f.size()), y.f.data());
  }
  if (!bf16) {
    y.f.resize(out(in).size());
    return conv_forward(shape(in), x, params + w_off, y.f.data());
  }
  if (x) round_to_bf16(in.size(), x, x_bf16(in));
  forward_on(in, params, xb.data(), y);
}

void ConvLayer::forward_on(const Dims& in, const float* params, const bf16_bits* rounded, ConvOut& y) {
  y.bf16 = true;
  xin = rounded;
  y.h.resize(size_t(out(in).size()));
  conv_forward(shape(in), xin, params + w_off, y.h.data());
}

template <class DX>
void ConvLayer::backward(const Dims& in, const float* params, const float* x, const float* dy, float* grads,
                         Buffer<DX>* dx, bool add_dx) {
  DX* dxp = dx ? room_for(*dx, in.size()) : nullptr;
  if constexpr (std::is_same_v<DX, float>) {
    if (fp16) {  // the output gradient rounded as fp16 would hold it, and dx and dw as fp16 would return them
      dyr.resize(size_t(out(in).size()));
      round_to_fp16(long(dyr.size()), dy, dyr.data());
      conv_backward(shape(in), xr.data(), dyr.data(), wr.data(), dxp, grads + w_off);
      if (dxp) round_fp16_in_place(in.size(), dxp);
      return round_fp16_in_place(long(wr.size()), grads + w_off);
    }
    if (!bf16 && add_dx) return conv_backward_add_dx(shape(in), x, dy, params + w_off, dxp, grads + w_off);
    if (!bf16) return conv_backward(shape(in), x, dy, params + w_off, dxp, grads + w_off);
  }
  // bf16: the BN after this conv wrote dyb. A bf16 dx comes only from a bf16 conv inside a block, which always has
  // an input gradient to give (the null dx of the stem is an fp32 vector's)
  conv_backward(shape(in), xin, dyb.data(), params + w_off, dxp, grads + w_off);
}

void BatchNormLayer::init(int channels) {
  p.channels = channels;
  running_mean.assign(channels, 0.f);
  running_var.assign(channels, 1.f);
}

template <class X, class Out>
void BatchNormLayer::forward(const Dims& d, const float* params, const X* x, Out* y, bool train,
                             const float* residual) {
  const long rows = long(d.n) * d.h * d.w;
  if (train)
    batchnorm_forward_train(p, rows, x, params + gamma_off, params + beta_off, y, saved, running_mean.data(),
                            running_var.data(), residual);
  else
    batchnorm_forward_eval(p, rows, x, params + gamma_off, params + beta_off, running_mean.data(),
                           running_var.data(), y, residual);
}

template <class X>
void BatchNormLayer::forward(const Dims& d, const float* params, const X* x, Buffer<float>& y, bool train) {
  y.resize(d.size());
  forward(d, params, x, y.data(), train);
}

template <class X, class DY, class Out>
void BatchNormLayer::backward(const Dims& d, const float* params, const X* x, const DY* dy, float* grads,
                              Out* dx) const {
  batchnorm_backward(p, long(d.n) * d.h * d.w, x, dy, params + gamma_off, params + beta_off, saved, dx,
                     grads + gamma_off, grads + beta_off);
}

template <class X, class Out>
void BatchNormLayer::backward(const Dims& d, const float* params, const X* x, const BlockEnd& end, float* grads,
                              Out* dx) const {
  batchnorm_backward_block_end(p, long(d.n) * d.h * d.w, x, end, params + gamma_off, saved, dx, grads + gamma_off,
                               grads + beta_off);
}

namespace {
// Images per slice of about `slice_bytes` of a tensor of shape d (at least one), or 0 where the whole tensor is
// at most `above` bytes (or slice_bytes is 0: never)
int slice_images(const Dims& d, long slice_bytes, long above) {
  const long bytes = d.size() * long(sizeof(float));
  if (slice_bytes <= 0 || bytes <= above) return 0;
  return int(std::clamp<long>(slice_bytes / (bytes / d.n), 1, d.n));
}
}  // namespace

int ConvLayer::forward_slices(const Dims& in) const {
  if (bf16 || fp16 || !kHostBlocking) return 0;
  return slice_images(out(in), slice_bytes, 8 * slice_bytes);
}

// One Zen 5 core, batch 16, the conv and the moments of its output, out of cache at the start: 64 -> 256 1x1 at
// 56x56 13.3 -> 11.7 ms an image a slice, 128 -> 512 at 28x28 11.7 -> 10.4; outputs of 12.8 MB or less gained
// nothing (256 -> 64 at 56x56: 10.7 -> 10.9-11.2; the 3x3s at 56x56 and 28x28 lost up to 25% at one image). The
// ImageNet stem's 51 MB: 23.2 -> 22.2 ms.
void unit_conv_forward(ConvLayer& conv, BatchNormLayer& bn, const Dims& in, const float* params, const float* x,
                       ConvOut& y, bool train) {
  const int per_slice = train && x ? conv.forward_slices(in) : 0;
  if (per_slice == 0) return conv.forward(in, params, x, y);
  const Dims od = conv.out(in);
  y.bf16 = false;
  y.f.resize(size_t(od.size()));
  const long in_px = long(in.h) * in.w * in.c, out_px = long(od.h) * od.w * od.c;
  for (int n0 = 0; n0 < in.n; n0 += per_slice) {
    const int n1 = std::min(in.n, n0 + per_slice);
    const Dims slice{n1 - n0, in.h, in.w, in.c};
    float* ys = y.f.data() + n0 * out_px;
    conv_forward(conv.shape(slice), x + n0 * in_px, params + conv.w_off, ys);
    batchnorm_moments_slice(bn.p, ys, long(n1 - n0) * od.h * od.w, bn.saved);
  }
}

int ConvLayer::backward_slices(const Dims& in) const {
  const int per_slice = bf16 || fp16 ? 0 : slice_images(out(in), slice_bytes, 2 * slice_bytes);
  return per_slice > 0 && conv_backward_sums_dw(shape(in)) ? per_slice : 0;
}

void ConvLayer::backward_slice(const Dims& in, int n0, int n1, const float* params, const float* x,
                               const float* dy, float* grads, float* dx, bool add_dx) {
  const Dims slice{n1 - n0, in.h, in.w, in.c};
  conv_backward_add(shape(slice), x, dy, params + w_off, dx, grads + w_off, add_dx, n0 > 0);
}

void BatchNormLayer::backward_begin(const Dims& d, const float* params, const float* x, const float* dy,
                                    const BlockEnd* end, float* grads) const {
  const long rows = long(d.n) * d.h * d.w;
  if (end)
    batchnorm_backward_begin_block_end(p, rows, x, *end, params + gamma_off, saved, grads + gamma_off,
                                       grads + beta_off);
  else
    batchnorm_backward_begin(p, rows, x, dy, params + gamma_off, params + beta_off, saved, grads + gamma_off,
                             grads + beta_off);
}

void BatchNormLayer::backward_rows(long rows, const float* params, const float* x, const float* dy,
                                   float* dx) const {
  batchnorm_backward_rows(p, rows, x, dy, params + beta_off, saved, dx);
}

namespace {
// unit_backward over slices of images (ConvLayer::backward_slices): the BatchNorm's sums over the whole batch
// first, then per slice its dx into g_a (one slice's room, reused, so it stays in cache) and the conv's two passes
// reading it there. One Zen 5 core, ResNet-50's 1x1 units at batch 16 (dx pass and both passes, data out of
// cache at the start): 64 -> 256 at 56x56 29.1 -> 24.6 ms with one image a slice, 128 -> 512 at 28x28 22.3 ->
// 19.1, 256 -> 64 at 56x56 19.6 -> 18.5; 1024 -> 256 at 14x14, whose 3.2 MB dy stays in cache anyway, 16.6 ->
// 17.3 (so not sliced). Winograd 3x3s, whose staging copies of dy, x and dx then stay in cache too: 64 channels
// at 56x56 33 -> 25 ms (2 images a slice), 128 at 28x28 27.5 -> 23.3 (4); 256 at 14x14 (3.2 MB, not sliced) lost
// 35% at 4. The ImageNet stem (7x7 stride 2, 3 channels; no dx): 37.8 -> 32.5 ms an image a slice. Same sums as
// the whole-batch form, dw's over the slices in order.
void unit_backward_sliced(ConvLayer& conv, const Dims& conv_in, const BatchNormLayer& bn, const float* params,
                          const float* a, const float* x, const float* dy, float* grads, Buffer<float>& g_a,
                          Buffer<float>* dx, bool add_dx, const BlockEnd* end, int per_slice) {
  const Dims od = conv.out(conv_in);
  bn.backward_begin(od, params, a, dy, end, grads);
  const float* g = end ? end->g : dy;
  const long out_px = long(od.h) * od.w * od.c, in_px = long(conv_in.h) * conv_in.w * conv_in.c;
  float* slice = room_for(g_a, per_slice * out_px);
  float* dxp = dx ? room_for(*dx, conv_in.size()) : nullptr;
  for (int n0 = 0; n0 < conv_in.n; n0 += per_slice) {
    const int n1 = std::min(conv_in.n, n0 + per_slice);
    bn.backward_rows(long(n1 - n0) * od.h * od.w, params, a + n0 * out_px, g + n0 * out_px, slice);
    conv.backward_slice(conv_in, n0, n1, params, x + n0 * in_px, slice, grads, dxp ? dxp + n0 * in_px : nullptr,
                        add_dx);
  }
}
}  // namespace

template <class A, class DY, class DX>
void unit_backward(ConvLayer& conv, const Dims& conv_in, const BatchNormLayer& bn, const float* params,
                   const A* a, const float* x, const DY* dy, float* grads, Buffer<float>& g_a, Buffer<DX>* dx,
                   bool add_dx, const BlockEnd* end) {
  const Dims od = conv.out(conv_in);
  auto bn_backward = [&](auto* into) {
    if (end) bn.backward(od, params, a, *end, grads, into);
    else bn.backward(od, params, a, dy, grads, into);
  };
  if (conv.bf16) {
    bn_backward(conv.dy_bf16(conv_in));
    conv.backward(conv_in, params, x, nullptr, grads, dx);
    return;
  }
  // an fp32 conv: every operand is fp32 (bf16 ones come only from bf16 convs)
  if constexpr (std::is_same_v<A, float> && std::is_same_v<DY, float> && std::is_same_v<DX, float>) {
    if (const int per_slice = conv.backward_slices(conv_in); per_slice > 0)
      return unit_backward_sliced(conv, conv_in, bn, params, a, x, dy, grads, g_a, dx, add_dx, end, per_slice);
    bn_backward(room_for(g_a, od.size()));
    conv.backward(conv_in, params, x, g_a.data(), grads, dx, add_dx);
  }
}

// the stem's (resnet_step.cpp): its conv's output fp32 or bf16
template void unit_backward(ConvLayer&, const Dims&, const BatchNormLayer&, const float*, const float*, const float*,
                            const float*, float*, Buffer<float>&, Buffer<float>*, bool, const BlockEnd*);
template void unit_backward(ConvLayer&, const Dims&, const BatchNormLayer&, const float*, const bf16_bits*,
                            const float*, const float*, float*, Buffer<float>&, Buffer<float>*, bool,
                            const BlockEnd*);
template void BatchNormLayer::forward(const Dims&, const float*, const float*, Buffer<float>&, bool);
template void BatchNormLayer::forward(const Dims&, const float*, const bf16_bits*, Buffer<float>&, bool);

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
    unit_conv_forward(convs[k], bns[k], cur, params, h, a[k], train);  // h null: the previous BN wrote a bf16 input
    cur = convs[k].out(cur);
    if (k + 1 == n) break;  // the last unit's BN adds the shortcut, below
    a[k].visit([&](const auto* ak) {  // ReLU'd in the pass
      if (lowered(k)) {
        bns[k].forward(cur, params, ak, convs[k + 1].x_bf16(cur), train);
        h = nullptr;
      } else {
        bns[k].forward(cur, params, ak, b[k], train);
        h = b[k].data();
      }
    });
  }
  mid = cur;
  const float* shortcut = x;
  if (has_proj) {
    // In bf16 the projection reads the block input its first conv rounded (the same tensor, once)
    if (proj.bf16 && convs[0].bf16) proj.forward_on(d, params, convs[0].xin, ap);
    else unit_conv_forward(proj, bn_proj, d, params, x, ap, train);
    ap.visit([&](const auto* a_proj) { bn_proj.forward(mid, params, a_proj, bp, train); });
    shortcut = bp.data();
  }
  // out = relu(BN(a[n - 1]) + shortcut) in the BN's pass: the last BN's own output is never stored (b[n - 1] stays
  // empty; its backward, without a ReLU of its own, does not read it)
  out.resize(mid.size());
  a[n - 1].visit([&](const auto* an) { bns[n - 1].forward(mid, params, an, out.data(), train, shortcut); });
}

void ResBlock::backward(const float* params, const float* dout, float* grads, Buffer<float>& dx) {
  const size_t n = convs.size();
  const bool add = adds_into_dx();
  // The sum's gradient (dout where out > 0), written by the last unit's BatchNorm as it reads it
  // (batchnorm_backward_block_end): with an identity shortcut also the shortcut's, so into dx when the first
  // conv adds to it.
  float* g_sum_p = add && !has_proj ? room_for(dx, in.size()) : room_for(g_sum, mid.size());
  const BlockEnd end{out.data(), dout, g_sum_p};
  auto shortcut_backward = [&](Buffer<float>& into) {  // the projection's unit, its input gradient into `into`
    ap.visit([&](const auto* a_proj) {
      unit_backward(proj, in, bn_proj, params, a_proj, x, g_sum_p, grads, g_proj, &into);
    });
  };
  const float* g_out = nullptr;  // unit k's output gradient: the last unit's is end's
  const bf16_bits* g_out_b = nullptr;  // or, when set, in bf16 (the bf16 conv after the unit wrote it)
  for (size_t k = n; k-- > 0;) {
    // conv k's input: the block's, or relu(bn(a[k - 1])) (b[k - 1]; read only by an fp32 conv, a bf16 one keeps
    // its own rounded copy)
    const float* conv_x = k == 0 ? x : b[k - 1].data();
    // conv k's input gradient: the block's (fp32, summed with the shortcut's) or unit k - 1's dy, in bf16 when
    // conv k is a bf16 one
    const bool dx_bf16 = k > 0 && convs[k].bf16;
    a[k].visit([&](const auto* ak) {
      const BlockEnd* at_end = k + 1 == n ? &end : nullptr;
      auto run = [&](const auto* dy) {
        if (dx_bf16)
          unit_backward(convs[k], conv_in[k], bns[k], params, ak, conv_x, dy, grads, g_a, &g_prevb, false, at_end);
        else
          unit_backward(convs[k], conv_in[k], bns[k], params, ak, conv_x, dy, grads, g_a, k == 0 ? &dx : &g_prev,
                        k == 0 && add, at_end);
      };
      if (g_out_b) run(g_out_b);
      else run(g_out);
    });
    // first after the last unit (which wrote g_sum_p): the first conv adds into what the projection writes
    if (k + 1 == n && has_proj && add) shortcut_backward(dx);
    if (k > 0 && dx_bf16) {
      g_hb.swap(g_prevb);
      g_out_b = g_hb.data();
    } else if (k > 0) {
      g_h.swap(g_prev);
      g_out = g_h.data();
      g_out_b = nullptr;
    }
  }
  if (add) return;
  if (has_proj) {
    shortcut_backward(g_xproj);
    gt::add_inplace(dx.data(), g_xproj.data(), in.size());
  } else {
    gt::add_inplace(dx.data(), g_sum.data(), in.size());
  }
}

}  // namespace gt::vision::detail
