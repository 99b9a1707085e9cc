// The Llama block's own kernels (kernels/rmsnorm.hpp, swiglu.hpp, rope.hpp) against naive double references written
// here from the definitions, in double, float and bf16, and their backward passes against central finite
// differences of the forward (double). Built twice: this build's work split and the GPU split on the host
// (GT_KERNELS_DEVICE_BLOCKING). "set" outputs start NaN, "acc" outputs random.
//
// Sizes: 141 rows (two 64-row chunks of the device split's column sums and a partial one), C = 70 (a 64-column
// block and a partial one on the host split), F = 37 (odd: vector tails), T = 37 positions.
// Tolerances (norm-wise relative): double 1e-13; float 2e-6 (kt::tol<float>: a few fp32 roundings on sums of
// <= 70 terms); bf16 one rounding of the stored result, u = 2^-8, plus 1e-5 for the fp32 arithmetic (the reference
// computes on exactly the bf16 inputs), 2 u where a result passes through a bf16 rounding before a cancellation
// (RMSNorm's dx: rstd (g - n mean(g n))); fp32 outputs (rstd, dweight) 1e-5. Finite differences: h = 1e-5, error
// < 1e-6 as kernels_gradcheck.
#include <gtest/gtest.h>

#include <cmath>
#include <type_traits>

#include "kernels/rmsnorm.hpp"
#include "kernels/rope.hpp"
#include "kernels/swiglu.hpp"
#include "tests/kernels/test_util.hpp"

using kt::rel_err;
using kt::Vec;

namespace {

template <class T>
double u() {
  if constexpr (std::is_same_v<T, gt::bf16_t>) return std::ldexp(1.0, -8);
  else if constexpr (std::is_same_v<T, float>) return 2e-6;
  else return 1e-13;
}
template <class T>
double tol_acc() {  // results held in A (fp32 or double)
  return std::is_same_v<T, double> ? 1e-13 : std::is_same_v<T, float> ? 2e-6 : 1e-5;
}
// kt::exact_in and kt::to for every T (double too: random_vec's values are floats, which double holds exactly)
using kt::exact_in;
using kt::to;

template <class T>
class LlamaKernels : public ::testing::Test {
 protected:
  std::mt19937_64 rng{20261205u + 7 * sizeof(T)};
};
using Types = ::testing::Types<double, float, gt::bf16_t>;
TYPED_TEST_SUITE(LlamaKernels, Types);

// y = x r w, r = 1/sqrt(mean(x^2) + eps); dx_j = sum_c dy_c w_c (r delta_cj - x_c x_j r^3 / C) (the Jacobian
// written out), dw_c = sum_rows dy_c x_c r.
TYPED_TEST(LlamaKernels, RmsNorm) {
  using T = TypeParam;
  using A = gt::acc_t<T>;
  const int N = 141, C = 70;
  const double eps = 1e-5;
  const Vec x = exact_in<T>(this->rng, size_t(N) * C, -2, 2), w = exact_in<T>(this->rng, C, 0.5, 1.5);
  const Vec dy = exact_in<T>(this->rng, size_t(N) * C), dx0 = exact_in<T>(this->rng, size_t(N) * C);
  const Vec dw0 = kt::random_vec(this->rng, C);
  Vec y(x.size()), r(N), dx = dx0, dw = dw0;
  for (int i = 0; i < N; ++i) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[i * C + c] * x[i * C + c];
    r[i] = 1.0 / std::sqrt(ss / C + eps);
    for (int c = 0; c < C; ++c) y[i * C + c] = x[i * C + c] * r[i] * w[c];
    for (int j = 0; j < C; ++j) {
      double g = 0;
      for (int c = 0; c < C; ++c)
        g += dy[i * C + c] * w[c] * (r[i] * (c == j) - x[i * C + c] * x[i * C + j] * r[i] * r[i] * r[i] / C);
      dx[i * C + j] += g;
    }
    for (int c = 0; c < C; ++c) dw[c] += dy[i * C + c] * x[i * C + c] * r[i];
  }
  auto x_t = to<T>(x), w_t = to<T>(w), dy_t = to<T>(dy), dx_t = to<T>(dx0);
  auto y_t = kt::nan_filled<T>(y.size());
  auto r_t = kt::nan_filled<A>(N);
  kt::DVec<A> dw_t = to<A>(dw0), part = kt::nan_filled<A>(size_t(gt::colsum_partials_elems(N, C)));
  gt::rmsnorm_forward(y_t.data(), r_t.data(), x_t.data(), w_t.data(), N, C, A(eps));
  EXPECT_LT(rel_err(y_t, y), u<T>() + tol_acc<T>());
  EXPECT_LT(rel_err(r_t, r), tol_acc<T>());
  gt::rmsnorm_backward(dx_t.data(), dw_t.data(), part.data(), dy_t.data(), x_t.data(), w_t.data(), r_t.data(), N, C);
  EXPECT_LT(rel_err(dx_t, dx), 2 * u<T>() + tol_acc<T>());
  EXPECT_LT(rel_err(dw_t, dw), tol_acc<T>());
}

// Rows [gate | up]: out = g sigmoid(g) u; du = dout silu(g), dg = dout u (sigmoid(g) + g sigmoid(g)(1 - sigmoid(g))).
TYPED_TEST(LlamaKernels, SwiGlu) {
  using T = TypeParam;
  const long N = 141;
  const int F = 37;  // odd: vector tails
  Vec gu = exact_in<T>(this->rng, size_t(N) * 2 * F, -8, 8);
  const double edges[] = {0.0, -0.0, 30.0, -30.0, 100.0, -100.0};
  for (size_t k = 0; k < 6; ++k) gu[k] = edges[k];
  const Vec dout = exact_in<T>(this->rng, size_t(N) * F);
  Vec out(size_t(N) * F), dgu(gu.size());
  for (long r = 0; r < N; ++r)
    for (int j = 0; j < F; ++j) {
      const double g = gu[r * 2 * F + j], u = gu[r * 2 * F + F + j], d = dout[r * F + j];
      const double s = 1.0 / (1.0 + std::exp(-g));
      out[r * F + j] = g * s * u;
      dgu[r * 2 * F + F + j] = d * g * s;
      dgu[r * 2 * F + j] = d * u * (s + g * s * (1.0 - s));
    }
  auto gu_t = to<T>(gu), dout_t = to<T>(dout);
  auto out_t = kt::nan_filled<T>(out.size()), dgu_t = kt::nan_filled<T>(dgu.size());
  gt::swiglu_forward(out_t.data(), gu_t.data(), N, F);
  gt::swiglu_backward(dgu_t.data(), dout_t.data(), gu_t.data(), N, F);
  EXPECT_LT(rel_err(out_t, out), u<T>() + tol_acc<T>());
  EXPECT_LT(rel_err(dgu_t, dgu), u<T>() + tol_acc<T>());
}

// The grouped qkv layout: per group, `heads` rotated heads (G queries and the key) then one unrotated (value) head.
// Each rotated pair (i, i + hd/2) at position t turned by t theta^(-2i/hd) (angles in double); the inverse rotation
// of the rotated rows gives the rows back; value heads and the columns past the groups untouched.
TYPED_TEST(LlamaKernels, Rope) {
  using T = TypeParam;
  using A = gt::acc_t<T>;
  const int B = 2, T_ = 37, groups = 2, heads = 3, hd = 10, gs = (heads + 1) * hd, ld = groups * gs + 5;
  const double theta = 500000.0;
  const long N = long(B) * T_;
  const Vec x = exact_in<T>(this->rng, size_t(N) * ld, -2, 2);
  Vec y = x;
  for (long r = 0; r < N; ++r)
    for (int g = 0; g < groups; ++g)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < hd / 2; ++i) {
          const double ang = double(r % T_) * std::pow(theta, -2.0 * i / hd);
          const long o = r * ld + g * gs + h * hd;
          const double a = x[o + i], b = x[o + i + hd / 2];
          y[o + i] = a * std::cos(ang) - b * std::sin(ang);
          y[o + i + hd / 2] = b * std::cos(ang) + a * std::sin(ang);
        }
  kt::DVec<A> c(size_t(T_) * hd / 2), s(size_t(T_) * hd / 2);
  gt::rope_tables(c.data(), s.data(), T_, hd, theta);
  auto x_t = to<T>(x);
  gt::rope_apply(x_t.data(), c.data(), s.data(), N, T_, groups, heads, gs, hd, ld, false);
  EXPECT_LT(rel_err(x_t, y), u<T>() + tol_acc<T>());
  for (long r = 0; r < N; ++r)  // value heads and the columns past the groups are not touched
    for (int k = 0; k < ld; ++k) {
      if (k >= groups * gs || k % gs >= heads * hd) {
        ASSERT_EQ(double(x_t[size_t(r * ld + k)]), x[size_t(r * ld + k)]);
      }
    }
  gt::rope_apply(x_t.data(), c.data(), s.data(), N, T_, groups, heads, gs, hd, ld, true);
  EXPECT_LT(rel_err(x_t, x), 2 * u<T>() + tol_acc<T>());
}

// Backward passes against central differences of the forward kernels (double).
TEST(LlamaKernelsGrad, FiniteDifferences) {
  std::mt19937_64 rng(11);
  const int N = 5, C = 7;
  Vec x = kt::random_vec(rng, size_t(N) * C, -2, 2), w = kt::random_vec(rng, C, 0.5, 1.5);
  const Vec R = kt::random_vec(rng, size_t(N) * C);
  auto rms_loss = [&](const Vec& xx, const Vec& ww) {
    kt::DVec<double> y(xx.size()), r(N), xd(xx), wd(ww);
    gt::rmsnorm_forward(y.data(), r.data(), xd.data(), wd.data(), N, C, 1e-5);
    return kt::dot(y, R);
  };
  kt::DVec<double> y(x.size()), r(N), dx(x.size(), 0.0), dw(C, 0.0), part(size_t(gt::colsum_partials_elems(N, C)));
  kt::DVec<double> xd(x), wd(w), Rd(R);
  gt::rmsnorm_forward(y.data(), r.data(), xd.data(), wd.data(), N, C, 1e-5);
  gt::rmsnorm_backward(dx.data(), dw.data(), part.data(), Rd.data(), xd.data(), wd.data(), r.data(), N, C);
  EXPECT_LT(rel_err(dx, kt::finite_diff([&](const Vec& v) { return rms_loss(v, w); }, x)), 1e-6);
  EXPECT_LT(rel_err(dw, kt::finite_diff([&](const Vec& v) { return rms_loss(x, v); }, w)), 1e-6);

  const long M = 5;
  const int F = 3;
  const Vec gu = kt::random_vec(rng, size_t(M) * 2 * F, -5, 5), Rs = kt::random_vec(rng, size_t(M) * F);
  auto sw_loss = [&](const Vec& v) {
    kt::DVec<double> o(size_t(M) * F), gd(v);
    gt::swiglu_forward(o.data(), gd.data(), M, F);
    return kt::dot(o, Rs);
  };
  kt::DVec<double> dgu(gu.size()), gud(gu), Rsd(Rs);
  gt::swiglu_backward(dgu.data(), Rsd.data(), gud.data(), M, F);
  EXPECT_LT(rel_err(dgu, kt::finite_diff(sw_loss, gu)), 1e-6);

  const int T_ = 6, heads = 2, hd = 4;
  const Vec q = kt::random_vec(rng, size_t(T_) * heads * hd), Rq = kt::random_vec(rng, q.size());
  kt::DVec<double> c(size_t(T_) * hd / 2), s(size_t(T_) * hd / 2);
  gt::rope_tables(c.data(), s.data(), T_, hd, 10000.0);
  auto rope_loss = [&](const Vec& qq) {
    kt::DVec<double> v(qq);
    gt::rope_apply(v.data(), c.data(), s.data(), T_, T_, 1, heads, 0, hd, heads * hd, false);
    return kt::dot(v, Rq);
  };
  kt::DVec<double> dq(Rq);  // the gradient of dot(R, rope(q)) is the inverse rotation of R
  gt::rope_apply(dq.data(), c.data(), s.data(), T_, T_, 1, heads, 0, hd, heads * hd, true);
  EXPECT_LT(rel_err(dq, kt::finite_diff(rope_loss, q)), 1e-6);
}

}  // namespace
