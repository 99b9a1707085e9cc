// BatchNorm's passes (kernels/batchnorm.hpp) against double references written here from their definitions, with
// fp32 and bf16 storage (uint16_t bits) for the activations. Built twice: this build's work split and the GPU split
// on the host (GT_KERNELS_DEVICE_BLOCKING). The end-to-end layer (running statistics, sync BN, finite-difference
// gradients) is tested in tests/vision; here each pass alone, on both splits.
//
// Sizes: 141 rows (two 64-row chunks of the device split's column sums and a partial one; eight 16-row blocks of
// the host split and a partial one), C = 70 (odd lengths for the vector tails).
// Tolerances, relative (norm-wise over the channels or elements):
//   moments: the inputs are 3 + U(-1, 1), so the mean is three times the spread, the case where a naive
//     E[x^2] - E[x]^2 would lose digits. Device split: double sums, 1e-12. Host split: fp32 block sums of <= 16 terms
//     (at most ~16 x 2^-24 = 1e-6 relative to the block's magnitude; 2e-8 seen on M2), 1e-6 on the mean and on M2.
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
  const double tol = gt::kHostBlocking ? 1e-6 : 1e-12;
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

template <bool Relu, class X, class Y, class DY, class Out>
void check_backward() {
  std::mt19937_64 rng(13);
  const long n = kRows * kC;
  const Vec x = exact<X>(kt::random_vec(rng, size_t(n), 2.0, 4.0));
  const Vec y = exact<Y>(kt::random_vec(rng, size_t(n)));  // about half of it positive: the ReLU mask
  const Vec dy = exact<DY>(kt::random_vec(rng, size_t(n)));
  const Vec mean = exact<float>(kt::random_vec(rng, kC, 2.5, 3.5));
  const Vec k = kt::random_vec(rng, kC), b = kt::random_vec(rng, kC), d = kt::random_vec(rng, kC);
  Vec sdy(kC, 0.0), sdyd(kC, 0.0), dx(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    const int c = int(i % kC);
    const double g = Relu && !(y[i] > 0.0) ? 0.0 : dy[i];
    sdy[c] += g;
    sdyd[c] += g * (x[i] - mean[c]);
    dx[i] = k[c] * g + b[c] * (x[i] - mean[c]) + d[c];
  }
  kt::DVec<X> xd = store<X>(x);
  kt::DVec<Y> yd = store<Y>(y);
  kt::DVec<DY> dyd = store<DY>(dy);
  kt::DVec<float> meand = floats(mean), kd = floats(k), bd = floats(b), dd = floats(d);
  kt::DVec<double> gsdy = kt::nan_filled<double>(kC), gsdyd = kt::nan_filled<double>(kC);
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(kRows, kC)) + 1);
  gt::batchnorm_backward_sums<Relu>(gsdy.data(), gsdyd.data(), partials.data(), xd.data(), yd.data(), dyd.data(),
                                    meand.data(), kRows, kC);
  const double tol = gt::kHostBlocking ? 1e-6 : 1e-12;
  EXPECT_LT(rel_err(gsdy, sdy), tol);
  EXPECT_LT(rel_err(gsdyd, sdyd), tol);
  kt::DVec<Out> gdx = store<Out>(Vec(size_t(n), NAN));
  gt::batchnorm_backward_dx<Relu>(gdx.data(), xd.data(), yd.data(), dyd.data(), meand.data(), kd.data(), bd.data(),
                                  dd.data(), kRows, kC);
  EXPECT_LT(rel_err(load(gdx), dx), out_tol<Out>());
}

TEST(BatchNormKernels, Backward) {
  check_backward<false, float, float, float, float>();
  check_backward<true, float, float, float, float>();
  check_backward<true, uint16_t, uint16_t, uint16_t, uint16_t>();
  check_backward<true, float, uint16_t, float, uint16_t>();
  check_backward<false, uint16_t, float, uint16_t, float>();
}

// The ReLU mask is the forward output's sign, tested on the stored value: a y of exactly 0 passes no gradient.
TEST(BatchNormKernels, ReluMaskStopsAtZero) {
  const long rows = 3;
  const int C = 2;
  kt::DVec<float> x(size_t(rows * C), 1.f), y(std::vector<float>{0.f, 1.f, -1.f, 2.f, 0.f, 3.f});
  kt::DVec<float> dy(size_t(rows * C), 1.f), mean(size_t(C), 0.f);
  kt::DVec<double> sdy(static_cast<size_t>(C)), sdyd(static_cast<size_t>(C));
  kt::DVec<double> partials(size_t(gt::batchnorm_partials_elems(rows, C)) + 1);
  gt::batchnorm_backward_sums<true>(sdy.data(), sdyd.data(), partials.data(), x.data(), y.data(), dy.data(),
                                    mean.data(), rows, C);
  EXPECT_EQ(sdy[0], 0.0);  // rows 0, 1, 2 of channel 0: y = 0, -1, 0
  EXPECT_EQ(sdy[1], 3.0);  // channel 1: y = 1, 2, 3
}

}  // namespace
