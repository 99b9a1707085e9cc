#pragma once
// Max and average pooling over channels-last activations (kernels/pool_shape.hpp). Average pooling divides by the
// full window (padding counts as zeros), so global average pooling is window = H = W, stride 1, pad 0. Max pooling
// records the winning input's flat index for backward (ties: the first in row-major window order).
//   host split: per output pixel the taps in window order, each a pass over the contiguous channels (vectorises);
//     backward scatters each output's gradient onto its window.
//   device split: one work item per output element, the same taps in the same order (the same bits); backward
//     gathers instead of scattering (no atomics): one work item per input element adds the gradients of the windows
//     that cover it in increasing output order, the order the host split's scatter adds them in.
#include <limits>

#include "kernels/lanes.hpp"
#include "kernels/pool_shape.hpp"

namespace gt {

namespace pool_detail {

// Calls f(input flat index) for each in-range tap of output (n, p, q) channel c, in row-major window order.
template <class F>
KOKKOS_INLINE_FUNCTION void for_window(const PoolShape& s, int n, int p, int q, int c, F&& f) {
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

// Calls f(output flat index) for each output of (oh, ow) whose window covers input (n, ih, iw) channel c, in
// increasing output index.
template <class F>
KOKKOS_INLINE_FUNCTION void for_covering(const PoolShape& s, int oh, int ow, int n, int ih, int iw, int c, F&& f) {
  // output p covers ih when p * stride - pad <= ih <= p * stride - pad + window - 1
  const int hi_p = (ih + s.pad) / s.stride, hi_q = (iw + s.pad) / s.stride;
  const int lo_p_num = ih + s.pad - s.window + 1, lo_q_num = iw + s.pad - s.window + 1;
  const int lo_p = lo_p_num <= 0 ? 0 : (lo_p_num + s.stride - 1) / s.stride;
  const int lo_q = lo_q_num <= 0 ? 0 : (lo_q_num + s.stride - 1) / s.stride;
  for (int p = lo_p; p <= hi_p && p < oh; ++p)
    for (int q = lo_q; q <= hi_q && q < ow; ++q) f(((long(n) * oh + p) * ow + q) * s.c + c);
}

// (n, h, w, c) of flat index i in an n x h x w x c tensor
struct Pos {
  int n, h, w, c;
};
KOKKOS_INLINE_FUNCTION Pos unflatten(long i, int H, int W, int C) {
  const int c = int(i % C);
  long r = i / C;
  const int w = int(r % W);
  r /= W;
  return {int(r / H), int(r % H), w, c};
}

}  // namespace pool_detail

// The passes are templates on the element type (float) so that the split not taken is discarded, not compiled:
// nvcc warns of the host loops as unreachable, and of their host lambdas passed to the device-callable helpers.

// x: in_size   y, argmax: out_size, set
template <class T>
void maxpool_forward(T* y, long* argmax, const T* x, const PoolShape& s) {
  const int oh = s.out_h(), ow = s.out_w(), C = s.c;
  const float ninf = -std::numeric_limits<float>::infinity();
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("maxpool_forward", range(0, s.out_size()), KOKKOS_LAMBDA(long o) {
      const pool_detail::Pos at = pool_detail::unflatten(o, oh, ow, C);
      float best = ninf;
      long arg = -1;
      pool_detail::for_window(s, at.n, at.h, at.w, at.c, [&](long i) {
        if (arg < 0 || x[i] > best) {
          best = x[i];
          arg = i;
        }
      });
      y[o] = best;
      argmax[o] = arg;
    });
  } else {
    for (int n = 0; n < s.n; ++n)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          const long o = ((long(n) * oh + p) * ow + q) * C;
          float* __restrict yo = y + o;
          long* __restrict ao = argmax + o;
          // The window's first tap taken whole, then selects and unconditional stores: a store under the condition
          // vectorised as masked stores behind a branch on each mask (17.6 -> 10.5-11.3 ms for ResNet-50's pool at
          // batch 16, one Zen 5 core; 0.7% of its step before).
          bool first = true;
          pool_detail::for_window(s, n, p, q, 0, [&](long i) {
            const float* __restrict xi = x + i;
            if (first) {
              for (int c = 0; c < C; ++c) {
                yo[c] = xi[c];
                ao[c] = i + c;
              }
              first = false;
              return;
            }
            for (int c = 0; c < C; ++c) {
              const float v = xi[c];
              const bool take = v > yo[c];
              yo[c] = take ? v : yo[c];
              ao[c] = take ? i + c : ao[c];
            }
          });
          if (first)  // an empty window (none in valid shapes)
            for (int c = 0; c < C; ++c) {
              yo[c] = ninf;
              ao[c] = -1;
            }
        }
  }
}

// dy, argmax: out_size   dx: in_size, set
template <class T>
void maxpool_backward(T* dx, const T* dy, const long* argmax, const PoolShape& s) {
  if constexpr (!kHostBlocking) {
    const int oh = s.out_h(), ow = s.out_w();
    Kokkos::parallel_for("maxpool_backward", range(0, s.in_size()), KOKKOS_LAMBDA(long i) {
      const pool_detail::Pos at = pool_detail::unflatten(i, s.h, s.w, s.c);
      float g = 0.f;
      pool_detail::for_covering(s, oh, ow, at.n, at.h, at.w, at.c, [&](long o) {
        if (argmax[o] == i) g += dy[o];
      });
      dx[i] = g;
    });
  } else {
    for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
    for (long o = 0; o < s.out_size(); ++o)
      if (argmax[o] >= 0) dx[argmax[o]] += dy[o];
  }
}

// x: in_size   y: out_size, set
// Host split: per output pixel the taps in window order, each over the contiguous channels (as the max pool).
template <class T>
void avgpool_forward(T* y, const T* x, const PoolShape& s) {
  const float inv = 1.f / float(s.window * s.window);
  const int oh = s.out_h(), ow = s.out_w(), C = s.c;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("avgpool_forward", range(0, s.out_size()), KOKKOS_LAMBDA(long o) {
      const pool_detail::Pos at = pool_detail::unflatten(o, oh, ow, C);
      float acc = 0.f;
      pool_detail::for_window(s, at.n, at.h, at.w, at.c, [&](long i) { acc += x[i]; });
      y[o] = acc * inv;
    });
  } else {
    for (int n = 0; n < s.n; ++n)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          float* yo = y + ((long(n) * oh + p) * ow + q) * C;
          for (int c = 0; c < C; ++c) yo[c] = 0.f;
          pool_detail::for_window(s, n, p, q, 0, [&](long i) {
            for (int c = 0; c < C; ++c) yo[c] += x[i + c];
          });
          for (int c = 0; c < C; ++c) yo[c] *= inv;
        }
  }
}

// dy: out_size   dx: in_size, set
// Host split: each output's gradient spread over its window, outputs in order, channels contiguous (the gather on
// the device split adds the same terms in the same order: the same bits).
template <class T>
void avgpool_backward(T* dx, const T* dy, const PoolShape& s) {
  const float inv = 1.f / float(s.window * s.window);
  const int oh = s.out_h(), ow = s.out_w(), C = s.c;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("avgpool_backward", range(0, s.in_size()), KOKKOS_LAMBDA(long i) {
      const pool_detail::Pos at = pool_detail::unflatten(i, s.h, s.w, C);
      float g = 0.f;
      pool_detail::for_covering(s, oh, ow, at.n, at.h, at.w, at.c, [&](long o) { g += dy[o] * inv; });
      dx[i] = g;
    });
  } else {
    for (long i = 0; i < s.in_size(); ++i) dx[i] = 0.f;
    for (int n = 0; n < s.n; ++n)
      for (int p = 0; p < oh; ++p)
        for (int q = 0; q < ow; ++q) {
          const float* go = dy + ((long(n) * oh + p) * ow + q) * C;
          pool_detail::for_window(s, n, p, q, 0, [&](long i) {
            for (int c = 0; c < C; ++c) dx[i + c] += go[c] * inv;
          });
        }
  }
}

}  // namespace gt
