// BatchNorm's passes (kernels/batchnorm.hpp) against double references written here from their definitions, with
// fp32 and bf16 storage (uint16_t bits) for the activations. Built twice: this build's work split and the GPU split
// on the host (GT_KERNELS_DEVICE_BLOCKING). The end-to-end layer (running statistics, sync BN, finite-difference
// gradients) is tested in tests/vision; here each pass alone, on both splits.
//
// Sizes: 141 rows (two 64-row chunks of the device split's column sums and a partial one; on the host split two
// 64-row moment blocks and a partial one, eight 16-row blocks of the backward's sums and a partial one), C = 70
// (odd lengths for the vector tails).
// Tolerances, relative (norm-wise over the channels or elements):
//   moments: the inputs are 3 + U(-1, 1), so the mean is three times the spread, the case where a naive
//     E[x^2] - E[x]^2 would lose digits. Device split: double sums, 1e-12. Host split: fp32 block sums of <= 64
//     deviations from a shift near the mean (at most ~64 x 2^-24 = 4e-6 relative to the block's magnitude; seen:
//     2e-9 on the mean, 7e-8 on M2 with fp32 inputs, 4e-7 with bf16 ones), 4e-6 on the mean and on M2.
//   backward sums: x in [2, 4] and the mean in [2.5, 3.5], so x - mean is exact in fp32 (Sterbenz) and the device
//     split's double sums give 1e-12; the host split's fp32 products summed in fp32 blocks 1e-6 (7e-8 seen).
//   element-wise passes: a few fp32 roundings per element, 2e-6; a bf16 output one rounding more, 2^-8 + 2e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>

#include "kernels/batchnorm.hpp"
#include "tests/kernels/test_util.hpp"

using kt::rel_err;
using kt::Vec;

namespace {

constexpr long kRows = 141;
constexpr int kC = 70;

// storage of a value in T (float or bf16 bits) and back
template <class T>
T put(double v) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return gt::half_detail::bf16_from_float(float(v));
  else
    return float(v);
}
template <class T>
double get(T v) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return gt::half_detail::bf16_to_float(v);
  else
    return v;
}
// values in T exactly (what the kernel reads), and the buffer holding them
template <class T>
Vec exact(Vec v) {
  for (auto& x : v) x = get(put<T>(x));
  return v;
}
template <class T>
kt::DVec<T> store(const Vec& v) {
  std::vector<T> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = put<T>(v[i]);
  return h;
}
template <class T>
Vec load(const kt::DVec<T>& d) {
  const std::vector<T>& h = d.host();
  Vec v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = get(h[i]);
  return v;
}
template <class T>
double out_tol() {
  return std::is_same_v<T, uint16_t> ? std::ldexp(1.0, -8) + 2e-6 : 2e-6;
}
kt::DVec<float> floats(const Vec& v) { return kt::cast<float>(v); }

template <class X>
void check_moments() {
  std::mt19937_64 rng(11);
  const Vec x = exact<X>(kt::random_vec(rng, size_t(kRows) * kC, 2.0, 4.0));
  Vec mean(kC, 0.0), m2(kC, 0.0);
  for (long i = 0; i < kRows; ++i)
    for (int c = 0; c < kC; ++c) mean[c] += x[i * kC + c] / kRows;
  for (long i = 0; i < kRows; ++i)
    for (int c = 0; c < kC; ++c) m2[c] += (x[i * kC + c] - mean[c]) * (x[i * kC + c] - mean[c]);
  kt::DVec<X> xd = store<X>(x);
  kt::DVec<double> gmean = kt::nan_filled<double>(kC), gm2 = kt::nan_filled<double>(kC);
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(kRows, kC)) + 1);
  gt::batchnorm_moments(gmean.data(), gm2.data(), partials.data(), xd.data(), kRows, kC);
  const double tol = gt::kHostBlocking ? 4e-6 : 1e-12;
  EXPECT_LT(rel_err(gmean, mean), tol);
  EXPECT_LT(rel_err(gm2, m2), tol);
}

TEST(BatchNormKernels, MomentsFp32) { check_moments<float>(); }
TEST(BatchNormKernels, MomentsBf16) { check_moments<uint16_t>(); }

template <bool Relu, bool Add, class X, class Out>
void check_affine() {
  std::mt19937_64 rng(12);
  const long n = kRows * kC;
  const Vec x = exact<X>(kt::random_vec(rng, size_t(n)));
  const Vec sub = kt::random_vec(rng, kC), scale = kt::random_vec(rng, kC, 0.5, 2.0), add = kt::random_vec(rng, kC);
  const Vec r = kt::random_vec(rng, size_t(n));
  Vec want(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    const int c = int(i % kC);
    double v = (x[i] - sub[c]) * scale[c] + add[c] + (Add ? r[i] : 0.0);
    want[i] = Relu ? std::max(0.0, v) : v;
  }
  kt::DVec<X> xd = store<X>(x);
  kt::DVec<float> subd = floats(sub), scaled = floats(scale), addd = floats(add), rd = floats(r);
  kt::DVec<Out> y = store<Out>(Vec(size_t(n), NAN));
  gt::batchnorm_affine<Relu, Add>(y.data(), xd.data(), subd.data(), scaled.data(), addd.data(),
                                  Add ? rd.data() : nullptr, kRows, kC);
  EXPECT_LT(rel_err(load(y), want), out_tol<Out>());
}

TEST(BatchNormKernels, Affine) {
  check_affine<false, false, float, float>();
  check_affine<true, false, float, float>();
  check_affine<true, true, float, float>();
  check_affine<true, false, uint16_t, uint16_t>();
  check_affine<true, true, uint16_t, float>();
  check_affine<false, false, float, uint16_t>();
}

// The forward's value before its ReLU, as the mask's definition has it: x - mean and one fused multiply-add, in
// float (batchnorm.hpp: the backward redoes the forward's value rather than reading its output).
bool passes(double x, double mean, double scale, double add) {
  return std::fma(float(x) - float(mean), float(scale), float(add)) > 0.f;
}

template <bool Relu, class X, class DY, class Out>
void check_backward() {
  std::mt19937_64 rng(13);
  const long n = kRows * kC;
  const Vec x = exact<X>(kt::random_vec(rng, size_t(n), 2.0, 4.0));
  const Vec dy = exact<DY>(kt::random_vec(rng, size_t(n)));
  const Vec mean = exact<float>(kt::random_vec(rng, kC, 2.5, 3.5));
  // the forward's scale and shift: about half the values pass the ReLU
  const Vec scale = exact<float>(kt::random_vec(rng, kC, 0.5, 2.0)), add = exact<float>(kt::random_vec(rng, kC));
  const Vec k = kt::random_vec(rng, kC), b = kt::random_vec(rng, kC), d = kt::random_vec(rng, kC);
  Vec sdy(kC, 0.0), sdyd(kC, 0.0), dx(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    const int c = int(i % kC);
    const double g = Relu && !passes(x[i], mean[c], scale[c], add[c]) ? 0.0 : dy[i];
    sdy[c] += g;
    sdyd[c] += g * (x[i] - mean[c]);
    dx[i] = k[c] * g + b[c] * (x[i] - mean[c]) + d[c];
  }
  kt::DVec<X> xd = store<X>(x);
  kt::DVec<DY> dyd = store<DY>(dy);
  kt::DVec<float> meand = floats(mean), scaled = floats(scale), addd = floats(add);
  kt::DVec<float> kd = floats(k), bd = floats(b), dd = floats(d);
  kt::DVec<double> gsdy = kt::nan_filled<double>(kC), gsdyd = kt::nan_filled<double>(kC);
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(kRows, kC)) + 1);
  gt::batchnorm_backward_sums<Relu>(gsdy.data(), gsdyd.data(), partials.data(), xd.data(), dyd.data(), meand.data(),
                                    scaled.data(), addd.data(), kRows, kC);
  const double tol = gt::kHostBlocking ? 4e-6 : 1e-12;
  EXPECT_LT(rel_err(gsdy, sdy), tol);
  EXPECT_LT(rel_err(gsdyd, sdyd), tol);
  kt::DVec<Out> gdx = store<Out>(Vec(size_t(n), NAN));
  gt::batchnorm_backward_dx<Relu>(gdx.data(), xd.data(), dyd.data(), meand.data(), scaled.data(), addd.data(),
                                  kd.data(), bd.data(), dd.data(), kRows, kC);
  EXPECT_LT(rel_err(load(gdx), dx), out_tol<Out>());
}

TEST(BatchNormKernels, Backward) {
  check_backward<false, float, float, float>();
  check_backward<true, float, float, float>();
  check_backward<true, uint16_t, uint16_t, uint16_t>();
  check_backward<true, float, float, uint16_t>();
  check_backward<false, uint16_t, uint16_t, float>();
}

// The sums at a residual block's end: dy is the block output's gradient where the output is positive, written to g
// bit for bit (a select, no arithmetic), and the sums over it as batchnorm_backward_sums's over that g.
template <class X>
void check_block_end() {
  std::mt19937_64 rng(15);
  const long n = kRows * kC;
  const Vec x = exact<X>(kt::random_vec(rng, size_t(n), 2.0, 4.0));
  const Vec out = exact<float>(kt::random_vec(rng, size_t(n)));  // about half positive, as a ReLU's output is not:
  const Vec dout = exact<float>(kt::random_vec(rng, size_t(n)));  // the test is out > 0 whatever made out
  const Vec mean = exact<float>(kt::random_vec(rng, kC, 2.5, 3.5));
  Vec sdy(kC, 0.0), sdyd(kC, 0.0), want_g(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    const int c = int(i % kC);
    want_g[size_t(i)] = out[size_t(i)] > 0.0 ? dout[size_t(i)] : 0.0;
    sdy[c] += want_g[size_t(i)];
    sdyd[c] += want_g[size_t(i)] * (x[size_t(i)] - mean[c]);
  }
  kt::DVec<X> xd = store<X>(x);
  kt::DVec<float> outd = floats(out), doutd = floats(dout), meand = floats(mean);
  kt::DVec<float> g = kt::nan_filled<float>(size_t(n));
  kt::DVec<double> gsdy = kt::nan_filled<double>(kC), gsdyd = kt::nan_filled<double>(kC);
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(kRows, kC)) + 1);
  gt::batchnorm_backward_sums_block_end(gsdy.data(), gsdyd.data(), partials.data(), xd.data(), outd.data(),
                                        doutd.data(), g.data(), meand.data(), kRows, kC);
  EXPECT_EQ(load(g), want_g);
  const double tol = gt::kHostBlocking ? 4e-6 : 1e-12;  // as check_backward's
  EXPECT_LT(rel_err(gsdy, sdy), tol);
  EXPECT_LT(rel_err(gsdyd, sdyd), tol);
}

TEST(BatchNormKernels, BlockEndSumsWriteTheMaskedGradient) {
  check_block_end<float>();
  check_block_end<uint16_t>();
}

// The backward's ReLU mask, redone from x, is the forward's output sign exactly, where it is hardest: inputs within
// a few ulps of where the normalised value crosses 0 (x = mean - add / scale), so that any other rounding of
// (x - mean) * scale + add than the forward's (a separate multiply and add, another order) flips some of them. The
// forward writes y; the backward's sum of dy = 1 must count, per channel, exactly the y > 0. Its output fp32 and
// bf16 (rounding changes no sign here: the values that survive are far above bf16's smallest).
template <class Out>
void check_mask_is_the_forwards() {
  std::mt19937_64 rng(14);
  const long n = kRows * kC;
  const Vec mean = exact<float>(kt::random_vec(rng, kC, -2.0, 2.0));
  const Vec scale = exact<float>(kt::random_vec(rng, kC, 0.3, 3.0)), add = exact<float>(kt::random_vec(rng, kC));
  std::uniform_int_distribution<int> ulps(-4, 4);
  std::vector<float> x(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    const int c = int(i % kC);
    float v = float(mean[c] - add[c] / scale[c]);
    for (int u = ulps(rng); u != 0; u += u > 0 ? -1 : 1) v = std::nextafter(v, u > 0 ? INFINITY : -INFINITY);
    x[size_t(i)] = v;
  }
  kt::DVec<float> xd(x), meand = floats(mean), scaled = floats(scale), addd = floats(add);
  kt::DVec<Out> y = store<Out>(Vec(size_t(n), NAN));
  gt::batchnorm_affine<true, false>(y.data(), xd.data(), meand.data(), scaled.data(), addd.data(), nullptr, kRows,
                                    kC);
  const Vec yv = load(y);
  Vec positive(kC, 0.0);
  long zeros = 0;
  for (long i = 0; i < n; ++i) {
    positive[size_t(i % kC)] += yv[size_t(i)] > 0.0 ? 1.0 : 0.0;
    zeros += yv[size_t(i)] > 0.0 ? 0 : 1;
  }
  ASSERT_GT(zeros, n / 4);  // both sides of 0 are exercised
  ASSERT_LT(zeros, 3 * n / 4);
  kt::DVec<float> ones(std::vector<float>(size_t(n), 1.f));
  kt::DVec<double> sdy(static_cast<size_t>(kC)), sdyd(static_cast<size_t>(kC));
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(kRows, kC)) + 1);
  gt::batchnorm_backward_sums<true>(sdy.data(), sdyd.data(), partials.data(), xd.data(), ones.data(), meand.data(),
                                    scaled.data(), addd.data(), kRows, kC);
  const std::vector<double>& got = sdy.host();
  for (int c = 0; c < kC; ++c) EXPECT_EQ(got[size_t(c)], positive[size_t(c)]) << "channel " << c;
}

TEST(BatchNormKernels, ReluMaskIsTheForwardsOutputSign) {
  check_mask_is_the_forwards<float>();
  check_mask_is_the_forwards<uint16_t>();
}

// A forward value of exactly 0 passes no gradient (mean 0, scale 1, shift 0: the value is x itself).
TEST(BatchNormKernels, ReluMaskStopsAtZero) {
  const long rows = 3;
  const int C = 2;
  kt::DVec<float> x(std::vector<float>{0.f, 1.f, -1.f, 2.f, 0.f, 3.f});
  kt::DVec<float> dy(size_t(rows * C), 1.f), mean(size_t(C), 0.f), scale(size_t(C), 1.f), add(size_t(C), 0.f);
  kt::DVec<double> sdy(static_cast<size_t>(C)), sdyd(static_cast<size_t>(C));
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(rows, C)) + 1);
  gt::batchnorm_backward_sums<true>(sdy.data(), sdyd.data(), partials.data(), x.data(), dy.data(), mean.data(),
                                    scale.data(), add.data(), rows, C);
  EXPECT_EQ(sdy[0], 0.0);  // rows 0, 1, 2 of channel 0: values 0, -1, 0
  EXPECT_EQ(sdy[1], 3.0);  // channel 1: 1, 2, 3
}

}  // namespace
