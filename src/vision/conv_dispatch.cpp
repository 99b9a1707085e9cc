// Chooses the convolution backend: cuDNN on device builds, oneDNN when a host build has it, the loop nest otherwise
// or when asked.
#include <cstdint>
#include <cstring>
#include <vector>

#include "src/core/error.hpp"
#include "src/vision/buffer.hpp"
#include "src/vision/conv.hpp"

namespace gt::vision {
namespace detail {
#ifndef GRIDTRAIN_HAVE_ONEDNN
// Without oneDNN the oneDNN entry points exist only so that the dispatch links; they are never called.
bool onednn_available() { return false; }
bool onednn_bf16_native() { return false; }
bool onednn_uses_winograd(const ConvShape&) { return false; }
void conv_forward_onednn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_data_onednn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_weights_onednn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_onednn(const ConvShape&, const float*, const float*, const float*, float*, float*) {}
void conv_forward_onednn(const ConvShape&, const bf16_bits*, const float*, float*) {}
void conv_forward_onednn(const ConvShape&, const bf16_bits*, const float*, bf16_bits*) {}
void conv_backward_onednn(const ConvShape&, const bf16_bits*, const bf16_bits*, const float*, float*, float*) {}
bool gemm_backward_data(const ConvShape&) { return false; }
bool gemm_backward_weights(const ConvShape&) { return false; }
void conv_backward_data_gemm(const ConvShape&, const float*, const float*, float*, float) {}
void conv_backward_weights_gemm(const ConvShape&, const float*, const float*, float*, size_t, float) {}
#endif
#ifndef GRIDTRAIN_HAVE_CUDNN
bool cudnn_available() { return false; }
void conv_forward_cudnn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_data_cudnn(const ConvShape&, const float*, const float*, float*) {}
void conv_backward_weights_cudnn(const ConvShape&, const float*, const float*, float*) {}
#endif
}  // namespace detail

namespace {
// The process's choice. One per process (not per model): the backend is a property of the build and the run.
ConvBackend& chosen() {
  static ConvBackend b = detail::cudnn_available()   ? ConvBackend::cudnn
                         : detail::onednn_available() ? ConvBackend::onednn
                                                      : ConvBackend::naive;
  return b;
}

// cuDNN takes fp32 operands only so far; the bf16 forms refuse it (a device build refuses bf16 ResNets before this)
void fp32_on_cudnn(const ConvShape& s) {
  if (s.bf16 && chosen() == ConvBackend::cudnn)
    throw Error("convolution: bf16 operands on cuDNN are not built yet (fp32 only on device builds)");
}
}  // namespace

ConvBackend conv_backend() { return chosen(); }

void set_conv_backend(ConvBackend b) {
  if (b == ConvBackend::onednn && !detail::onednn_available())
    throw Error("the convolution backend onednn is not in this build (Debian: apt-get install libdnnl-dev)");
  if (b == ConvBackend::cudnn && !detail::cudnn_available())
    throw Error("the convolution backend cudnn is not in this build (a CUDA build with cuDNN)");
  chosen() = b;
}

std::string conv_backend_name(ConvBackend b) {
  return b == ConvBackend::cudnn ? "cudnn" : b == ConvBackend::onednn ? "onednn" : "naive";
}

bool conv_bf16_native() { return chosen() == ConvBackend::onednn && detail::onednn_bf16_native(); }

bool conv_uses_winograd(const ConvShape& s) {
  return s.winograd && !s.bf16 && chosen() == ConvBackend::onednn && detail::onednn_uses_winograd(s);
}

namespace {

// Emulated bf16 (no native kernel, or the loop backend): the operands' rounded copies, kept per thread between
// calls so that a step does not allocate (a per-thread cache, like oneDNN's primitives; nothing else is shared).
struct Rounded {
  std::vector<float> a, b;
  const float* of(std::vector<float>& v, const float* p, long n) {
    v.resize(size_t(n));
    for (long i = 0; i < n; ++i) v[size_t(i)] = round_bf16(p[i]);
    return v.data();
  }
  // bf16 operands widened (exactly) for the fp32 passes
  const float* of(std::vector<float>& v, const bf16_bits* p, long n) {
    v.resize(size_t(n));
    widen_bf16(n, p, v.data());
    return v.data();
  }
};
Rounded& rounded() {
  thread_local Rounded r;
  return r;
}

bool emulate(const ConvShape& s) { return s.bf16 && !conv_bf16_native(); }

// The fp32 pass that emulates a bf16 one: direct, so that products of bf16 values stay exact as on bf16 units.
ConvShape fp32(ConvShape s) {
  s.bf16 = false;
  s.winograd = false;
  return s;
}

}  // namespace

void conv_forward(const ConvShape& s, const float* x, const float* w, float* y) {
  fp32_on_cudnn(s);
  if (chosen() == ConvBackend::cudnn) return detail::conv_forward_cudnn(s, x, w, y);
  if (emulate(s)) {
    Rounded& r = rounded();
    return conv_forward(fp32(s), r.of(r.a, x, s.in_size()), r.of(r.b, w, s.weight_size()), y);
  }
  if (chosen() == ConvBackend::onednn) detail::conv_forward_onednn(s, x, w, y);
  else detail::conv_forward_naive(s, x, w, y);
}

void conv_backward_data(const ConvShape& s, const float* dy, const float* w, float* dx) {
  fp32_on_cudnn(s);
  if (chosen() == ConvBackend::cudnn) return detail::conv_backward_data_cudnn(s, dy, w, dx);
  if (emulate(s)) {
    Rounded& r = rounded();
    return conv_backward_data(fp32(s), r.of(r.a, dy, s.out_size()), r.of(r.b, w, s.weight_size()), dx);
  }
  if (chosen() == ConvBackend::onednn) detail::conv_backward_data_onednn(s, dy, w, dx);
  else detail::conv_backward_data_naive(s, dy, w, dx);
}

void conv_backward_weights(const ConvShape& s, const float* x, const float* dy, float* dw) {
  fp32_on_cudnn(s);
  if (chosen() == ConvBackend::cudnn) return detail::conv_backward_weights_cudnn(s, x, dy, dw);
  if (emulate(s)) {
    Rounded& r = rounded();
    return conv_backward_weights(fp32(s), r.of(r.a, x, s.in_size()), r.of(r.b, dy, s.out_size()), dw);
  }
  if (chosen() == ConvBackend::onednn) detail::conv_backward_weights_onednn(s, x, dy, dw);
  else detail::conv_backward_weights_naive(s, x, dy, dw);
}

void conv_backward(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw) {
  fp32_on_cudnn(s);
  if (!emulate(s) && chosen() == ConvBackend::onednn) return detail::conv_backward_onednn(s, x, dy, w, dx, dw);
  if (emulate(s)) {  // dy rounded once (r.b), x and w by the calls below (r.a)
    Rounded& r = rounded();
    const float* dy16 = r.of(r.b, dy, s.out_size());
    conv_backward_weights(fp32(s), r.of(r.a, x, s.in_size()), dy16, dw);
    if (dx) conv_backward_data(fp32(s), dy16, r.of(r.a, w, s.weight_size()), dx);
    return;
  }
  conv_backward_weights(s, x, dy, dw);
  if (dx) conv_backward_data(s, dy, w, dx);
}

bool conv_backward_adds_dx(const ConvShape& s) {
  return !s.bf16 && chosen() == ConvBackend::onednn && detail::gemm_backward_data(s);
}

void conv_backward_add_dx(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw) {
  conv_backward_add(s, x, dy, w, dx, dw, true, false);
}

bool conv_backward_sums_dw(const ConvShape& s) {
  const bool image_stem = !s.bf16 && chosen() == ConvBackend::onednn && s.c <= 4 && s.r == 7;  // RGB, 7x7
  return conv_backward_adds_dx(s) || conv_uses_winograd(s) || image_stem;
}

void conv_backward_add(const ConvShape& s, const float* x, const float* dy, const float* w, float* dx, float* dw,
                       bool add_dx, bool add_dw) {
  if (add_dx && !conv_backward_adds_dx(s))
    throw Error("convolution: this shape's backward-data cannot add into its output (conv_backward_adds_dx)");
  if (add_dw && !conv_backward_sums_dw(s))
    throw Error("convolution: this shape's backward-weights cannot add into its output (conv_backward_sums_dw)");
  if (add_dx && !dx) throw Error("convolution: conv_backward_add with add_dx and no input gradient");
  if (conv_backward_adds_dx(s)) {  // sgemm: both betas in the calls
    detail::conv_backward_weights_gemm(s, x, dy, dw, detail::kPatchBudget, add_dw ? 1.f : 0.f);
    if (dx) detail::conv_backward_data_gemm(s, dy, w, dx, add_dx ? 1.f : 0.f);
    return;
  }
  if (!add_dw) return conv_backward(s, x, dy, w, dx, dw);
  thread_local std::vector<float> part;  // this slice's dw (the thread's, kept: see Rounded)
  float* p = detail::room_for(part, s.weight_size());
  conv_backward(s, x, dy, w, dx, p);
  float* __restrict sum = dw;
  for (long i = 0; i < s.weight_size(); ++i) sum[i] += p[i];
}

void conv_forward(const ConvShape& s, const bf16_bits* xb, const float* w, float* y) {
  fp32_on_cudnn(s);
  if (s.bf16 && conv_bf16_native()) return detail::conv_forward_onednn(s, xb, w, y);
  Rounded& r = rounded();  // widened x (r.a) and rounded w (r.b): the fp32 pass on the same values
  conv_forward(fp32(s), r.of(r.a, xb, s.in_size()), r.of(r.b, w, s.weight_size()), y);
}

void conv_forward(const ConvShape& s, const bf16_bits* xb, const float* w, bf16_bits* yb) {
  fp32_on_cudnn(s);
  if (s.bf16 && conv_bf16_native()) return detail::conv_forward_onednn(s, xb, w, yb);
  thread_local std::vector<float> y;  // the fp32 result, rounded once as a whole (per thread, kept: see Rounded)
  y.resize(size_t(s.out_size()));
  conv_forward(s, xb, w, y.data());
  round_to_bf16(s.out_size(), y.data(), yb);
}

void conv_backward(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, float* dx,
                   float* dw) {
  fp32_on_cudnn(s);
  if (s.bf16 && conv_bf16_native()) return detail::conv_backward_onednn(s, xb, dyb, w, dx, dw);
  Rounded& r = rounded();
  const float* dy = r.of(r.b, dyb, s.out_size());
  conv_backward_weights(fp32(s), r.of(r.a, xb, s.in_size()), dy, dw);
  if (dx) conv_backward_data(fp32(s), dy, r.of(r.a, w, s.weight_size()), dx);
}

void conv_backward(const ConvShape& s, const bf16_bits* xb, const bf16_bits* dyb, const float* w, bf16_bits* dxb,
                   float* dw) {
  fp32_on_cudnn(s);
  if (s.bf16 && conv_bf16_native()) return detail::conv_backward_onednn(s, xb, dyb, w, dxb, dw);
  thread_local std::vector<float> dx;  // the fp32 result, rounded once as a whole (as the forward's above)
  dx.resize(size_t(s.in_size()));
  conv_backward(s, xb, dyb, w, dx.data(), dw);
  round_to_bf16(s.in_size(), dx.data(), dxb);
}

}  // namespace gt::vision
