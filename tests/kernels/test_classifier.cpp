// The vision head (kernels/classifier.hpp) against double references written here from the definitions, on both
// work splits. Sizes: batch 13, 37 features, 10 classes (odd: no split lines up with them).
// Tolerances, relative: fc sums of <= 37 fp32 products, 1e-6 (a few 2^-24 times the terms' magnitude, the sums
// being of mixed signs); softmax cross-entropy computes in double and rounds its gradient to fp32 once: loss 1e-12,
// gradient 1e-7; ReLU exact.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/classifier.hpp"
#include "tests/kernels/test_util.hpp"

using kt::rel_err;
using kt::Vec;

namespace {

constexpr int kBatch = 13, kFeatures = 37, kClasses = 10;

TEST(ClassifierKernels, FullyConnected) {
  std::mt19937_64 rng(31);
  const Vec x = kt::random_vec(rng, kBatch * kFeatures), w = kt::random_vec(rng, kClasses * kFeatures);
  const Vec b = kt::random_vec(rng, kClasses), g = kt::random_vec(rng, kBatch * kClasses);
  Vec y(kBatch * kClasses), dx(kBatch * kFeatures, 0.0), dw(kClasses * kFeatures, 0.0), db(kClasses, 0.0);
  for (int n = 0; n < kBatch; ++n)
    for (int k = 0; k < kClasses; ++k) {
      double acc = b[k];
      for (int f = 0; f < kFeatures; ++f) {
        acc += x[n * kFeatures + f] * w[k * kFeatures + f];
        dx[n * kFeatures + f] += g[n * kClasses + k] * w[k * kFeatures + f];
        dw[k * kFeatures + f] += g[n * kClasses + k] * x[n * kFeatures + f];
      }
      y[n * kClasses + k] = acc;
      db[k] += g[n * kClasses + k];
    }
  kt::DVec<float> xd = kt::cast<float>(x), wd = kt::cast<float>(w), bd = kt::cast<float>(b), gd = kt::cast<float>(g);
  kt::DVec<float> yd = kt::nan_filled<float>(y.size());
  gt::fc_forward(yd.data(), xd.data(), wd.data(), bd.data(), kBatch, kFeatures, kClasses);
  EXPECT_LT(rel_err(yd, y), 1e-6);
  kt::DVec<float> dxd = kt::nan_filled<float>(dx.size()), dwd = kt::nan_filled<float>(dw.size());
  kt::DVec<float> dbd = kt::nan_filled<float>(db.size());
  kt::DVec<float> partials = kt::nan_filled<float>(size_t(gt::fc_backward_partials(kBatch, kClasses)));
  gt::fc_backward(dxd.data(), dwd.data(), dbd.data(), partials.data(), xd.data(), wd.data(), gd.data(), kBatch,
                  kFeatures, kClasses);
  EXPECT_LT(rel_err(dxd, dx), 1e-6);
  EXPECT_LT(rel_err(dwd, dw), 1e-6);
  EXPECT_LT(rel_err(dbd, db), 1e-6);
}

TEST(ClassifierKernels, SoftmaxCrossEntropy) {
  std::mt19937_64 rng(32);
  Vec z = kt::random_vec(rng, kBatch * kClasses, -4.0, 4.0);
  z[3] = 80.f;  // a logit whose exp overflows fp32: the row's maximum must come off first
  std::vector<int> labels(kBatch);
  for (int n = 0; n < kBatch; ++n) labels[n] = (n * 7) % kClasses;
  Vec loss(kBatch), dz(kBatch * kClasses);
  std::vector<int> hit(kBatch);
  for (int n = 0; n < kBatch; ++n) {
    double mx = z[n * kClasses], sum = 0.0;
    int best = 0;
    for (int k = 0; k < kClasses; ++k)
      if (z[n * kClasses + k] > mx) {
        mx = z[n * kClasses + k];
        best = k;
      }
    for (int k = 0; k < kClasses; ++k) sum += std::exp(z[n * kClasses + k] - mx);
    loss[n] = std::log(sum) + mx - z[n * kClasses + labels[n]];
    for (int k = 0; k < kClasses; ++k)
      dz[n * kClasses + k] = (std::exp(z[n * kClasses + k] - mx) / sum - (k == labels[n])) / kBatch;
    hit[n] = best == labels[n];
  }
  kt::DVec<float> zd = kt::cast<float>(z), dzd = kt::nan_filled<float>(dz.size());
  kt::DVec<int> ld(labels), hitd(size_t(kBatch), -1);
  kt::DVec<double> lossd = kt::nan_filled<double>(kBatch);
  gt::softmax_xent_rows(dzd.data(), lossd.data(), hitd.data(), zd.data(), ld.data(), kBatch, kClasses);
  EXPECT_LT(rel_err(lossd, loss), 1e-12);
  EXPECT_LT(rel_err(dzd, dz), 1e-7);
  EXPECT_EQ(hitd.host(), hit);
}

TEST(ClassifierKernels, Relu) {
  const std::vector<float> x = {-1.f, 0.f, 2.f, -0.f, 3.5f};
  kt::DVec<float> xd(x), yd = kt::nan_filled<float>(x.size()), dy(std::vector<float>{1, 2, 3, 4, 5});
  kt::DVec<float> dx = kt::nan_filled<float>(x.size());
  gt::relu_forward(yd.data(), xd.data(), long(x.size()));
  EXPECT_EQ(yd.host(), (std::vector<float>{0.f, 0.f, 2.f, 0.f, 3.5f}));
  gt::relu_backward(dx.data(), yd.data(), dy.data(), long(x.size()));
  EXPECT_EQ(dx.host(), (std::vector<float>{0.f, 0.f, 3.f, 0.f, 5.f}));
}

}  // namespace
