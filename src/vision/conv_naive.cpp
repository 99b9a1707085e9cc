// The loop-nest convolution: the fallback when the build has no oneDNN, and the second opinion tests compare
// oneDNN against. Channels-last throughout, fp32 accumulation in the order of the loops (deterministic).
#include "src/vision/conv.hpp"

namespace gt::vision::detail {
namespace {

// The input row and column a kernel tap reads for output position (oh, ow); -1 when it falls in the padding.
inline int in_pos(int o, int tap, int stride, int pad, int extent) {
  const int i = o * stride - pad + tap;
  return (i < 0 || i >= extent) ? -1 : i;
}

// Calls f(output offset, input pixel offset, weight tap offset) for every (output pixel, kernel tap) pair that
// reads inside the image; offsets point at the first channel (C input channels, K output channels follow).
template <class F>
void for_each_tap(const ConvShape& s, F&& f) {
  const int oh = s.out_h(), ow = s.out_w();
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q)
        for (int r = 0; r < s.r; ++r) {
          const int ih = in_pos(p, r, s.stride, s.pad, s.h);
          if (ih < 0) continue;
          for (int t = 0; t < s.s; ++t) {
            const int iw = in_pos(q, t, s.stride, s.pad, s.w);
            if (iw < 0) continue;
            f(((long(n) * oh + p) * ow + q) * s.k, ((long(n) * s.h + ih) * s.w + iw) * s.c,
              (long(r) * s.s + t) * s.c);
          }
        }
}

}  // namespace

void conv_forward_naive(const ConvShape& s, const float* x, const float* w, float* y) {
  const long k_stride = long(s.r) * s.s * s.c;  // from one output channel's filter to the next
  for (long i = 0; i < s.out_size(); ++i) y[i] = 0.f;
  for_each_tap(s, [&](long yo, long xo, long wo) {
    for (int k = 0; k < s.k; ++k) {
      float acc = 0.f;
      for (int c = 0; c < s.c; ++c) acc += x[xo + c] * w[k * k_stride + wo + c];
      y[yo + k] += acc;
    }
  });
}

void conv_backward_data_naive(const ConvShape& s, const float* dy, const float* w, float* dx) {
  const long k_stride = long(s.r) * s.s * s.c;
  for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
  for_each_tap(s, [&](long yo, long xo, long wo) {
    for (int k = 0; k < s.k; ++k)
      for (int c = 0; c < s.c; ++c) dx[xo + c] += dy[yo + k] * w[k * k_stride + wo + c];
  });
}

void conv_backward_weights_naive(const ConvShape& s, const float* x, const float* dy, float* dw) {
  const long k_stride = long(s.r) * s.s * s.c;
  for (long i = 0; i < s.weight_size(); ++i) dw[i] = 0.f;
  for_each_tap(s, [&](long yo, long xo, long wo) {
    for (int k = 0; k < s.k; ++k)
      for (int c = 0; c < s.c; ++c) dw[k * k_stride + wo + c] += dy[yo + k] * x[xo + c];
  });
}

}  // namespace gt::vision::detail
