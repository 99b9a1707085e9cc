#pragma once
// BatchNorm's passes over channels-last activations: M = N*H*W rows of C channels, a row's channels contiguous.
// The per-channel arithmetic between them (variance, running statistics, the group sum of sync BN, the backward's
// coefficients) is the caller's (src/vision/batchnorm.cpp): C values, not worth a kernel, and the group sum is a
// host collective. Storage X/Y/DY/Out is float or bf16 bits (uint16_t, kernels/half_bits.hpp), widened on load
// and rounded to nearest even on store.
//   host split: the block loops below, channels innermost with per-channel constants so that they vectorise, rows
//     in order (kBnBlock-row blocks in fp32 added into double);
//   device split: the two-level column sums of colsum.hpp (one work item per 64-row chunk and column, coalesced
//     across columns, chunks added in order: no atomics, the same bits every run) in double, and one work item per
//     element for the element-wise passes. Its moments take two reads (mean, then deviations): a GPU has the
//     bandwidth, and the two-pass form needs no per-block merge.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/colsum.hpp"
#include "kernels/half_bits.hpp"

namespace gt {

constexpr long kBnBlock = 16;  // host split: rows per fp32 block sum (the backward's sums)
constexpr long kBnMomentBlock = 64;  // host split: rows per fp32 block sum of the moments

namespace bn_detail {
KOKKOS_INLINE_FUNCTION float load(const float* p) { return *p; }
KOKKOS_INLINE_FUNCTION float load(const uint16_t* p) { return half_detail::bf16_to_float(*p); }
KOKKOS_INLINE_FUNCTION void store(float v, float* p) { *p = v; }
KOKKOS_INLINE_FUNCTION void store(float v, uint16_t* p) { *p = half_detail::bf16_from_float(v); }
// The normalised value before the ReLU and the residual, from the deviation x - sub: one fused multiply-add,
// explicitly, so that the backward's ReLU test (below) redoes the forward's bit for bit whatever a compiler
// would contract.
KOKKOS_INLINE_FUNCTION float normalised(float dev, float scale, float add) { return math::fma(dev, scale, add); }
// dy, or 0 where the fused ReLU's output was not positive, tested on the forward's value recomputed from the
// deviation x - mean the pass has read anyway (scale, add: the forward's), not on the stored output: one
// activation fewer to read in both backward passes (Relu a compile-time choice: a run-time test per element kept
// the host loops from vectorising). dy is read whatever the test says: a load under the condition became a masked
// load that GCC 12 merged through a stack slot, a store and a reload on every vector (kernels/classifier.hpp's
// relu_backward had the same).
template <bool Relu, class DY>
KOKKOS_INLINE_FUNCTION float masked(float dev, float scale, float add, const DY* dy, long i) {
  const float g = load(dy + i);
  return Relu && !(normalised(dev, scale, add) > 0.f) ? 0.f : g;
}
}  // namespace bn_detail

// Scratch (doubles) that the device split's column sums need for `rows` rows; 0 on the host split.
inline long batchnorm_partials_elems(long rows, int C) { return colsum_partials_elems(rows, 2L * C); }

// The host split's moments in pieces (batchnorm_moments below is the three in a row), for a caller that sums a
// batch a slice of rows at a time, each slice as it is written, while it is in cache: the shift k from the first
// rows (those of the first slice), the shifted sums of any rows added into s1 and s2, then s1 and s2 turned into
// the mean and M2 of all `rows` rows. Host memory only (the device split takes its moments whole).
//   x: (rows, C)   k: (C) set   s1, s2: (C) added to, then mean and M2
template <class X>
void batchnorm_moments_shift(float* k, const X* x, long rows, int C) {
  using bn_detail::load;
  const long first = std::min(rows, kBnMomentBlock);
  std::fill(k, k + C, 0.f);
  for (long m = 0; m < first; ++m)
    for (int c = 0; c < C; ++c) k[c] += load(x + m * C + c);
  const float inv_first = first > 0 ? 1.f / float(first) : 0.f;
  for (int c = 0; c < C; ++c) k[c] *= inv_first;
}
template <class X>
void batchnorm_moments_add(double* s1, double* s2, const float* k, const X* x, long rows, int C) {
  using bn_detail::load;
  std::vector<float> b1(C), b2(C);
  float* __restrict q1 = b1.data();
  float* __restrict q2 = b2.data();
  for (long m0 = 0; m0 < rows; m0 += kBnMomentBlock) {
    const long m1 = std::min(rows, m0 + kBnMomentBlock);
    std::fill(b1.begin(), b1.end(), 0.f);
    std::fill(b2.begin(), b2.end(), 0.f);
    for (long m = m0; m < m1; ++m)
      for (int c = 0; c < C; ++c) {
        const float d = load(x + m * C + c) - k[c];
        q1[c] += d;
        q2[c] += d * d;
      }
    for (int c = 0; c < C; ++c) {
      s1[c] += double(q1[c]);
      s2[c] += double(q2[c]);
    }
  }
}
inline void batchnorm_moments_finish(double* s1, double* s2, const float* k, long rows, int C) {
  const double inv_rows = rows > 0 ? 1.0 / double(rows) : 0.0;
  for (int c = 0; c < C; ++c) {
    const double s = s1[c];
    s2[c] = std::max(0.0, s2[c] - s * s * inv_rows);
    s1[c] = double(k[c]) + s * inv_rows;
  }
}

// x: (rows, C)   mean, m2: (C) set, in double: per-channel mean and sum of squared deviations from it
// partials: batchnorm_partials_elems(rows, C) scratch
// Host split, in one read of x: the deviations from a per-channel shift k, the mean of the first kBnMomentBlock
// rows, summed per block of that many rows in fp32, s1 = sum(x - k) and s2 = sum((x - k)^2), the blocks' sums
// added in double; then mean = k + s1 / M and M2 = s2 - s1^2 / M. k is a sample mean of the same channel, near
// the mean on the scale of the spread (a few standard deviations at worst, where the first rows are unusual), so
// s1^2 / M is at most a small multiple of M2 and the double difference keeps all but a digit or two of its 16;
// each fp32 block sum is of kBnMomentBlock terms of the spread's size. (The form before this, a provisional mean per 16-row block merged into double by Chan,
// Golub and LeVeque's update, spent as long on the merges' divisions as on reading x: 11-14 GB/s against 14-25
// for this at ResNet-50's shapes, out of cache, one Zen 5 core.)
template <class X>
void batchnorm_moments(double* mean, double* m2, double* partials, const X* x, long rows, int C) {
  using bn_detail::load;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("batchnorm_moments_zero", range(0, C), KOKKOS_LAMBDA(long c) {
      mean[c] = 0.0;
      m2[c] = 0.0;
    });
    column_sums<1>("batchnorm_sum", Kokkos::Array<double*, 1>{{mean}}, partials, rows, C,
                   KOKKOS_LAMBDA(long i, int c, double* acc) { acc[0] += double(load(x + i * C + c)); });
    const double inv_rows = 1.0 / double(rows);
    Kokkos::parallel_for("batchnorm_mean", range(0, C), KOKKOS_LAMBDA(long c) { mean[c] *= inv_rows; });
    column_sums<1>("batchnorm_m2", Kokkos::Array<double*, 1>{{m2}}, partials, rows, C,
                   KOKKOS_LAMBDA(long i, int c, double* acc) {
                     const double d = double(load(x + i * C + c)) - mean[c];
                     acc[0] += d * d;
                   });
    return;
  }
  std::vector<float> shift(C);
  batchnorm_moments_shift(shift.data(), x, rows, C);
  std::fill(mean, mean + C, 0.0);
  std::fill(m2, m2 + C, 0.0);
  batchnorm_moments_add(mean, m2, shift.data(), x, rows, C);
  batchnorm_moments_finish(mean, m2, shift.data(), rows, C);
}

// y = (x - sub) * scale + add per channel, plus the residual r when Add, ReLU'd when Relu, stored as Out
// (bf16: rounded as written, for the convolution that reads it).
// x, r, y: (rows, C)   sub, scale, add: (C)
template <bool Relu, bool Add, class X, class Out>
void batchnorm_affine(Out* y, const X* x, const float* sub, const float* scale, const float* add, const float* r,
                      long rows, int C) {
  using bn_detail::load;
  using bn_detail::store;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("batchnorm_affine", range(0, rows * C), KOKKOS_LAMBDA(long i) {
      const long c = i % C;
      float v = bn_detail::normalised(load(x + i) - sub[c], scale[c], add[c]);
      if (Add) v += r[i];  // not `if constexpr`: nvcc's device lambdas cannot first-capture r inside one
      store(Relu ? (v > 0.f ? v : 0.f) : v, y + i);
    });
    return;
  }
  Out* __restrict yr = y;
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      float v = bn_detail::normalised(load(x + m * C + c) - sub[c], scale[c], add[c]);
      if constexpr (Add) v += r[m * C + c];
      store(Relu ? std::max(0.f, v) : v, yr + m * C + c);
    }
}

namespace bn_detail {
// The output gradient the backward's sums read, element i of channel c, given the deviation x - mean: dy, masked
// by the fused ReLU when Relu (masked above)
template <bool Relu, class DY>
struct MaskedGrad {
  const DY* dy;
  const float* scale;
  const float* add;
  KOKKOS_INLINE_FUNCTION float operator()(long i, int c, float dev) const {
    return masked<Relu>(dev, Relu ? scale[c] : 0.f, Relu ? add[c] : 0.f, dy, i);
  }
};
// ... or, at the end of a residual block (out = max(0, BN(x) + r)), the block output's gradient where out > 0:
// the gradient of the BN's output and of the shortcut both, stored to g as it is read (each element is visited
// once by either split) instead of in a ReLU pass of its own
struct BlockEndGrad {
  const float* out;
  const float* dout;
  float* g;
  KOKKOS_INLINE_FUNCTION float operator()(long i, int, float) const {
    const float v = dout[i];  // read whatever the test says (masked's note)
    const float m = out[i] > 0.f ? v : 0.f;
    g[i] = m;
    return m;
  }
};

template <class X, class Grad>
void backward_sums(double* sdy, double* sdyd, double* partials, const X* x, const float* mean, Grad grad,
                   long rows, int C) {
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("batchnorm_sums_zero", range(0, C), KOKKOS_LAMBDA(long c) {
      sdy[c] = 0.0;
      sdyd[c] = 0.0;
    });
    column_sums<2>("batchnorm_backward_sums", Kokkos::Array<double*, 2>{{sdy, sdyd}}, partials, rows, C,
                   KOKKOS_LAMBDA(long i, int c, double* acc) {
                     const long e = i * C + c;
                     const float dev = load(x + e) - mean[c];
                     const double g = grad(e, c, dev);
                     acc[0] += g;
                     acc[1] += g * double(dev);
                   });
    return;
  }
  std::vector<float> pa(C), pb(C);
  std::fill(sdy, sdy + C, 0.0);
  std::fill(sdyd, sdyd + C, 0.0);
  for (long m0 = 0; m0 < rows; m0 += kBnBlock) {
    std::fill(pa.begin(), pa.end(), 0.f);
    std::fill(pb.begin(), pb.end(), 0.f);
    float* __restrict qa = pa.data();
    float* __restrict qb = pb.data();
    const long m1 = std::min(rows, m0 + kBnBlock);
    for (long m = m0; m < m1; ++m)
      for (int c = 0; c < C; ++c) {
        const float dev = load(x + m * C + c) - mean[c];
        const float g = grad(m * C + c, c, dev);
        qa[c] += g;
        qb[c] += g * dev;
      }
    for (int c = 0; c < C; ++c) {
      sdy[c] += double(qa[c]);
      sdyd[c] += double(qb[c]);
    }
  }
}
}  // namespace bn_detail

// The backward's two sums: sdy[c] = sum(dy), sdyd[c] = sum(dy * (x - mean)) (xhat's sum / invstd), both set, with
// dy masked where the forward's output was not positive when Relu (the fused ReLU's gradient): the forward's
// normalised value (x - mean) * scale + add, redone (bn_detail::masked), for the forward that ran
// batchnorm_affine<true, false> with sub = mean and the same scale and add (read only when Relu; may be null
// otherwise).
// x, dy: (rows, C)   mean, scale, add: (C)   sdy, sdyd: (C) set   partials: batchnorm_partials_elems(rows, C)
template <bool Relu, class X, class DY>
void batchnorm_backward_sums(double* sdy, double* sdyd, double* partials, const X* x, const DY* dy,
                             const float* mean, const float* scale, const float* add, long rows, int C) {
  bn_detail::backward_sums(sdy, sdyd, partials, x, mean, bn_detail::MaskedGrad<Relu, DY>{dy, scale, add}, rows, C);
}

// The same sums at the end of a residual block (the forward ran batchnorm_affine<true, true>: out = max(0, BN(x)
// + r)), over dy = dout masked by out > 0, which is also written to g: the gradient of the BN's output (the
// backward's dx pass then reads g as its dy, unmasked) and of the shortcut.
// x, out, dout, g: (rows, C)   mean: (C)   sdy, sdyd: (C) set   partials: batchnorm_partials_elems(rows, C)
template <class X>
void batchnorm_backward_sums_block_end(double* sdy, double* sdyd, double* partials, const X* x, const float* out,
                                       const float* dout, float* g, const float* mean, long rows, int C) {
  bn_detail::backward_sums(sdy, sdyd, partials, x, mean, bn_detail::BlockEndGrad{out, dout, g}, rows, C);
}

// dx = k * dy + b * (x - mean) + d per channel (the closed form of BatchNorm's input gradient, the coefficients
// the caller's), dy masked as in batchnorm_backward_sums when Relu (scale, add as there); dx stored as Out.
// x, dy, dx: (rows, C)   mean, scale, add, k, b, d: (C)
template <bool Relu, class X, class DY, class Out>
void batchnorm_backward_dx(Out* dx, const X* x, const DY* dy, const float* mean, const float* scale,
                           const float* add, const float* k, const float* b, const float* d, long rows, int C) {
  using bn_detail::load;
  using bn_detail::masked;
  using bn_detail::store;
  if constexpr (!kHostBlocking) {
    Kokkos::parallel_for("batchnorm_backward_dx", range(0, rows * C), KOKKOS_LAMBDA(long i) {
      const long c = i % C;
      const float dev = load(x + i) - mean[c];
      const float g = masked<Relu>(dev, Relu ? scale[c] : 0.f, Relu ? add[c] : 0.f, dy, i);
      store(k[c] * g + b[c] * dev + d[c], dx + i);
    });
    return;
  }
  Out* __restrict out = dx;
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const long i = m * C + c;
      const float dev = load(x + i) - mean[c];
      store(k[c] * masked<Relu>(dev, Relu ? scale[c] : 0.f, Relu ? add[c] : 0.f, dy, i) + b[c] * dev + d[c],
            out + i);
    }
}

}  // namespace gt
