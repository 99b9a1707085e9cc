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

}  // namespace

void conv_forward_naive(const ConvShape& s, const float* x, const float* w, float* y) {
  const int oh = s.out_h(), ow = s.out_w();
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q)
        for (int k = 0; k < s.k; ++k) {
          float acc = 0.f;
          for (int r = 0; r < s.r; ++r) {
            const int ih = in_pos(p, r, s.stride, s.pad, s.h);
            if (ih < 0) continue;
            for (int t = 0; t < s.s; ++t) {
              const int iw = in_pos(q, t, s.stride, s.pad, s.w);
              if (iw < 0) continue;
              const float* xi = x + ((long(n) * s.h + ih) * s.w + iw) * s.c;
              const float* wi = w + ((long(k) * s.r + r) * s.s + t) * s.c;
              for (int c = 0; c < s.c; ++c) acc += xi[c] * wi[c];
            }
          }
          y[((long(n) * oh + p) * ow + q) * s.k + k] = acc;
        }
}

void conv_backward_data_naive(const ConvShape& s, const float* dy, const float* w, float* dx) {
  const int oh = s.out_h(), ow = s.out_w();
  for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q)
        for (int r = 0; r < s.r; ++r) {
          const int ih = in_pos(p, r, s.stride, s.pad, s.h);
          if (ih < 0) continue;
          for (int t = 0; t < s.s; ++t) {
            const int iw = in_pos(q, t, s.stride, s.pad, s.w);
            if (iw < 0) continue;
            float* dxi = dx + ((long(n) * s.h + ih) * s.w + iw) * s.c;
            for (int k = 0; k < s.k; ++k) {
              const float g = dy[((long(n) * oh + p) * ow + q) * s.k + k];
              const float* wi = w + ((long(k) * s.r + r) * s.s + t) * s.c;
              for (int c = 0; c < s.c; ++c) dxi[c] += g * wi[c];
            }
          }
        }
}

void conv_backward_weights_naive(const ConvShape& s, const float* x, const float* dy, float* dw) {
  const int oh = s.out_h(), ow = s.out_w();
  for (long i = 0; i < s.weight_size(); ++i) dw[i] = 0.f;
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q)
        for (int r = 0; r < s.r; ++r) {
          const int ih = in_pos(p, r, s.stride, s.pad, s.h);
          if (ih < 0) continue;
          for (int t = 0; t < s.s; ++t) {
            const int iw = in_pos(q, t, s.stride, s.pad, s.w);
            if (iw < 0) continue;
            const float* xi = x + ((long(n) * s.h + ih) * s.w + iw) * s.c;
            for (int k = 0; k < s.k; ++k) {
              const float g = dy[((long(n) * oh + p) * ow + q) * s.k + k];
              float* dwi = dw + ((long(k) * s.r + r) * s.s + t) * s.c;
              for (int c = 0; c < s.c; ++c) dwi[c] += g * xi[c];
            }
          }
        }
}

}  // namespace gt::vision::detail
