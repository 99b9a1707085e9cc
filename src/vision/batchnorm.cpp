// BatchNorm kernels. Sums over rows are taken in two levels: fp32 partial sums over blocks of kBlock rows, added
// into double accumulators. M = N*H*W reaches 10^5 per channel at batch 128 on 28x28, where one fp32 running sum
// would lose digits that the variance (a sum of squared deviations) needs; a block's fp32 sum of 16 terms is off by
// at most ~16 ulp of its magnitude, and the blocks add up in double. Every loop runs over channels innermost on
// fp32 with per-channel constants, so it vectorises (a double accumulator per element did not: the backward's
// sums were a quarter of a bf16 ResNet-50 step in perf, 2026-12-06).
#include "src/vision/batchnorm.hpp"

#include <algorithm>
#include <cmath>

namespace gt::vision {
namespace {

constexpr long kBlock = 16;

// a[c] += sum over rows of ta(i, c), b[c] += tb(i, c), i = m * C + c: fp32 within blocks of kBlock rows, double
// across them.
template <class TermA, class TermB>
void sum_rows2(long rows, int C, std::vector<double>& a, std::vector<double>& b, TermA ta, TermB tb) {
  std::vector<float> pa(C), pb(C);
  for (long m0 = 0; m0 < rows; m0 += kBlock) {
    std::fill(pa.begin(), pa.end(), 0.f);
    std::fill(pb.begin(), pb.end(), 0.f);
    float* __restrict qa = pa.data();
    float* __restrict qb = pb.data();
    const long m1 = std::min(rows, m0 + kBlock);
    for (long m = m0; m < m1; ++m)
      for (int c = 0; c < C; ++c) {
        qa[c] += ta(m * C + c, c);
        qb[c] += tb(m * C + c, c);
      }
    for (int c = 0; c < C; ++c) {
      a[c] += double(qa[c]);
      b[c] += double(qb[c]);
    }
  }
}

inline void store(float v, float* p) { *p = v; }
inline void store(float v, bf16_bits* p) { *p = to_bf16(v); }
inline float load(const float* p) { return *p; }
inline float load(const bf16_bits* p) { return from_bf16(*p); }

// y = (x - sub) * scale + add per channel, plus the residual r (Add), then ReLU'd with Relu, stored as Out (bf16:
// rounded as written, for the convolution that reads it).
template <bool Relu, bool Add, class X, class Out>
void affine(long rows, int C, const X* x, const float* sub, const float* scale, const float* add, const float* r,
            Out* __restrict y) {
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      float v = (load(x + m * C + c) - sub[c]) * scale[c] + add[c];
      if constexpr (Add) v += r[m * C + c];
      store(Relu ? std::max(0.f, v) : v, y + m * C + c);
    }
}

// residual: the end of a residual block, max(0, BN(x) + r) (batchnorm.hpp); otherwise BN(x), ReLU'd with relu
template <class X, class Out>
void affine(bool relu, long rows, int C, const X* x, const float* sub, const float* scale, const float* add,
            const float* residual, Out* y) {
  if (residual)
    affine<true, true>(rows, C, x, sub, scale, add, residual, y);
  else if (relu)
    affine<true, false>(rows, C, x, sub, scale, add, residual, y);
  else
    affine<false, false>(rows, C, x, sub, scale, add, residual, y);
}

// Per-channel count, mean and sum of squared deviations (M2) of x in one pass over memory. Per block of kBlock rows:
// the block's fp32 sums give a provisional mean m', then the block's rows, still in L1/L2, give the deviations'
// sums s1 = sum(x - m') and s2 = sum((x - m')^2) in fp32 (m' is within rounding of the block's mean, so s1 is tiny
// and s2 loses nothing to cancellation). In double: the block's mean m' + s1/n and M2 s2 - s1^2/n, merged into the
// running per-channel figures by Chan, Golub and LeVeque's pairwise update. This replaced a pass for the mean and a
// second pass over memory for the deviations from it (three reads of x per forward with the normalisation's).
template <class X>
void moments(long rows, int C, const X* x, std::vector<double>& mean, std::vector<double>& m2) {
  std::vector<float> part(C), s1(C), s2(C);
  float* __restrict pm = part.data();
  float* __restrict q1 = s1.data();
  float* __restrict q2 = s2.data();
  double count = 0.0;
  for (long m0 = 0; m0 < rows; m0 += kBlock) {
    const long m1 = std::min(rows, m0 + kBlock);
    const float nb = float(m1 - m0);
    std::fill(part.begin(), part.end(), 0.f);
    for (long m = m0; m < m1; ++m)
      for (int c = 0; c < C; ++c) pm[c] += load(x + m * C + c);
    for (int c = 0; c < C; ++c) pm[c] /= nb;
    std::fill(s1.begin(), s1.end(), 0.f);
    std::fill(s2.begin(), s2.end(), 0.f);
    for (long m = m0; m < m1; ++m)
      for (int c = 0; c < C; ++c) {
        const float d = load(x + m * C + c) - pm[c];
        q1[c] += d;
        q2[c] += d * d;
      }
    const double n_b = double(m1 - m0), total = count + n_b;
    for (int c = 0; c < C; ++c) {
      const double mean_b = double(pm[c]) + double(q1[c]) / n_b;
      const double m2_b = double(q2[c]) - double(q1[c]) * double(q1[c]) / n_b;
      const double delta = mean_b - mean[c];
      mean[c] += delta * (n_b / total);
      m2[c] += m2_b + delta * delta * (count * n_b / total);
    }
    count = total;
  }
}

}  // namespace

template <class X, class Out>
void batchnorm_forward_train(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                             const float* beta, Out* y, BatchNormSaved& saved, float* running_mean,
                             float* running_var, const float* residual) {
  const int C = p.channels;
  std::vector<double> mean(C, 0.0), sq(C, 0.0);  // this rank's mean and squared deviations from it
  moments(rows, C, x, mean, sq);
  double n = double(rows);  // the rows the statistics are over: this batch's, or the group's
  if (p.group_sum) {
    // The group's mean from the ranks' sums, then each rank's squared deviations moved to that mean
    // (sq + rows * (mean - group mean)^2) and summed: the group's M2, as if over all its rows at once.
    std::vector<double> sum(C + 1);
    for (int c = 0; c < C; ++c) sum[c] = mean[c] * double(rows);
    sum[C] = double(rows);
    p.group_sum(sum.data(), C + 1);
    n = sum[C];
    for (int c = 0; c < C; ++c) {
      const double group_mean = sum[c] / n, d = mean[c] - group_mean;
      sq[c] += double(rows) * d * d;
      mean[c] = group_mean;
    }
    p.group_sum(sq.data(), C);
  }
  saved.mean.assign(C, 0.f);
  saved.invstd.assign(C, 0.f);
  saved.rows = n;
  for (int c = 0; c < C; ++c) {
    const double var = sq[c] / n;
    saved.mean[c] = float(mean[c]);
    saved.invstd[c] = float(1.0 / std::sqrt(var + p.eps));
    const double unbiased = n > 1 ? sq[c] / (n - 1) : var;
    running_mean[c] = float((1.0 - p.momentum) * running_mean[c] + p.momentum * mean[c]);
    running_var[c] = float((1.0 - p.momentum) * running_var[c] + p.momentum * unbiased);
  }
  std::vector<float> scale(C);
  for (int c = 0; c < C; ++c) scale[c] = gamma[c] * saved.invstd[c];
  affine(p.relu, rows, C, x, saved.mean.data(), scale.data(), beta, residual, y);
}

// y = gamma (x - running_mean) / sqrt(running_var + eps) + beta: the deviation first, as in training, so that a
// large mean does not cancel digits
template <class X, class Out>
void batchnorm_forward_eval(const BatchNormParams& p, long rows, const X* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, Out* y,
                            const float* residual) {
  const int C = p.channels;
  std::vector<float> scale(C);
  for (int c = 0; c < C; ++c) scale[c] = gamma[c] / std::sqrt(running_var[c] + p.eps);
  affine(p.relu, rows, C, x, running_mean, scale.data(), beta, residual, y);
}

namespace {

// The backward's element-wise parts, with the fused ReLU's mask (y > 0) on dy a compile-time choice: a run-time
// test per element kept the loops from vectorising.
template <bool Relu, class Y, class DY>
float masked(const Y* y, const DY* dy, long i) {
  return Relu && !(load(y + i) > 0.f) ? 0.f : load(dy + i);
}

// sdy[c] += sum(dy), sdyd[c] += sum(dy * (x - mean)) (xhat's sum / invstd)
template <bool Relu, class X, class Y, class DY>
void backward_sums(long rows, int C, const X* x, const Y* y, const DY* dy, const float* mean,
                   std::vector<double>& sdy, std::vector<double>& sdyd) {
  sum_rows2(
      rows, C, sdy, sdyd, [=](long i, int) { return masked<Relu>(y, dy, i); },
      [=](long i, int c) { return masked<Relu>(y, dy, i) * (load(x + i) - mean[c]); });
}

template <bool Relu, class X, class Y, class DY, class Out>
void backward_dx(long rows, int C, const X* x, const Y* y, const DY* dy, const float* mean,
                 const float* k, const float* b, const float* d, Out* __restrict dx) {
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const long i = m * C + c;
      store(k[c] * masked<Relu>(y, dy, i) + b[c] * (load(x + i) - mean[c]) + d[c], dx + i);
    }
}

// dx = gamma * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)), the usual closed form, as
// dx = k * dy + b * (x - mean) + d per channel (k = gamma * invstd, b = -k * invstd * sum(dy * xhat) / M,
// d = -k * sum(dy) / M); with p.relu, dy is first masked by y > 0.
}  // namespace

template <class X, class Y, class DY, class Out>
void batchnorm_backward(const BatchNormParams& p, long rows, const X* x, const Y* y, const DY* dy,
                        const float* gamma, const BatchNormSaved& saved, Out* dx, float* dgamma, float* dbeta) {
  const int C = p.channels;
  const float* mean = saved.mean.data();
  std::vector<double> sdy(C, 0.0), sdyd(C, 0.0);  // sum(dy), sum(dy * (x - mean)) (xhat's sum / invstd)
  if (p.relu)
    backward_sums<true>(rows, C, x, y, dy, mean, sdy, sdyd);
  else
    backward_sums<false>(rows, C, x, y, dy, mean, sdy, sdyd);
  std::vector<double> sdyx(C);
  for (int c = 0; c < C; ++c) sdyx[c] = sdyd[c] * double(saved.invstd[c]);
  for (int c = 0; c < C; ++c) {  // this rank's: the DP average of the parameter gradients sums them
    dgamma[c] = float(sdyx[c]);
    dbeta[c] = float(sdy[c]);
  }
  if (p.group_sum) {  // dx needs the sums over every row the statistics were taken over
    std::vector<double> both(sdy);
    both.insert(both.end(), sdyx.begin(), sdyx.end());
    p.group_sum(both.data(), 2 * C);
    std::copy(both.begin(), both.begin() + C, sdy.begin());
    std::copy(both.begin() + C, both.end(), sdyx.begin());
  }
  const double inv_m = 1.0 / saved.rows;
  std::vector<float> k(C), b(C), d(C);
  for (int c = 0; c < C; ++c) {
    const double kc = double(gamma[c]) * double(saved.invstd[c]);
    k[c] = float(kc);
    b[c] = float(-kc * double(saved.invstd[c]) * sdyx[c] * inv_m);
    d[c] = float(-kc * sdy[c] * inv_m);
  }
  if (p.relu)
    backward_dx<true>(rows, C, x, y, dy, mean, k.data(), b.data(), d.data(), dx);
  else
    backward_dx<false>(rows, C, x, y, dy, mean, k.data(), b.data(), d.data(), dx);
}

// The combinations the ResNet uses (fp32 throughout, or bf16 around bf16 convolutions), and the tests.
#define GT_BN_FORWARD(X, O)                                                                                        \
  template void batchnorm_forward_train(const BatchNormParams&, long, const X*, const float*, const float*, O*,   \
                                        BatchNormSaved&, float*, float*, const float*);                           \
  template void batchnorm_forward_eval(const BatchNormParams&, long, const X*, const float*, const float*,        \
                                       const float*, const float*, O*, const float*);
GT_BN_FORWARD(float, float)
GT_BN_FORWARD(float, bf16_bits)
GT_BN_FORWARD(bf16_bits, float)
GT_BN_FORWARD(bf16_bits, bf16_bits)
#undef GT_BN_FORWARD
#define GT_BN_BACKWARD(X, Y, DY, O)                                                                                \
  template void batchnorm_backward(const BatchNormParams&, long, const X*, const Y*, const DY*, const float*,     \
                                   const BatchNormSaved&, O*, float*, float*);
// a bf16 dx with each of x, y and dy in either type: the ResNet's block code instantiates every mix, whichever it runs
#define GT_BN_BACKWARD_BF16_DX(X, Y) GT_BN_BACKWARD(X, Y, float, bf16_bits) GT_BN_BACKWARD(X, Y, bf16_bits, bf16_bits)
GT_BN_BACKWARD(float, float, float, float)
GT_BN_BACKWARD_BF16_DX(float, float)
GT_BN_BACKWARD_BF16_DX(float, bf16_bits)
GT_BN_BACKWARD_BF16_DX(bf16_bits, float)
GT_BN_BACKWARD_BF16_DX(bf16_bits, bf16_bits)
#undef GT_BN_BACKWARD_BF16_DX
#undef GT_BN_BACKWARD

}  // namespace gt::vision
