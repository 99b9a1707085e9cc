// Pooling kernels: one pass over the outputs, each visiting its window (windows are 2x2 or 3x3 in ResNets, or
// the whole 7x7/8x8 map for the global average).
#include "src/vision/pool.hpp"

#include <cstddef>
#include <limits>

namespace gt::vision {
namespace {

// Calls f(input flat index) for each in-range tap of output (n, p, q) channel c.
template <class F>
void for_window(const PoolShape& s, int n, int p, int q, int c, F&& f) {
  for (int r = 0; r < s.window; ++r) {
    const int ih = p * s.stride - s.pad + r;
    if (ih < 0 || ih >= s.h) continue;
    for (int t = 0; t < s.window; ++t) {
      const int iw = q * s.stride - s.pad + t;
      if (iw < 0 || iw >= s.w) continue;
      f(((long(n) * s.h + ih) * s.w + iw) * s.c + c);
    }
  }
}

template <class F>
void for_outputs(const PoolShape& s, F&& f) {
  const int oh = s.out_h(), ow = s.out_w();
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q)
        for (int c = 0; c < s.c; ++c) f(n, p, q, c, ((long(n) * oh + p) * ow + q) * s.c + c);
}

}  // namespace

// Per output pixel, the taps in window order, each a pass over the channels (contiguous, so it vectorises):
// the first largest tap wins, as a scan of each channel's window in order would pick it.
void maxpool_forward(const PoolShape& s, const float* x, float* y, std::vector<long>& argmax) {
  argmax.resize(size_t(s.out_size()));
  const int oh = s.out_h(), ow = s.out_w(), C = s.c;
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < oh; ++p)
      for (int q = 0; q < ow; ++q) {
        const long o = ((long(n) * oh + p) * ow + q) * C;
        float* yo = y + o;
        long* ao = argmax.data() + o;
        for (int c = 0; c < C; ++c) {
          yo[c] = -std::numeric_limits<float>::infinity();
          ao[c] = -1;
        }
        for_window(s, n, p, q, 0, [&](long i) {
          const float* xi = x + i;
          for (int c = 0; c < C; ++c)
            if (ao[c] < 0 || xi[c] > yo[c]) {
              yo[c] = xi[c];
              ao[c] = i + c;
            }
        });
      }
}

void maxpool_backward(const PoolShape& s, const float* dy, const std::vector<long>& argmax, float* dx) {
  for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
  for (long o = 0; o < s.out_size(); ++o)
    if (argmax[o] >= 0) dx[argmax[o]] += dy[o];
}

void avgpool_forward(const PoolShape& s, const float* x, float* y) {
  const float inv = 1.f / float(s.window * s.window);
  for_outputs(s, [&](int n, int p, int q, int c, long o) {
    float acc = 0.f;
    for_window(s, n, p, q, c, [&](long i) { acc += x[i]; });
    y[o] = acc * inv;
  });
}

void avgpool_backward(const PoolShape& s, const float* dy, float* dx) {
  const float inv = 1.f / float(s.window * s.window);
  for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
  for_outputs(s, [&](int n, int p, int q, int c, long o) {
    for_window(s, n, p, q, c, [&](long i) { dx[i] += dy[o] * inv; });
  });
}

}  // namespace gt::vision
