// The vision kernels against independent float64 references (loops written here, not the library's), and their
// backward passes against central finite differences of the float64 forward.
//
// Tolerances, and why:
//  - conv forward, fp32 vs float64: 1e-6 x sqrt(K) x (1 + max|y|), K = r*s*c the reduction length. An fp32 dot
//    product of K terms of O(1) has a rounding error ~ sqrt(K) x 6e-8, ten times below; a wrong tap, stride or
//    padding row changes a value by O(1), far above it.
//  - conv gradients: 1e-4 x sqrt(number of summed terms) absolute, the same argument with more headroom for the
//    longer sums (dw sums over the batch and the output map).
//  - finite differences: taken on the float64 reference with h = 1e-4 (truncation error O(h^2) ~ 1e-8,
//    rounding ~ 1e-16 / h ~ 1e-12), so the only sizeable error left is the fp32 kernel's, bounded as above.
//  - naive vs oneDNN: both fp32 with different summation orders; the same bound.
//  - bf16 convolutions (ConvShape::bf16): the reference takes the operands rounded to bf16 here (8 significant
//    bits, nearest even, through frexp: not the library's bit trick), and then the same fp32 bounds hold, since a
//    product of bf16 values is exact in fp32 and only the fp32 sums differ. That the rounding happens at all is
//    checked too: against the unrounded operands the forward misses the fp32 bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "kernels/classifier.hpp"
#include "src/core/error.hpp"
#include "src/vision/batchnorm.hpp"
#include "src/vision/classifier.hpp"
#include "src/vision/conv.hpp"
#include "src/vision/fp16.hpp"
#include "src/vision/pool.hpp"
#include "src/vision/sgd.hpp"

using namespace gt::vision;

namespace {

std::vector<float> randv(long n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

std::vector<double> to_d(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// Float64 convolution written from the definition: y[n,p,q,k] = sum_{r,t,c} x[n, p*S-P+r, q*S-P+t, c] w[k,r,t,c].
std::vector<double> conv_ref(const ConvShape& s, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> y(s.out_size(), 0.0);
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < s.out_h(); ++p)
      for (int q = 0; q < s.out_w(); ++q)
        for (int k = 0; k < s.k; ++k)
          for (int r = 0; r < s.r; ++r)
            for (int t = 0; t < s.s; ++t)
              for (int c = 0; c < s.c; ++c) {
                const int ih = p * s.stride - s.pad + r, iw = q * s.stride - s.pad + t;
                if (ih < 0 || iw < 0 || ih >= s.h || iw >= s.w) continue;
                y[((long(n) * s.out_h() + p) * s.out_w() + q) * s.k + k] +=
                    x[((long(n) * s.h + ih) * s.w + iw) * s.c + c] * w[((long(k) * s.r + r) * s.s + t) * s.c + c];
              }
  return y;
}

double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Central difference of L(v) = <f(v), R> with respect to v[i], in float64.
double fd(std::vector<double> v, long i, const std::function<double(const std::vector<double>&)>& loss) {
  const double h = 1e-4, v0 = v[i];
  v[i] = v0 + h;
  const double up = loss(v);
  v[i] = v0 - h;
  const double down = loss(v);
  return (up - down) / (2 * h);
}

template <class A, class B>
void expect_close(const A& got, const B& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(double(got[i]), double(want[i]), tol) << what << " at " << i;
}

struct ConvCase {
  ConvShape s;
  const char* name;
};

std::vector<ConvCase> conv_cases() {
  // n, h, w, c, k, r, s, stride, pad
  return {{{2, 5, 5, 3, 4, 3, 3, 1, 1}, "3x3 s1 p1"},  {{2, 7, 6, 3, 5, 3, 3, 2, 1}, "3x3 s2 p1 odd"},
          {{1, 6, 6, 4, 3, 1, 1, 1, 0}, "1x1 s1"},     {{2, 7, 7, 5, 6, 1, 1, 2, 0}, "1x1 s2 (downsample)"},
          {{1, 11, 9, 3, 4, 7, 7, 2, 3}, "7x7 s2 p3"}, {{1, 4, 5, 2, 3, 3, 3, 1, 0}, "3x3 no pad"}};
}

// x rounded to bfloat16's 8 significant bits, ties to even (nearbyint in the default rounding mode).
float bf16_ref(float x) {
  int e = 0;
  const double m = std::frexp(double(x), &e);
  return float(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8));
}

std::vector<float> operands(const ConvShape& s, std::vector<float> v) {
  if (s.bf16)
    for (float& x : v) x = bf16_ref(x);
  return v;
}

// Checks all three passes of the current backend on one shape (bf16: against the rounded operands).
void check_conv(const ConvShape& s, const char* name) {
  SCOPED_TRACE(name);
  const auto x = randv(s.in_size(), 1), w = randv(s.weight_size(), 2), Rin = randv(s.out_size(), 3);
  const auto xd = to_d(operands(s, x)), wd = to_d(operands(s, w));
  const auto R = operands(s, Rin);
  const double tol = 1e-6 * std::sqrt(double(s.r * s.s * s.c)) * (1 + max_abs(conv_ref(s, xd, wd)));
  std::vector<float> y(s.out_size()), dx(s.in_size()), dw(s.weight_size());
  conv_forward(s, x.data(), w.data(), y.data());
  expect_close(y, conv_ref(s, xd, wd), tol, "forward");
  if (s.bf16) {  // the kernel rounded: against the unrounded operands it misses the fp32 bound somewhere
    std::vector<double> diff = conv_ref(s, to_d(x), to_d(w));
    for (size_t i = 0; i < diff.size(); ++i) diff[i] -= y[i];
    EXPECT_GT(max_abs(diff), tol) << "bf16 forward equals the fp32 one: no rounding";
  }
  conv_backward_data(s, Rin.data(), w.data(), dx.data());
  conv_backward_weights(s, x.data(), Rin.data(), dw.data());
  {  // both passes in one call (dy converted once under bf16): the same bits as the two calls
    std::vector<float> dx2(dx.size()), dw2(dw.size());
    conv_backward(s, x.data(), Rin.data(), w.data(), dx2.data(), dw2.data());
    EXPECT_EQ(dx2, dx);
    EXPECT_EQ(dw2, dw);
  }
  if (s.bf16) {  // the bf16-operand forms (x and dy rounded by the caller): the same bits as the fp32-operand forms,
    // and a bf16 y the same values rounded
    std::vector<bf16_bits> xb(x.size()), dyb(Rin.size());
    round_to_bf16(long(x.size()), x.data(), xb.data());
    round_to_bf16(long(Rin.size()), Rin.data(), dyb.data());
    std::vector<float> y3(y.size()), dx3(dx.size()), dw3(dw.size());
    conv_forward(s, xb.data(), w.data(), y3.data());
    conv_backward(s, xb.data(), dyb.data(), w.data(), dx3.data(), dw3.data());
    EXPECT_EQ(y3, y);
    EXPECT_EQ(dx3, dx);
    EXPECT_EQ(dw3, dw);
    std::vector<bf16_bits> yb(y.size()), want(y.size());  // a bf16 destination: the fp32 result, rounded
    conv_forward(s, xb.data(), w.data(), yb.data());
    round_to_bf16(long(y.size()), y.data(), want.data());
    EXPECT_EQ(yb, want);
    // and a bf16 dx: the fp32 dx rounded, dw unchanged
    std::vector<bf16_bits> dxb(dx.size()), want_dx(dx.size());
    std::vector<float> dw4(dw.size());
    conv_backward(s, xb.data(), dyb.data(), w.data(), dxb.data(), dw4.data());
    round_to_bf16(long(dx.size()), dx.data(), want_dx.data());
    EXPECT_EQ(dxb, want_dx);
    EXPECT_EQ(dw4, dw);
  }
  auto loss_x = [&](const std::vector<double>& v) { return dot(conv_ref(s, v, wd), R); };
  auto loss_w = [&](const std::vector<double>& v) { return dot(conv_ref(s, xd, v), R); };
  const double gtol = 1e-4 * std::sqrt(double(s.k * s.r * s.s + s.n * s.out_h() * s.out_w()));
  for (long i = 0; i < s.in_size(); i += 1 + s.in_size() / 40) ASSERT_NEAR(dx[i], fd(xd, i, loss_x), gtol) << i;
  for (long i = 0; i < s.weight_size(); i += 1 + s.weight_size() / 40)
    ASSERT_NEAR(dw[i], fd(wd, i, loss_w), gtol) << i;
}

}  // namespace

TEST(VisionConv, NaiveAgainstFloat64AndFiniteDifferences) {
  set_conv_backend(ConvBackend::naive);
  for (const auto& c : conv_cases()) check_conv(c.s, c.name);
}

TEST(VisionConv, DefaultBackendAgainstFloat64AndFiniteDifferences) {
  // oneDNN when the build has it (the default), else the loops again.
  const ConvBackend b = detail::onednn_available() ? ConvBackend::onednn : ConvBackend::naive;
  set_conv_backend(b);
  RecordProperty("backend", conv_backend_name(b));
  for (const auto& c : conv_cases()) check_conv(c.s, c.name);
  // Running the same shape twice reuses the cached primitive and must give the same bits.
  const ConvShape s = conv_cases()[1].s;
  const auto x = randv(s.in_size(), 5), w = randv(s.weight_size(), 6);
  std::vector<float> y1(s.out_size()), y2(s.out_size());
  conv_forward(s, x.data(), w.data(), y1.data());
  conv_forward(s, x.data(), w.data(), y2.data());
  EXPECT_EQ(y1, y2);
}

// bf16 multiplies: the loops (emulated: rounded copies) and the default backend (oneDNN's bf16 kernels where
// the CPU has them, else the emulation on oneDNN's fp32 kernels).
TEST(VisionConv, Bf16AgainstRoundedFloat64AndFiniteDifferences) {
  for (ConvBackend b : {ConvBackend::naive, ConvBackend::onednn}) {
    if (b == ConvBackend::onednn && !detail::onednn_available()) continue;
    set_conv_backend(b);
    SCOPED_TRACE(conv_backend_name(b) + (conv_bf16_native() ? " native bf16" : " emulated bf16"));
    RecordProperty("bf16_native", conv_bf16_native() ? "yes" : "no");
    for (auto c : conv_cases()) {
      c.s.bf16 = true;
      check_conv(c.s, c.name);
    }
  }
}

// Winograd (ConvShape::winograd): 3x3 stride-1 shapes of 64 and 128 channels (where it is used), maps that are not
// multiples of its 4x4 output tile. On a CPU with AVX-512 (F, BW, VL, DQ: oneDNN's avx512_core, where it has the
// kernels) they must run (conv_uses_winograd) and give other bits than the direct sums; everywhere, all three
// passes meet the float64 reference and finite differences within the direct sums' bounds (above). Winograd's
// transforms (interpolation points' powers, sums of 6x6 terms) amplify the fp32 rounding: measured on Zen 5
// (2026-12-06), forward errors 0.9-2.7e-6 of the largest output, 1.4-2.6x the direct sums' on the same shapes and
// 13-28x under the bound; a wrong tap or tile edge moves an output by O(1). Shapes Winograd cannot take (stride 2,
// 1x1, 7x7) or where it does not pay (under 64 channels) must run direct, bitwise as without the request.
TEST(VisionConv, WinogradAgainstFloat64AndFiniteDifferences) {
  if (!detail::onednn_available()) GTEST_SKIP() << "no oneDNN in this build";
  set_conv_backend(ConvBackend::onednn);
  const std::vector<ConvCase> wino = {{{1, 6, 5, 64, 64, 3, 3, 1, 1}, "64 -> 64, 6x5"},
                                      {{1, 5, 5, 64, 128, 3, 3, 1, 1}, "64 -> 128, 5x5"},
                                      {{2, 4, 5, 128, 64, 3, 3, 1, 1}, "128 -> 64, 4x5"}};
  for (auto c : wino) {
    c.s.winograd = true;
    check_conv(c.s, c.name);
  }
  const bool used = conv_uses_winograd([&] { ConvShape s = wino[0].s; s.winograd = true; return s; }());
  RecordProperty("winograd", used ? "yes" : "no (direct: no kernel on this CPU)");
#if defined(__x86_64__)
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512_core && !std::getenv("ONEDNN_MAX_CPU_ISA")) {
    EXPECT_TRUE(used) << "an AVX-512 CPU, yet no Winograd kernel";
  }
#endif
  if (used) {  // a real Winograd pass: other bits than the direct sum of the same shape
    ConvShape s = wino[0].s, d = s;
    s.winograd = true;
    const auto x = randv(s.in_size(), 7), w = randv(s.weight_size(), 8);
    std::vector<float> yw(s.out_size()), yd(s.out_size());
    conv_forward(s, x.data(), w.data(), yw.data());
    conv_forward(d, x.data(), w.data(), yd.data());
    EXPECT_NE(yw, yd);
  }
  // The request on shapes it cannot serve (stride 2, 1x1, 7x7) or where it does not pay (under 64 channels, as
  // every shape of conv_cases): direct, the same bits.
  std::vector<ConvCase> direct = conv_cases();
  direct.push_back({{2, 6, 5, 32, 64, 3, 3, 1, 1}, "32 -> 64, 3x3 s1"});
  for (const auto& c : direct) {
    ConvShape s = c.s;
    s.winograd = true;
    EXPECT_FALSE(conv_uses_winograd(s)) << c.name;
    const auto x = randv(s.in_size(), 9), w = randv(s.weight_size(), 10);
    std::vector<float> yw(s.out_size()), yd(s.out_size());
    conv_forward(s, x.data(), w.data(), yw.data());
    conv_forward(c.s, x.data(), w.data(), yd.data());
    EXPECT_EQ(yw, yd) << c.name;
  }
}

// The passes oneDNN's sgemm runs instead of a convolution primitive (conv_gemm.cpp): 1x1 stride 1 (both backward
// passes; conv_cases' small 1x1 shape covers it above) and the strided 3x3 shapes of 64 or more input channels
// (backward-weights over gathered patches), on maps with partial edges and padding. The same bounds as the
// direct sums (fp32 sums of the same products in another order); the patch budget cut to one image per chunk must
// meet them too (chunks accumulate into dw with beta = 1: a chunk overwriting the last would miss by O(1)).
TEST(VisionConv, GemmPassesAgainstFloat64AndFiniteDifferences) {
  if (!detail::onednn_available()) GTEST_SKIP() << "no oneDNN in this build";
  set_conv_backend(ConvBackend::onednn);
  const std::vector<ConvCase> cases = {{{3, 7, 6, 64, 24, 3, 3, 2, 1}, "3x3 s2 p1, 64 in, 7x6"},
                                       {{2, 8, 9, 72, 16, 3, 3, 2, 1}, "3x3 s2 p1, 72 in, 8x9"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ConvShape& s = c.s;
    EXPECT_TRUE(detail::gemm_backward_weights(s));
    EXPECT_FALSE(detail::gemm_backward_data(s));
    check_conv(s, c.name);
    const auto x = randv(s.in_size(), 1), dy = randv(s.out_size(), 3);
    std::vector<double> want(s.weight_size(), 0.0);  // dw[k, r, t, c] = sum over n, p, q of dy x, in float64
    for (int n = 0; n < s.n; ++n)
      for (int p = 0; p < s.out_h(); ++p)
        for (int q = 0; q < s.out_w(); ++q)
          for (int k = 0; k < s.k; ++k)
            for (int r = 0; r < s.r; ++r)
              for (int t = 0; t < s.s; ++t) {
                const int ih = p * s.stride - s.pad + r, iw = q * s.stride - s.pad + t;
                if (ih < 0 || iw < 0 || ih >= s.h || iw >= s.w) continue;
                for (int ch = 0; ch < s.c; ++ch)
                  want[((long(k) * s.r + r) * s.s + t) * s.c + ch] +=
                      double(dy[((long(n) * s.out_h() + p) * s.out_w() + q) * s.k + k]) *
                      x[((long(n) * s.h + ih) * s.w + iw) * s.c + ch];
              }
    std::vector<float> dw(s.weight_size());
    detail::conv_backward_weights_gemm(s, x.data(), dy.data(), dw.data(), 1);  // one image a chunk
    expect_close(dw, want, 1e-4 * std::sqrt(double(s.n * s.out_h() * s.out_w())), "dw, one image a chunk");
  }
  // Narrower strided shapes, 1x1 strided ones and the 7x7 stem stay on the primitive
  for (const ConvShape& s : {ConvShape{2, 7, 6, 32, 64, 3, 3, 2, 1}, ConvShape{2, 7, 7, 64, 32, 1, 1, 2, 0},
                             ConvShape{1, 11, 9, 3, 64, 7, 7, 2, 3}})
    EXPECT_FALSE(detail::gemm_backward_weights(s));
}

TEST(VisionConv, OnednnRefusedWhenAbsent) {
  if (detail::onednn_available()) GTEST_SKIP() << "this build has oneDNN";
  EXPECT_THROW(set_conv_backend(ConvBackend::onednn), gt::Error);
}

namespace {

// Float64 BatchNorm (training statistics) over rows x C.
std::vector<double> bn_ref(long rows, int C, const std::vector<double>& x, const std::vector<double>& g,
                           const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (int c = 0; c < C; ++c) {
    double mean = 0.0, var = 0.0;
    for (long m = 0; m < rows; ++m) mean += x[m * C + c] / rows;
    for (long m = 0; m < rows; ++m) var += (x[m * C + c] - mean) * (x[m * C + c] - mean) / rows;
    for (long m = 0; m < rows; ++m) y[m * C + c] = g[c] * (x[m * C + c] - mean) / std::sqrt(var + eps) + b[c];
  }
  return y;
}

}  // namespace

namespace {

// relu: the fused ReLU (BatchNormParams::relu) against max(0, .) of the same float64 reference. A central
// difference across the kink would be wrong, so dx skips elements whose output lies within 1e-3 of it (h = 1e-4
// moves an output by ~1e-4); for dgamma and dbeta, which move every row's output, these fixed draws have no
// output that close (checked below, so a change of draws that breaks this says so).
void check_batchnorm(bool relu) {
  SCOPED_TRACE(relu ? "with ReLU" : "without ReLU");
  const long rows = 2 * 3 * 5;  // N*H*W with odd sizes
  const int C = 4;
  BatchNormParams p;  // eps 1e-5, momentum 0.1: the defaults
  p.channels = C;
  p.relu = relu;
  auto bn_ref = [relu](long r, int c, const std::vector<double>& x, const std::vector<double>& g,
                       const std::vector<double>& b, double eps) {
    std::vector<double> y = ::bn_ref(r, c, x, g, b, eps);
    if (relu)
      for (double& v : y) v = std::max(0.0, v);
    return y;
  };
  const auto x = randv(rows * C, 11, -2.f, 3.f), g = randv(C, 12, 0.5f, 1.5f), b = randv(C, 13);
  const auto R = randv(rows * C, 14);
  std::vector<float> y(rows * C), rm(C, 0.f), rv(C, 1.f), dx(rows * C), dg(C), db(C);
  BatchNormSaved saved;
  batchnorm_forward_train(p, rows, x.data(), g.data(), b.data(), y.data(), saved, rm.data(), rv.data());
  const auto xd = to_d(x), gd = to_d(g), bd = to_d(b);
  // outputs are O(3) (|xhat| <= sqrt(rows)); fp32 rounding of the normalised value ~ 1e-6 relative
  expect_close(y, bn_ref(rows, C, xd, gd, bd, p.eps), 2e-5, "bn forward");
  for (int c = 0; c < C; ++c) {  // running statistics: momentum 0.1 toward the batch mean and unbiased variance
    double mean = 0.0, sq = 0.0;
    for (long m = 0; m < rows; ++m) mean += xd[m * C + c] / rows;
    for (long m = 0; m < rows; ++m) sq += (xd[m * C + c] - mean) * (xd[m * C + c] - mean);
    EXPECT_NEAR(rm[c], 0.1 * mean, 1e-6);
    EXPECT_NEAR(rv[c], 0.9 + 0.1 * sq / (rows - 1), 1e-6);
  }
  batchnorm_backward(p, rows, x.data(), R.data(), g.data(), b.data(), saved, dx.data(), dg.data(), db.data());
  auto lx = [&](const std::vector<double>& v) { return dot(bn_ref(rows, C, v, gd, bd, p.eps), R); };
  auto lg = [&](const std::vector<double>& v) { return dot(bn_ref(rows, C, xd, v, bd, p.eps), R); };
  auto lb = [&](const std::vector<double>& v) { return dot(bn_ref(rows, C, xd, gd, v, p.eps), R); };
  // gradients are sums of rows=30 terms of O(1): fp32 error ~ 1e-6 x 30; 1e-4 leaves headroom, a wrong term is O(0.1)
  const std::vector<double> yref = ::bn_ref(rows, C, xd, gd, bd, p.eps);
  for (long i = 0; i < rows * C; ++i) {
    if (relu && std::fabs(yref[i]) < 1e-3) continue;
    ASSERT_NEAR(dx[i], fd(xd, i, lx), 1e-4) << i;
  }
  for (int c = 0; c < C; ++c) {
    if (relu) {
      for (long m = 0; m < rows; ++m) ASSERT_GT(std::fabs(yref[m * C + c]), 1e-3) << "an output at the kink";
    }
    EXPECT_NEAR(dg[c], fd(gd, c, lg), 1e-4);
    EXPECT_NEAR(db[c], fd(bd, c, lb), 1e-4);
  }
  // evaluation uses the running statistics: y = g (x - rm) / sqrt(rv + eps) + b
  batchnorm_forward_eval(p, rows, x.data(), g.data(), b.data(), rm.data(), rv.data(), y.data());
  for (long m = 0; m < rows; ++m)
    for (int c = 0; c < C; ++c) {
      const double want = gd[c] * (xd[m * C + c] - rm[c]) / std::sqrt(double(rv[c]) + p.eps) + bd[c];
      ASSERT_NEAR(y[m * C + c], relu ? std::max(0.0, want) : want, 1e-5);
    }
}

}  // namespace

// fp16's emulation (fp16.hpp): the array loops (F16C's vcvtps2ph / vcvtph2ps where the build targets it, 8 at a
// time) give bitwise the values of the kernels' integer conversion, element by element: every fp16 value widened;
// rounding of every fp16 value, of the midpoint between each pair of neighbours (a tie: to even) and of the
// floats just above and below it, the overflow edge (65504, 65519.996, 65520), fp32 subnormals, NaN and inf. NaN
// is compared as NaN (the hardware quiets a signalling payload, the integer code keeps it). The lengths are not
// multiples of 8, so the scalar tail runs too.
TEST(VisionFp16, ArrayRoundingEqualsTheKernelsConversion) {
  std::vector<float> in;
  std::vector<gt::vision::fp16_bits> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = gt::vision::fp16_bits(h);
  std::vector<float> widened(all.size());
  gt::vision::widen_fp16(long(all.size()) - 3, all.data(), widened.data());
  for (size_t h = 0; h + 3 < all.size(); ++h) {
    const float want = gt::half_detail::fp16_to_float(all[h]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(widened[h])) << h;
      continue;
    }
    ASSERT_EQ(gt::half_detail::float_bits(widened[h]), gt::half_detail::float_bits(want)) << "fp16 bits " << h;
    in.push_back(want);
    const float next = gt::half_detail::fp16_to_float(gt::vision::fp16_bits(h + 1));
    if (h + 1 < 0x7C00 || (h >= 0x8000 && h + 1 < 0xFC00)) {  // neighbours of one sign, both finite
      const float mid = float((double(want) + double(next)) / 2);
      in.insert(in.end(), {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e30f), std::nextafter(mid, -1e30f)});
    }
  }
  in.insert(in.end(), {65504.f, 65519.996f, 65520.f, -65520.f, 1e30f, 1e-40f, -1e-40f, 0.f, -0.f, INFINITY, -INFINITY,
                       NAN, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f});
  std::vector<float> out(in.size());
  gt::vision::round_to_fp16(long(in.size()), in.data(), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = gt::vision::round_fp16(in[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(out[i])) << in[i];
      continue;
    }
    ASSERT_EQ(gt::half_detail::float_bits(out[i]), gt::half_detail::float_bits(want)) << "rounding " << in[i];
  }
  std::vector<float> again(in);
  gt::vision::round_fp16_in_place(long(again.size()), again.data());
  for (size_t i = 0; i < in.size(); ++i)
    if (!std::isnan(out[i])) {
      ASSERT_EQ(gt::half_detail::float_bits(again[i]), gt::half_detail::float_bits(out[i]));
    }
#if defined(__F16C__)
  RecordProperty("fp16_arrays", "F16C");
#else
  RecordProperty("fp16_arrays", "scalar (the comparison is the same code)");
#endif
}

TEST(VisionBatchNorm, TrainForwardBackwardRunningStatsAndEval) {
  check_batchnorm(false);
  check_batchnorm(true);
}

// The statistics over many rows: 100,000 rows (a batch of 128 at 28x28 has this many) of values near 100, with
// momentum 1 so that the running statistics are the batch's. The float64 mean is reproduced to 2e-5 (under 3 ulp of
// fp32 at 100: rounding the result alone costs up to half of one); one fp32 running sum over the rows would be off
// by ~1e-3 here, which is what the two-level sums (fp32 within a block of rows, double across) must avoid. The
// unbiased variance (~1/3: uniform on +-1) within 1e-5 relative; the backward's dbeta (a sum of dy) likewise.
// bf16 around BatchNorm (the ResNet's bf16 units): its bf16 outputs (a bf16 convolution's input and output gradient,
// written as they are computed) are the fp32 outputs rounded to nearest even, bit for bit, in training and
// evaluation; the backward writing a bf16 dx gives the fp32 dx rounded; a bf16 input (a bf16 convolution's output)
// gives what its widened values give.
TEST(VisionBatchNorm, Bf16InputsAndOutputsMatchTheFp32Kernels) {
  const long rows = 2 * 3 * 5;
  const int C = 20;  // more than one vector of channels, and a remainder
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with ReLU" : "without ReLU");
    BatchNormParams p;
    p.channels = C;
    p.relu = relu;
    const auto x = randv(rows * C, 31, -2.f, 3.f), g = randv(C, 32, 0.5f, 1.5f), b = randv(C, 33);
    const auto dy = randv(rows * C, 34);
    std::vector<float> y(rows * C), rm(C, 0.f), rv(C, 1.f), rm2(rm), rv2(rv), dx(rows * C), dg(C), db(C);
    std::vector<bf16_bits> yb(rows * C), dxb(rows * C), want(rows * C);
    BatchNormSaved saved, saved2;
    batchnorm_forward_train(p, rows, x.data(), g.data(), b.data(), y.data(), saved, rm.data(), rv.data());
    batchnorm_forward_train(p, rows, x.data(), g.data(), b.data(), yb.data(), saved2, rm2.data(), rv2.data());
    round_to_bf16(rows * C, y.data(), want.data());
    EXPECT_EQ(yb, want) << "train forward";
    EXPECT_EQ(rm2, rm);
    EXPECT_EQ(rv2, rv);
    batchnorm_backward(p, rows, x.data(), dy.data(), g.data(), b.data(), saved, dx.data(), dg.data(), db.data());
    round_to_bf16(rows * C, dx.data(), want.data());
    std::vector<float> dg2(C), db2(C);
    batchnorm_backward(p, rows, x.data(), dy.data(), g.data(), b.data(), saved, dxb.data(), dg2.data(), db2.data());
    EXPECT_EQ(dxb, want) << "backward";
    EXPECT_EQ(dg2, dg);
    EXPECT_EQ(db2, db);
    batchnorm_forward_eval(p, rows, x.data(), g.data(), b.data(), rm.data(), rv.data(), y.data());
    batchnorm_forward_eval(p, rows, x.data(), g.data(), b.data(), rm.data(), rv.data(), yb.data());
    round_to_bf16(rows * C, y.data(), want.data());
    EXPECT_EQ(yb, want) << "eval forward";
    // a bf16 input (a bf16 convolution's output) reads as its widened fp32 values: the same bits as the fp32 kernels
    std::vector<bf16_bits> xb(rows * C);
    std::vector<float> xw(rows * C), y1(rows * C), y2(rows * C), dx1(rows * C), dx2(rows * C);
    round_to_bf16(rows * C, x.data(), xb.data());
    widen_bf16(rows * C, xb.data(), xw.data());
    BatchNormSaved s1, s2;
    batchnorm_forward_train(p, rows, xw.data(), g.data(), b.data(), y1.data(), s1, rm.data(), rv.data());
    batchnorm_forward_train(p, rows, xb.data(), g.data(), b.data(), y2.data(), s2, rm2.data(), rv2.data());
    EXPECT_EQ(y2, y1) << "bf16 x, train forward";
    batchnorm_backward(p, rows, xw.data(), dy.data(), g.data(), b.data(), s1, dxb.data(), dg.data(), db.data());
    std::vector<bf16_bits> dxb2(rows * C);
    batchnorm_backward(p, rows, xb.data(), dy.data(), g.data(), b.data(), s2, dxb2.data(), dg2.data(), db2.data());
    EXPECT_EQ(dxb2, dxb) << "bf16 x, backward";
    EXPECT_EQ(dg2, dg);
    // a bf16 dy (a bf16 convolution's input gradient) reads as its widened values, with x in bf16 too
    std::vector<bf16_bits> dyb(rows * C);
    std::vector<float> dyw(rows * C), db3(C), dg3(C);
    round_to_bf16(rows * C, dy.data(), dyb.data());
    widen_bf16(rows * C, dyb.data(), dyw.data());
    batchnorm_backward(p, rows, xb.data(), dyw.data(), g.data(), b.data(), s2, dxb.data(), dg.data(), db.data());
    batchnorm_backward(p, rows, xb.data(), dyb.data(), g.data(), b.data(), s2, dxb2.data(), dg3.data(), db3.data());
    EXPECT_EQ(dxb2, dxb) << "bf16 dy, backward";
    EXPECT_EQ(dg3, dg);
    EXPECT_EQ(db3, db);
  }
}

namespace {

// Column c of rows x C values in float64, two passes: its mean and its sum of squared deviations from the mean.
std::pair<double, double> column_moments(const std::vector<float>& x, long rows, int C, int c) {
  double mean = 0.0, sq = 0.0;
  for (long m = 0; m < rows; ++m) mean += double(x[m * C + c]);
  mean /= rows;
  for (long m = 0; m < rows; ++m) sq += (double(x[m * C + c]) - mean) * (double(x[m * C + c]) - mean);
  return {mean, sq};
}

}  // namespace

TEST(VisionBatchNorm, StatisticsOverManyRowsKeepTheirDigits) {
  const long rows = 100000;
  const int C = 3;
  BatchNormParams p;  // momentum 1: the running statistics are the batch's
  p.channels = C;
  p.momentum = 1.0f;
  auto x = randv(rows * C, 21, 99.f, 101.f);
  const auto g = randv(C, 22, 0.5f, 1.5f), b = randv(C, 23), dy = randv(rows * C, 24, 0.f, 1.f);
  std::vector<float> y(rows * C), rm(C, 0.f), rv(C, 1.f), dx(rows * C), dg(C), db(C);
  BatchNormSaved saved;
  batchnorm_forward_train(p, rows, x.data(), g.data(), b.data(), y.data(), saved, rm.data(), rv.data());
  batchnorm_backward(p, rows, x.data(), dy.data(), g.data(), b.data(), saved, dx.data(), dg.data(), db.data());
  for (int c = 0; c < C; ++c) {
    const auto [mean, sq] = column_moments(x, rows, C, c);
    double sdy = 0.0;
    for (long m = 0; m < rows; ++m) sdy += double(dy[m * C + c]);
    EXPECT_NEAR(rm[c], mean, 2e-5) << c;
    EXPECT_NEAR(rv[c] / (sq / (rows - 1)), 1.0, 1e-5) << c;
    EXPECT_NEAR(db[c] / sdy, 1.0, 1e-5) << c;
  }
}

// The statistics of values far from zero relative to their spread (a mean of 1000, a spread of 0.02: the squares'
// difference E[x^2] - E[x]^2 would cancel all seven of fp32's digits) and of a row count that leaves a partial last
// block: the variance to 1e-5 of float64's over the same fp32 values (the one-pass moments take deviations from each
// block's provisional mean, so none of them is large), the mean to 1e-4 absolute (fp32's spacing at 1000 is 6e-5).
TEST(VisionBatchNorm, StatisticsOfALargeOffsetKeepTheirDigits) {
  const long rows = 50007;
  const int C = 5;
  BatchNormParams p;
  p.channels = C;
  p.momentum = 1.0f;
  auto x = randv(rows * C, 31, 999.99f, 1000.01f);
  const auto g = randv(C, 32, 0.5f, 1.5f), b = randv(C, 33);
  std::vector<float> y(rows * C), rm(C, 0.f), rv(C, 1.f);
  BatchNormSaved saved;
  batchnorm_forward_train(p, rows, x.data(), g.data(), b.data(), y.data(), saved, rm.data(), rv.data());
  for (int c = 0; c < C; ++c) {
    const auto [mean, sq] = column_moments(x, rows, C, c);
    EXPECT_NEAR(rm[c], mean, 1e-4) << c;
    EXPECT_NEAR(rv[c] / (sq / (rows - 1)), 1.0, 1e-5) << c;
    EXPECT_NEAR(saved.invstd[c] / (1.0 / std::sqrt(sq / rows + p.eps)), 1.0, 1e-5) << c;
  }
}

namespace {

std::vector<double> pool_ref(const PoolShape& s, const std::vector<double>& x, bool max) {
  std::vector<double> y(s.out_size());
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < s.out_h(); ++p)
      for (int q = 0; q < s.out_w(); ++q)
        for (int c = 0; c < s.c; ++c) {
          double acc = max ? -1e300 : 0.0;
          for (int r = 0; r < s.window; ++r)
            for (int t = 0; t < s.window; ++t) {
              const int ih = p * s.stride - s.pad + r, iw = q * s.stride - s.pad + t;
              if (ih < 0 || iw < 0 || ih >= s.h || iw >= s.w) continue;
              const double v = x[((long(n) * s.h + ih) * s.w + iw) * s.c + c];
              acc = max ? std::max(acc, v) : acc + v / (s.window * s.window);
            }
          y[((long(n) * s.out_h() + p) * s.out_w() + q) * s.c + c] = acc;
        }
  return y;
}

}  // namespace

TEST(VisionPool, MaxAndAverageAgainstFloat64AndFiniteDifferences) {
  // n h w c window stride pad: ImageNet's 3x3 s2 p1 max pool on an odd map, 2x2 s2, and a global 7x7 average
  const std::vector<PoolShape> shapes = {{2, 7, 7, 3, 3, 2, 1}, {1, 6, 5, 2, 2, 2, 0}, {2, 7, 7, 4, 7, 1, 0}};
  for (const auto& s : shapes) {
    const auto x = randv(s.in_size(), 21), R = randv(s.out_size(), 22);
    const auto xd = to_d(x);
    std::vector<float> y(s.out_size()), dx(s.in_size());
    Buffer<long> arg;
    for (bool max : {true, false}) {
      if (max) maxpool_forward(s, x.data(), y.data(), arg);
      else avgpool_forward(s, x.data(), y.data());
      expect_close(y, pool_ref(s, xd, max), 1e-6, max ? "maxpool" : "avgpool");  // <= 49 adds of O(1/49)
      if (max) maxpool_backward(s, R.data(), arg, dx.data());
      else avgpool_backward(s, R.data(), dx.data());
      // random inputs have no ties, so max pooling is differentiable at x; h = 1e-4 << the gap between values
      auto loss = [&](const std::vector<double>& v) { return dot(pool_ref(s, v, max), R); };
      for (long i = 0; i < s.in_size(); ++i) ASSERT_NEAR(dx[i], fd(xd, i, loss), 1e-5) << i;
    }
  }
}

TEST(VisionHead, LinearSoftmaxCrossEntropyAgainstFiniteDifferences) {
  const int B = 3, F = 7, K = 5;
  const auto x = randv(B * F, 31), w = randv(K * F, 32), b = randv(K, 33);
  const std::vector<int> labels = {4, 0, 2};
  const auto xd = to_d(x), wd = to_d(w), bd = to_d(b);
  auto loss_of = [&](const std::vector<double>& xv, const std::vector<double>& wv, const std::vector<double>& bv) {
    double loss = 0.0;  // float64 reference: mean over the batch of logsumexp(z) - z[label]
    for (int n = 0; n < B; ++n) {
      std::vector<double> z(K);
      double s = 0.0;
      for (int k = 0; k < K; ++k) {
        z[k] = bv[k];
        for (int f = 0; f < F; ++f) z[k] += xv[n * F + f] * wv[k * F + f];
        s += std::exp(z[k]);
      }
      loss += (std::log(s) - z[labels[n]]) / B;
    }
    return loss;
  };
  std::vector<float> logits(B * K), dl(B * K), dx(B * F), dw(K * F), db(K);
  linear_forward(B, F, K, x.data(), w.data(), b.data(), logits.data());
  int correct = 0;
  HeadScratch scratch;
  const double loss = softmax_xent(B, K, logits.data(), labels.data(), dl.data(), &correct, scratch);
  EXPECT_NEAR(loss, loss_of(xd, wd, bd), 1e-5);  // fp32 logits of 7-term dots, O(1): error ~ 1e-6
  linear_backward(B, F, K, x.data(), w.data(), dl.data(), dx.data(), dw.data(), db.data(), scratch);
  for (int i = 0; i < B * F; ++i)
    ASSERT_NEAR(dx[i], fd(xd, i, [&](const std::vector<double>& v) { return loss_of(v, wd, bd); }), 1e-5);
  for (int i = 0; i < K * F; ++i)
    ASSERT_NEAR(dw[i], fd(wd, i, [&](const std::vector<double>& v) { return loss_of(xd, v, bd); }), 1e-5);
  for (int i = 0; i < K; ++i)
    ASSERT_NEAR(db[i], fd(bd, i, [&](const std::vector<double>& v) { return loss_of(xd, wd, v); }), 1e-5);
  int want = 0;  // top-1 count from the logits directly
  for (int n = 0; n < B; ++n) {
    int best = 0;
    for (int k = 1; k < K; ++k)
      if (logits[n * K + k] > logits[n * K + best]) best = k;
    want += best == labels[n];
  }
  EXPECT_EQ(correct, want);
  // huge logits: the max-subtracted softmax stays finite
  std::vector<float> big = {1000.f, -1000.f, 999.f, 0.f, 0.f};
  std::vector<float> dbig(K);
  const int lab = 2;
  EXPECT_NEAR(softmax_xent(1, K, big.data(), &lab, dbig.data(), nullptr, scratch), std::log1p(std::exp(-1.0)) + 1.0,
              1e-6);
}

TEST(VisionHead, ReluAndSgdMomentumWithDecayMask) {
  const std::vector<float> x = {-1.f, 0.f, 2.f}, dy = {5.f, 6.f, 7.f};
  std::vector<float> y(3), dx(3);
  gt::relu_forward(y.data(), x.data(), 3);
  gt::relu_backward(dx.data(), y.data(), dy.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.f, 2.f}));
  EXPECT_EQ(dx, (std::vector<float>{0.f, 0.f, 7.f}));
  // two steps against the recurrence in float64: v = mu v + g + wd w (wd only with decay), w -= lr v
  const SgdParams p{0.1f, 0.9f, 0.01f};
  for (bool decay : {true, false}) {
    std::vector<float> w = {1.f, -2.f}, v = {0.f, 0.f};
    const std::vector<float> g = {0.5f, 0.25f};
    std::vector<double> wr = {1.0, -2.0}, vr = {0.0, 0.0};
    for (int step = 0; step < 2; ++step) {
      sgd_step(p, decay, 2, w.data(), g.data(), v.data());
      for (int i = 0; i < 2; ++i) {
        vr[i] = 0.9 * vr[i] + g[i] + (decay ? 0.01 * wr[i] : 0.0);
        wr[i] -= 0.1 * vr[i];
      }
    }
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(w[i], wr[i], 1e-6);  // a few fp32 roundings of O(1) values
  }
}
