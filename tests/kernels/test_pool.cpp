// Pooling (kernels/pool.hpp) against double references written here from the definitions, on both work splits
// (this build's and, through GT_KERNELS_DEVICE_BLOCKING, the GPU's gather form of the backward passes).
// Shapes: ResNet's stem pool (3x3 stride 2 pad 1) on odd and even maps, a 2x2 stride-2 pool without padding, and a
// global average (window = the map). Inputs take 5 distinct values, so windows hold ties: the first tap in window
// order must win. Tolerances: max pooling's outputs and winners are exact; its input gradient adds <= 4 fp32
// values (windows of stride 2 overlap by one row and column), 1e-6 relative; average pooling sums <= 49 fp32
// terms then scales, 2e-6.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/pool.hpp"
#include "tests/kernels/test_util.hpp"

using kt::rel_err;
using kt::Vec;

namespace {

const std::vector<gt::PoolShape> kShapes = {
    {2, 7, 7, 3, 3, 2, 1}, {1, 8, 6, 5, 3, 2, 1}, {1, 6, 5, 2, 2, 2, 0}, {2, 7, 7, 4, 7, 1, 0}};

// the in-range taps of output (n, p, q, c) in window order (row-major)
std::vector<long> taps(const gt::PoolShape& s, int n, int p, int q, int c) {
  std::vector<long> t;
  for (int r = 0; r < s.window; ++r)
    for (int u = 0; u < s.window; ++u) {
      const int ih = p * s.stride - s.pad + r, iw = q * s.stride - s.pad + u;
      if (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w) t.push_back(((long(n) * s.h + ih) * s.w + iw) * s.c + c);
    }
  return t;
}

template <class F>
void each_output(const gt::PoolShape& s, F f) {
  long o = 0;
  for (int n = 0; n < s.n; ++n)
    for (int p = 0; p < s.out_h(); ++p)
      for (int q = 0; q < s.out_w(); ++q)
        for (int c = 0; c < s.c; ++c) f(o++, taps(s, n, p, q, c));
}

Vec ties(std::mt19937_64& rng, long n) {
  std::uniform_int_distribution<int> d(-2, 2);
  Vec v(static_cast<size_t>(n));
  for (auto& x : v) x = 0.5 * d(rng);
  return v;
}

TEST(PoolKernels, MaxForwardAndBackward) {
  std::mt19937_64 rng(21);
  for (const gt::PoolShape& s : kShapes) {
    const Vec x = ties(rng, s.in_size()), dy = kt::random_vec(rng, size_t(s.out_size()));
    Vec y(size_t(s.out_size())), dx(size_t(s.in_size()), 0.0);
    std::vector<long> arg(size_t(s.out_size()));
    each_output(s, [&](long o, const std::vector<long>& t) {
      long best = t[0];
      for (long i : t)
        if (x[i] > x[best]) best = i;  // strictly greater: the first of equal values stays
      y[o] = x[best];
      arg[o] = best;
      dx[best] += dy[o];
    });
    kt::DVec<float> xd = kt::cast<float>(x), dyd = kt::cast<float>(dy);
    kt::DVec<float> yd = kt::nan_filled<float>(y.size()), dxd = kt::nan_filled<float>(dx.size());
    kt::DVec<long> argd(arg.size(), -7);
    gt::maxpool_forward(yd.data(), argd.data(), xd.data(), s);
    EXPECT_EQ(rel_err(yd, y), 0.0) << s.h << "x" << s.w << " window " << s.window;
    EXPECT_EQ(argd.host(), arg) << s.h << "x" << s.w << " window " << s.window;
    gt::maxpool_backward(dxd.data(), dyd.data(), argd.data(), s);
    EXPECT_LT(rel_err(dxd, dx), 1e-6) << s.h << "x" << s.w << " window " << s.window;
  }
}

TEST(PoolKernels, AverageForwardAndBackward) {
  std::mt19937_64 rng(22);
  for (const gt::PoolShape& s : kShapes) {
    const Vec x = kt::random_vec(rng, size_t(s.in_size())), dy = kt::random_vec(rng, size_t(s.out_size()));
    const double inv = 1.0 / (s.window * s.window);  // padding counts as zeros
    Vec y(size_t(s.out_size()), 0.0), dx(size_t(s.in_size()), 0.0);
    each_output(s, [&](long o, const std::vector<long>& t) {
      for (long i : t) {
        y[o] += x[i] * inv;
        dx[i] += dy[o] * inv;
      }
    });
    kt::DVec<float> xd = kt::cast<float>(x), dyd = kt::cast<float>(dy);
    kt::DVec<float> yd = kt::nan_filled<float>(y.size()), dxd = kt::nan_filled<float>(dx.size());
    gt::avgpool_forward(yd.data(), xd.data(), s);
    EXPECT_LT(rel_err(yd, y), 2e-6) << s.h << "x" << s.w << " window " << s.window;
    gt::avgpool_backward(dxd.data(), dyd.data(), s);
    EXPECT_LT(rel_err(dxd, dx), 2e-6) << s.h << "x" << s.w << " window " << s.window;
  }
}

}  // namespace
