// The small-image ResNet end to end on one process: every tensor's gradient against central differences of the
// model's own loss, a few SGD steps that must learn a synthetic task, and bad labels refused.
//
// The layers' kernels are checked against independent float64 references in test_vision_kernels.cpp; here the
// question is whether the model wires them together right (skips, projections, pooling, the head), which a
// directional derivative per tensor answers: (L(p + h d) - L(p - h d)) / 2h against <grad, d>, with d a random
// direction of unit length inside one tensor. The forward is fp32: rounding of an O(1) loss ~ 1e-7 / h; the
// truncation is O(h^2) times the curvature, which BatchNorm over 5-image batches makes large: at h = 1e-2 several
// tensors missed by 10-40%, at h = 1e-3 and 1e-4 none did (tried once each). So h = 1e-3 (rounding ~ 1e-4). The
// tolerance, 3% of |<grad, d>| plus 1e-3, is above both and far below what a wrong or missing term gives (O(100%)).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>
#include <vector>

#include "src/core/error.hpp"
#include "src/vision/conv.hpp"
#include "src/vision/resnet.hpp"
#include "src/vision/sgd.hpp"

using namespace gt::vision;

namespace {

ResNetConfig tiny() {
  ResNetConfig c;
  c.height = c.width = 8;  // 8 -> 4 -> 2 over the two stages
  c.channels = 2;
  c.classes = 3;
  c.widths = {4, 6, 8};
  c.blocks_per_stage = 1;
  c.seed = 7;
  return c;
}

std::vector<float> images(int batch, const ResNetConfig& c, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(long(batch) * c.height * c.width * c.channels);
  for (auto& x : v) x = d(g);
  return v;
}

// Every tensor's directional derivative against central differences (see the header) with step h; returns how many
// were checked.
int check_every_tensor(const ResNetConfig& cfg, int image_seed, double h = 1e-3) {
  ResNet net(cfg);
  const int batch = 5;
  const auto x = images(batch, cfg, unsigned(image_seed));
  const std::vector<int> y = {0, 2, 1, 1, 0};
  net.forward(batch, x.data(), y.data(), true);
  net.backward();
  const std::vector<float> grad(net.grads().begin(), net.grads().end());
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  int checked = 0;
  for (const auto& t : net.tensors()) {
    std::vector<float> d(t.size);
    double norm = 0.0;
    for (auto& v : d) {
      v = nd(gen);
      norm += double(v) * v;
    }
    for (auto& v : d) v = float(v / std::sqrt(norm));  // unit length: the step is h whatever the tensor's size
    double want = 0.0;
    for (long i = 0; i < t.size; ++i) want += double(grad[t.offset + i]) * d[i];
    auto& p = net.params();
    const std::vector<float> p0(p.begin() + t.offset, p.begin() + t.offset + t.size);
    for (long i = 0; i < t.size; ++i) p[t.offset + i] = float(p0[i] + h * d[i]);
    const double up = net.forward(batch, x.data(), y.data(), true).loss;
    for (long i = 0; i < t.size; ++i) p[t.offset + i] = float(p0[i] - h * d[i]);
    const double down = net.forward(batch, x.data(), y.data(), true).loss;
    std::copy(p0.begin(), p0.end(), p.begin() + t.offset);
    EXPECT_NEAR((up - down) / (2 * h), want, 0.03 * std::fabs(want) + 1e-3) << t.name;
    ++checked;
  }
  return checked;
}

}  // namespace

TEST(VisionResNet, EveryTensorsGradientAgainstFiniteDifferences) {
  // stem conv+bn; stage 0's block keeps 4 channels (identity shortcut: conv1 bn1 conv2 bn2), the two others
  // change width and stride (a projection and its BN too); fc weight and bias
  EXPECT_EQ(check_every_tensor(tiny(), 3), 3 + 6 + 2 * 9 + 2);
}

// The ImageNet form's pieces at a tiny size: the 7x7 stride-2 stem with the max pool, and bottleneck blocks (each
// stage's first with a projection, stride 1 to 4x its width in stage 0, strided in stage 1; its second with an
// identity shortcut), so the pool's and the 1x1-3x3-1x1 chain's gradients are checked as the basic blocks' are,
// and so is the sum of the first 1x1's input gradient and the shortcut's, which on oneDNN its backward-data pass
// makes as it writes (ResBlock::adds_into_dx): a wrong sum reaches every tensor before the block.
TEST(VisionResNet, BottleneckAndImageNetStemGradientsAgainstFiniteDifferences) {
  ResNetConfig c = tiny();
  c.height = c.width = 16;  // 16 -> 8 (stem) -> 4 (pool) -> 4 -> 2
  c.widths = {2, 3};
  c.blocks_per_stage = 2;
  c.bottleneck = true;
  c.stem = ResNetStem::ImageNet;
  // stem conv+bn; per stage a bottleneck block with a projection (3 convs, 3 BNs, proj, bn_proj) and one without;
  // fc. h = 1e-4: at 1e-3 the stem conv's difference missed by 12% (-0.0843 against -0.0751, the same figures
  // before the in-place sum was built, so the loss's own shape over that step: the max pool's winners on 4x4 maps,
  // BatchNorm over 5 images), at 1e-4 every tensor agrees, its rounding (~1e-3) still inside the tolerance.
  EXPECT_EQ(check_every_tensor(c, 4, 1e-4), 3 + 2 * ((3 * 3 + 3) + 3 * 3) + 2);
}

// The presets' parameter counts against torchvision's published ones for 1000 classes (its model docs:
// resnet18 11,689,512, resnet50 25,557,032): the same convolutions (no bias), BatchNorm gamma and beta, fc with bias.
TEST(VisionResNet, PresetsHaveTorchvisionsParameterCounts) {
  EXPECT_EQ(ResNet(resnet_preset("resnet18", 224, 224, 3, 1000)).params().size(), 11689512u);
  EXPECT_EQ(ResNet(resnet_preset("resnet50", 224, 224, 3, 1000)).params().size(), 25557032u);
  EXPECT_EQ(ResNet(resnet_preset("resnet20", 32, 32, 3, 10)).params().size(), 272474u);  // He et al.: 0.27M
  EXPECT_THROW(resnet_preset("resnet42", 224, 224, 3, 1000), gt::Error);
  EXPECT_THROW(ResNet(resnet_preset("resnet18", 224, 200, 3, 1000)), gt::Error);  // not square
}

TEST(VisionResNet, SgdLearnsASyntheticTaskAndEvalUsesRunningStatistics) {
  // The label is which of the three horizontal bands is brightest: learnable by the convolutions, not by chance.
  const ResNetConfig cfg = tiny();
  ResNet net(cfg);
  const int batch = 12;
  auto x = images(batch, cfg, 5);
  std::vector<int> y(batch);
  for (int n = 0; n < batch; ++n) {
    y[n] = n % 3;
    for (int h = 0; h < cfg.height; ++h)
      for (int w = 0; w < cfg.width * cfg.channels; ++w)
        if (h * 3 / cfg.height == y[n]) x[(long(n) * cfg.height + h) * cfg.width * cfg.channels + w] += 2.f;
  }
  std::vector<float> velocity(net.params().size(), 0.f);
  const SgdParams sgd{0.05f, 0.9f, 5e-4f};
  const double first = net.forward(batch, x.data(), y.data(), true).loss;
  double last = first;
  for (int step = 0; step < 30; ++step) {
    last = net.forward(batch, x.data(), y.data(), true).loss;
    net.backward();
    for (const auto& t : net.tensors())
      sgd_step(sgd, t.decay, t.size, net.params().data() + t.offset, net.grads().data() + t.offset,
               velocity.data() + t.offset);
  }
  // chance is log 3 = 1.10; a correct gradient takes 30 momentum steps on 12 images far below a quarter of it
  EXPECT_LT(last, 0.25 * first) << "first " << first << " last " << last;
  // evaluation mode runs on the running statistics and still classifies the training images
  const StepResult eval = net.forward(batch, x.data(), y.data(), false);
  EXPECT_TRUE(std::isfinite(eval.loss));
  EXPECT_GE(eval.correct, batch * 2 / 3) << "eval loss " << eval.loss;
}

TEST(VisionResNet, LabelOutOfRangeIsRefused) {
  ResNet net(tiny());
  const auto x = images(2, tiny(), 1);
  const std::vector<int> bad = {0, 3};
  try {
    net.forward(2, x.data(), bad.data(), true);
    FAIL() << "no error";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 3 out of range [0, 3)"), std::string::npos) << e.what();
  }
}

// One forward (4 images, training) and backward of a fresh network of cfg on the current backend.
struct LossAndGrads {
  double loss = 0;
  std::vector<float> grads;
};
LossAndGrads one_step(const ResNetConfig& cfg) {
  const auto x = images(4, cfg, 9);
  const std::vector<int> y = {1, 0, 2, 1};
  ResNet net(cfg);
  LossAndGrads r;
  r.loss = net.forward(4, x.data(), y.data(), true).loss;
  net.backward();
  r.grads.assign(net.grads().begin(), net.grads().end());
  return r;
}

// a and b (fp32 networks of cfg's shape, computed with different summation orders) agree: the loss to 1e-5, each
// tensor's gradient to 1e-4 of its largest magnitude (the bound's reason: the backend test below).
void expect_same_step(const ResNetConfig& cfg, const LossAndGrads& a, const LossAndGrads& b) {
  EXPECT_NEAR(a.loss, b.loss, 1e-5);
  ResNet layout(cfg);
  for (const auto& t : layout.tensors()) {
    float big = 0.f;
    for (long i = 0; i < t.size; ++i) big = std::max(big, std::fabs(b.grads[t.offset + i]));
    for (long i = 0; i < t.size; ++i)
      ASSERT_NEAR(a.grads[t.offset + i], b.grads[t.offset + i], 1e-4 * big + 1e-7) << t.name << " " << i;
  }
}

TEST(VisionResNet, LoopBackendGivesTheSameLossAndGradientsAsOnednn) {
  if (!detail::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  // Two fp32 backends with different summation orders: the differences seen are ~1.5e-6 of a tensor's largest
  // gradient (a bound of 1e-6 failed once, on stage0.block0.bn2.gamma); 1e-4 of it leaves ~70x headroom and is far
  // below what a wrong pass would give (O(1) of it).
  // The bottleneck form too: on oneDNN its 1x1 passes run as sgemm and its first 1x1 adds its input gradient into
  // the shortcut's (ResBlock::adds_into_dx), where the loops write it and add it in a pass of their own.
  ResNetConfig bottleneck = tiny();
  bottleneck.bottleneck = true;
  bottleneck.blocks_per_stage = 2;
  for (const ResNetConfig& cfg : {tiny(), bottleneck}) {
    set_conv_backend(ConvBackend::naive);
    const LossAndGrads loops = one_step(cfg);
    set_conv_backend(ConvBackend::onednn);
    expect_same_step(cfg, loops, one_step(cfg));
  }
}

// model.conv_algorithm = "winograd" in the network: stages of 64 channels, so that the stride-1 3x3 convolutions of
// both blocks take Winograd where oneDNN has it (the stem, 2 channels in, and the strided conv stay direct). Every
// tensor's gradient against central differences, as above; then loss and gradients against the direct sums within
// the bound of the backend test above (Winograd's own error is ~2x the direct sums', test_vision_kernels.cpp), and,
// where Winograd ran, not bitwise equal to them (else the request did nothing).
TEST(VisionResNet, WinogradGradientsAgainstFiniteDifferencesAndTheDirectSums) {
  if (!detail::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  set_conv_backend(ConvBackend::onednn);
  ResNetConfig cfg = tiny();
  cfg.widths = {64, 64};
  cfg.winograd = true;
  EXPECT_EQ(check_every_tensor(cfg, 5), 3 + 6 + 9 + 2);
  ResNetConfig direct = cfg;
  direct.winograd = false;
  const LossAndGrads w = one_step(cfg), d = one_step(direct);
  expect_same_step(cfg, w, d);
  if (conv_uses_winograd(ConvShape{4, 8, 8, 64, 64, 3, 3, 1, 1, false, true})) {
    EXPECT_NE(w.grads, d.grads);
  }
}

// cfg with no slices of images
ResNetConfig unsliced(ResNetConfig cfg) {
  cfg.backward_slice_bytes = 0;
  return cfg;
}

// One step of a sliced network (cfg) and of the same unsliced (whole): loss and gradients within the backend
// test's bound (only dw's summation order differs), and not bitwise equal (else nothing was sliced).
void expect_only_summation_order_differs(const ResNetConfig& cfg, const ResNetConfig& whole) {
  const LossAndGrads sliced = one_step(cfg), unsliced_step = one_step(whole);
  expect_same_step(cfg, sliced, unsliced_step);
  EXPECT_NE(sliced.grads, unsliced_step.grads);
}

// ResNetConfig::backward_slice_bytes: a unit's backward over slices of images (the BatchNorm's dx for a slice, then
// the conv's two passes on it; dw summed over the slices), where a conv's passes take betas (the bottleneck's 1x1
// convolutions on oneDNN), and a training forward's conv over slices of images with the BatchNorm's moments summed
// slice by slice, where the output is more than 8x that size. At 256 bytes this tiny network slices its 1x1s'
// backward: the expanding ones (512 bytes of gradient an image) one image at a time, the reducing ones (128) two
// (5 images: 2, 2, 1; 4: 2, 2); and at 5 images (2560 bytes) the expanding ones' forward, an image at a time.
// Every tensor's gradient against central differences as in the bottleneck test above (the same h, the same
// reasons), a 5-image loss against the unsliced network's, then 4-image loss and gradients against it within the
// backend test's bound (only dw's summation order differs), and not bitwise equal to them (else nothing was
// sliced).
TEST(VisionResNet, SlicedUnitBackwardAgainstFiniteDifferencesAndTheWholeBatch) {
  if (!detail::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  set_conv_backend(ConvBackend::onednn);
  ResNetConfig c = tiny();
  c.height = c.width = 16;
  c.widths = {2, 3};
  c.blocks_per_stage = 2;
  c.bottleneck = true;
  c.stem = ResNetStem::ImageNet;
  c.backward_slice_bytes = 256;
  EXPECT_EQ(check_every_tensor(c, 4, 1e-4), 3 + 2 * ((3 * 3 + 3) + 3 * 3) + 2);
  const ResNetConfig whole = unsliced(c);
  const auto x5 = images(5, c, 9);
  const std::vector<int> y5 = {1, 0, 2, 1, 0};
  ResNet net_sliced(c), net_whole(whole);
  EXPECT_NEAR(net_sliced.forward(5, x5.data(), y5.data(), true).loss,
              net_whole.forward(5, x5.data(), y5.data(), true).loss, 1e-5);
  expect_only_summation_order_differs(c, whole);
}

// The same for Winograd's 3x3s, whose slices' dw are summed through a scratch copy (conv_backward_add): the
// Winograd test's network (64 channels) at 16 KB, so its 8x8 stage (16 KB of gradient an image, 80 KB at 5
// images, 64 KB at 4) runs its backward an image at a time. Every tensor's gradient against central differences,
// then loss and gradients against the unsliced network, and not bitwise equal to them.
TEST(VisionResNet, SlicedWinogradBackwardAgainstFiniteDifferencesAndTheWholeBatch) {
  if (!detail::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  set_conv_backend(ConvBackend::onednn);
  ResNetConfig c = tiny();
  c.widths = {64, 64};
  c.winograd = true;
  if (!conv_uses_winograd(ConvShape{4, 8, 8, 64, 64, 3, 3, 1, 1, false, true}))
    GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU";
  c.backward_slice_bytes = 16 << 10;
  EXPECT_EQ(check_every_tensor(c, 5), 3 + 6 + 9 + 2);
  expect_only_summation_order_differs(c, unsliced(c));
}
