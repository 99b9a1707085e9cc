// gt::fast_expf and gt::fast_tanhf against std::exp / std::tanh in double, measured in float ulps of the
// correctly rounded result: a sweep over float bit patterns (every magnitude from 1e-45 to 110, both signs),
// a dense uniform grid, and the special values (overflow, gradual underflow, infinities, NaN).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/fastmath.hpp"

namespace {

// |f - ref| in units of the float spacing at ref (2^-149 in the subnormal range). An infinite float ref
// (overflow) must be matched exactly.
double ulp_error(float f, double ref) {
  const float rf = static_cast<float>(ref);
  if (std::isinf(rf)) return f == rf ? 0.0 : INFINITY;
  if (std::isnan(f)) return INFINITY;
  const double a = std::fabs(ref);
  const double ulp = a < FLT_MIN ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::fabs(static_cast<double>(f) - ref) / ulp;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::vector<float> sample_points(float max_abs) {
  std::vector<float> xs;
  const float lim = max_abs;
  uint32_t lim_bits;
  std::memcpy(&lim_bits, &lim, sizeof lim_bits);
  for (uint32_t u = 0; u <= lim_bits; u += 4099) {
    xs.push_back(from_bits(u));
    xs.push_back(-from_bits(u));
  }
  const int n = 400000;
  for (int i = 0; i <= n; ++i) xs.push_back(-max_abs + 2.0f * max_abs * static_cast<float>(i) / n);
  return xs;
}

__attribute__((noinline)) float scalar_exp(float x) { return gt::fast_expf(x); }
__attribute__((noinline)) float scalar_tanh(float x) { return gt::fast_tanhf(x); }

struct WorstUlp {
  double ulp = 0.0;
  float x = 0.0f;
};

// The largest ulp error of f over xs against ref in double, and where. f runs over all of xs in one loop first:
// the vectorised form kernels use.
template <class F, class Ref>
WorstUlp worst_ulp(const std::vector<float>& xs, F f, Ref ref) {
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = f(xs[i]);
  WorstUlp w;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = ulp_error(ys[i], ref(static_cast<double>(xs[i])));
    if (e > w.ulp) w = {e, xs[i]};
  }
  return w;
}

// Prints the sweep's result and records it (test property max_ulp).
void report(const char* name, const char* range, size_t points, const WorstUlp& w) {
  std::printf("%s: %zu points in %s, max error %.3f ulp at x=%.9g\n", name, points, range, w.ulp, w.x);
  ::testing::Test::RecordProperty("max_ulp", std::to_string(w.ulp));
}

}  // namespace

TEST(FastMath, ExpMaxUlpOverWideRange) {
  const auto xs = sample_points(110.0f);
  const WorstUlp w = worst_ulp(xs, [](float x) { return gt::fast_expf(x); }, [](double x) { return std::exp(x); });
  report("fast_expf", "[-110,110]", xs.size(), w);
  EXPECT_LE(w.ulp, 1.0) << "at x=" << w.x;  // measured 0.88 ulp on this sample set
}

TEST(FastMath, ExpSpecialValues) {
  EXPECT_EQ(gt::fast_expf(0.0f), 1.0f);
  EXPECT_EQ(gt::fast_expf(-0.0f), 1.0f);
  // overflow boundary: ln(FLT_MAX) = 88.7228391...
  const float below = std::nextafter(88.7228391f, 0.0f);
  EXPECT_TRUE(std::isfinite(gt::fast_expf(below)));
  EXPECT_LE(ulp_error(gt::fast_expf(below), std::exp(double(below))), 2.0);
  EXPECT_EQ(gt::fast_expf(88.7229f), INFINITY);
  EXPECT_EQ(gt::fast_expf(1000.0f), INFINITY);
  EXPECT_EQ(gt::fast_expf(INFINITY), INFINITY);
  // gradual underflow: FLT_MIN at -87.3365, the smallest subnormal 2^-149 at -103.279, 0 below -103.972
  for (float x : {-87.3f, -87.34f, -90.0f, -100.0f, -103.2f, -103.28f, -103.9f}) {
    EXPECT_LE(ulp_error(gt::fast_expf(x), std::exp(double(x))), 2.0) << "x=" << x;
  }
  EXPECT_GT(gt::fast_expf(-103.0f), 0.0f);
  EXPECT_EQ(gt::fast_expf(-104.0f), 0.0f);
  EXPECT_EQ(gt::fast_expf(-200.0f), 0.0f);
  EXPECT_EQ(gt::fast_expf(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(gt::fast_expf(NAN)));
}

TEST(FastMath, VectorisedAndScalarGiveSameBits) {
  const auto xs = sample_points(110.0f);
  std::vector<float> ev(xs.size()), tv(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ev[i] = gt::fast_expf(xs[i]);
  for (size_t i = 0; i < xs.size(); ++i) tv[i] = gt::fast_tanhf(xs[i]);
  size_t mismatches = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float es = scalar_exp(xs[i]), ts = scalar_tanh(xs[i]);
    mismatches += std::memcmp(&es, &ev[i], sizeof es) != 0;
    mismatches += std::memcmp(&ts, &tv[i], sizeof ts) != 0;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(FastMath, TanhMaxUlp) {
  const auto xs = sample_points(20.0f);
  const WorstUlp w = worst_ulp(xs, [](float x) { return gt::fast_tanhf(x); }, [](double x) { return std::tanh(x); });
  report("fast_tanhf", "[-20,20]", xs.size(), w);
  EXPECT_LE(w.ulp, 1.5) << "at x=" << w.x;  // measured 0.93 ulp on this sample set
  EXPECT_EQ(gt::fast_tanhf(0.0f), 0.0f);
  EXPECT_EQ(gt::fast_tanhf(30.0f), 1.0f);
  EXPECT_EQ(gt::fast_tanhf(-30.0f), -1.0f);
  EXPECT_EQ(gt::fast_tanhf(INFINITY), 1.0f);
  EXPECT_EQ(gt::fast_tanhf(-INFINITY), -1.0f);
  EXPECT_TRUE(std::isnan(gt::fast_tanhf(NAN)));
}
