// ResNet through the trainer (model.kind = resnet, the model seam), on 2 ranks:
//   - one rank equals an independent loop over the standalone network (src/vision/resnet.hpp, vision::sgd_step)
//     on the same images: losses, evaluation loss and top-1, parameters;
//   - dp = 2 (per-rank BatchNorm over 4 images each) equals one rank with 2 micro-batches of 4 (the same BatchNorm
//     groups, the same gradient average);
//   - a run stopped and resumed equals the uninterrupted one bit for bit (parameters, momentum, BatchNorm's running
//     statistics through the evaluation), and its dp = 2 checkpoint resumes on one rank (2 micro-batches).
// The data: a small learnable image dataset written here (a bright square whose position is the class).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "src/data/image_source.hpp"
#include "src/train/optim/lr_schedule.hpp"
#include "src/train/trainer.hpp"
#include "src/vision/conv.hpp"
#include "src/vision/resnet.hpp"
#include "src/vision/sgd.hpp"
#include "tests/common/run_helpers.hpp"

namespace {

constexpr int kSide = 16, kClasses = 4;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Noise plus a bright 4x4 square in the quadrant named by the label.
gt::vision::ImageSplit make_split(int count, unsigned seed) {
  gt::vision::ImageSplit s{count, kSide, kSide, 1, {}, {}};
  std::mt19937 gen(seed);
  s.pixels.resize(size_t(count) * kSide * kSide);
  s.labels.resize(size_t(count));
  for (int i = 0; i < count; ++i) {
    const int label = int(gen() % kClasses);
    s.labels[size_t(i)] = label;
    uint8_t* p = s.pixels.data() + size_t(i) * kSide * kSide;
    for (int k = 0; k < kSide * kSide; ++k) p[k] = uint8_t(gen() % 64);
    const int y0 = (label / 2) * 8 + 2, x0 = (label % 2) * 8 + 2;
    for (int y = y0; y < y0 + 4; ++y)
      for (int x = x0; x < x0 + 4; ++x) p[y * kSide + x] = uint8_t(200 + gen() % 56);
  }
  return s;
}

// Written once by rank 0 into a directory every rank knows.
std::string dataset(const std::string& dir) {
  const std::string path = dir + "/squares.h5";
  if (world_rank() == 0) {
    gt::vision::ImageDataset ds;
    ds.name = "squares";
    ds.classes = kClasses;
    ds.train = make_split(64, 1);
    ds.test = make_split(16, 2);
    gt::vision::write_image_dataset(path, ds);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

gt::Config resnet_config(const std::string& out, const std::string& data) {
  gt::Config c = gt_test::tiny_config(out);
  c.model.kind = "resnet";
  c.model.resnet = "resnet8";
  c.model.image_size = kSide;
  c.model.image_channels = 1;
  c.model.classes = kClasses;
  c.train.optimizer = "sgd";
  c.train.momentum = 0.9;
  c.train.lr = 0.05;
  c.train.min_lr = 0.05;  // constant: the reference needs no schedule
  c.train.weight_decay = 5e-4;
  c.train.grad_clip = 0;
  c.train.micro_batch_size = 8;
  c.train.steps = 3;
  c.data.source = "hdf5";
  c.data.path = data;
  c.data.augment = false;  // the reference reads the same source, so augmentation would match too; off keeps it simple
  c.data.val_every = 3;
  c.data.val_batches = 2;
  return c;
}

// A rank's own run of 80 steps (10 epochs of the squares) evaluated once at the end: the length in which resnet8
// learns them (LearnsTheSquares). tag names its directory.
gt::Config learning_config(const std::string& tag) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, tag + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir, dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  c.train.steps = 80;
  c.data.val_every = 80;  // (no augmentation: a flip moves the square to the other quadrant, another class)
  return c;
}

struct RunResult {
  std::vector<double> losses, scales;  // each step's loss and loss scale
  double val_loss = -1, val_top1 = -1;
  double compression = 0;  // the last step's dense bytes over wire bytes (top-k runs)
  std::map<std::string, std::vector<float>> initial, params, momentum;
};

RunResult train(const gt::Config& c, MPI_Comm comm, int dp, bool capture_initial = false) {
  gt::Grid grid(comm, 1, 1, dp, gt::AllreduceAlgo::Library);
  gt::Trainer t(c, grid, c.to_toml());
  RunResult r;
  if (capture_initial)
    for (auto& [name, v] : t.gather_params()) r.initial[name] = v;
  EXPECT_EQ(t.run(), 0);
  for (const auto& s : t.history()) {
    r.losses.push_back(s.loss);
    r.scales.push_back(s.loss_scale);
    if (s.val_loss >= 0) r.val_loss = s.val_loss, r.val_top1 = s.val_top1;
    r.compression = s.compression_ratio;
  }
  for (auto& [name, v] : t.gather_params()) r.params[name] = v;
  for (auto& [name, v] : t.gather(gt::Buffer::AdamM)) r.momentum[name] = v;
  return r;
}

// x rounded to bfloat16's 8 significant bits, ties to even (frexp and nearbyint: not the library's bit trick).
float bf16_round(float x) {
  int e = 0;
  const double m = std::frexp(double(x), &e);
  return float(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8));
}

// x rounded to binary16 the same way: 11 significant bits, a fixed quantum of 2^-24 below 2^-14 (subnormals),
// inf from 65520 up (what rounds above 65504, the largest finite).
float fp16_round(float x) {
  if (!std::isfinite(x) || x == 0) return x;
  int e = 0;
  std::frexp(double(x), &e);
  const int q = std::max(e - 11, -24);
  const double r = std::ldexp(std::nearbyint(std::ldexp(double(x), -q)), q);
  return std::fabs(r) > 65504 ? std::copysign(INFINITY, x) : float(r);
}

// The precision a reference run computes in (train.precision written out by hand).
enum class Ref { FP32, BF16, FP16 };

// The standalone network trained on the same rows (ImageFileSource, same spec and seed) from the same initial
// parameters, with vision::sgd_step per tensor; then evaluated on the same test rows. bf16 (train.precision =
// "bf16" written out by hand): fp32 master weights updated by SGD, the network computing with their bf16
// rounding and its convolutions multiplying in bf16. fp16: the same with fp16 roundings and the loss scaled by
// train.loss_scale_initial inside the network's backward (no overflow in these runs: the scale stays), the
// gradients multiplied by its inverse before the update.
RunResult reference(const gt::Config& c, const std::map<std::string, std::vector<float>>& initial,
                    Ref precision = Ref::FP32) {
  gt::vision::ResNetConfig rc = gt::vision::resnet_preset("resnet8", kSide, kSide, 1, kClasses);
  rc.bf16 = precision == Ref::BF16;
  rc.fp16 = precision == Ref::FP16;
  const float scale = rc.fp16 ? float(c.train.loss_scale_initial) : 1.f;
  gt::vision::ResNet net(rc);
  std::vector<float> master(net.params().size());
  for (const auto& t : net.tensors()) {
    const std::vector<float>& v = initial.at(t.name);
    std::copy(v.begin(), v.end(), master.begin() + t.offset);
  }
  auto working = [&] {
    for (size_t i = 0; i < master.size(); ++i)
      net.params()[i] = rc.bf16 ? bf16_round(master[i]) : rc.fp16 ? fp16_round(master[i]) : master[i];
  };
  gt::ImageSpec spec{kSide, kSide, 1, kClasses, false, uint64_t(c.train.seed)};
  gt::ImageFileSource src(c.data.path, spec);
  const int B = c.train.micro_batch_size, pixels = kSide * kSide;
  std::vector<int32_t> rows(size_t(B) * size_t(spec.row_elems()));
  std::vector<float> images(size_t(B) * pixels), velocity(net.params().size(), 0.f);
  std::vector<int> labels(static_cast<size_t>(B));
  auto load = [&](gt::Split split, int64_t first) {
    std::vector<int64_t> samples(static_cast<size_t>(B));
    for (int b = 0; b < B; ++b) samples[size_t(b)] = first + b;
    src.read(split, samples.data(), B, rows.data());
    for (int b = 0; b < B; ++b) {
      std::memcpy(images.data() + size_t(b) * pixels, rows.data() + size_t(b) * (pixels + 1), pixels * sizeof(float));
      labels[size_t(b)] = rows[size_t(b) * (pixels + 1) + pixels];
    }
  };
  RunResult r;
  const bool lars = c.train.optimizer == "lars";
  std::vector<float> scaled;
  for (int step = 0; step < c.train.steps; ++step) {
    load(gt::Split::Train, int64_t(step) * B);
    working();
    r.losses.push_back(net.forward(B, images.data(), labels.data(), true).loss);
    net.backward({}, scale);
    for (float& g : net.grads()) g *= 1.f / scale;  // the trainer's unscaling (exact: a power of two)
    for (const auto& t : net.tensors()) {
      float* w = master.data() + t.offset;
      const float* g = net.grads().data() + t.offset;
      // LARS, written from the paper: trust = eta ||w|| / (||g|| + wd ||w||) for decayed tensors, d = trust (g + wd w)
      double trust = 1, wn = 0, gn = 0;
      for (long i = 0; i < t.size; ++i) wn += double(w[i]) * w[i], gn += double(g[i]) * g[i];
      wn = std::sqrt(wn), gn = std::sqrt(gn);
      if (lars && t.decay && wn > 0 && gn > 0) trust = c.train.lars_eta * wn / (gn + c.train.weight_decay * wn);
      scaled.assign(g, g + t.size);
      for (float& x : scaled) x = float(trust * x);
      gt::vision::SgdParams sp{float(c.train.lr), float(c.train.momentum), float(c.train.weight_decay * trust)};
      gt::vision::sgd_step(sp, t.decay, t.size, w, scaled.data(), velocity.data() + t.offset);
    }
  }
  working();
  double loss = 0, hits = 0;
  for (int v = 0; v < c.data.val_batches; ++v) {
    load(gt::Split::Val, int64_t(v) * B);
    const gt::vision::StepResult e = net.forward(B, images.data(), labels.data(), false);
    loss += e.loss * B;
    hits += e.correct;
  }
  r.val_loss = loss / (c.data.val_batches * B);
  r.val_top1 = hits / (c.data.val_batches * B);
  for (const auto& t : net.tensors()) {
    r.params[t.name].assign(master.begin() + t.offset, master.begin() + t.offset + t.size);
    r.momentum[t.name].assign(velocity.begin() + t.offset, velocity.begin() + t.offset + t.size);
  }
  return r;
}

// The largest |a - b| / (b's largest magnitude) over one tensor, and where it is.
double tensor_gap(const std::vector<float>& va, const std::vector<float>& vb, size_t* at) {
  double scale = 1e-30, worst = 0;
  for (float v : vb) scale = std::max(scale, std::fabs(double(v)));
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    const double d = std::fabs(double(va[i]) - double(vb[i])) / scale;
    if (d > worst) worst = d, *at = i;
  }
  return worst;
}

// |a - b| <= tol * (the tensor's largest magnitude) for every element: a weight near zero is the difference of
// two larger numbers (w - lr v), whose rounding is relative to them, not to the result.
double compare(const std::map<std::string, std::vector<float>>& a, const std::map<std::string, std::vector<float>>& b,
               double tol, const std::string& what) {
  double worst = 0;
  EXPECT_EQ(a.size(), b.size()) << what;
  for (const auto& [name, va] : a) {
    const std::vector<float>& vb = b.at(name);
    EXPECT_EQ(va.size(), vb.size()) << what << " " << name;
    size_t at = 0;
    const double d = tensor_gap(va, vb, &at);
    worst = std::max(worst, d);
    if (d > tol) {
      ADD_FAILURE() << what << ": " << name << "[" << at << "] " << va[at] << " vs " << vb[at];
      return worst;
    }
  }
  return worst;
}

// The largest gap of compare() without failing on it (for "these must differ" checks).
double compare_gap(const std::map<std::string, std::vector<float>>& a, const std::map<std::string, std::vector<float>>& b) {
  double worst = 0;
  size_t at = 0;
  for (const auto& [name, va] : a) worst = std::max(worst, tensor_gap(va, b.at(name), &at));
  return worst;
}

// Every step's loss of a within relative tol of b's.
void expect_losses_near(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(a[i], b[i], tol * b[i]) << "step " << i + 1;
}

// The trainer's run against the standalone network's at 1e-6 (the first test says why): losses, evaluation loss
// and top-1, then parameters and momentum (named params and momentum in failures).
void expect_matches_reference(const RunResult& run, const RunResult& ref, const std::string& params,
                              const std::string& momentum) {
  expect_losses_near(run.losses, ref.losses, 1e-6);
  EXPECT_NEAR(run.val_loss, ref.val_loss, 1e-6 * ref.val_loss);
  EXPECT_DOUBLE_EQ(run.val_top1, ref.val_top1);
  compare(run.params, ref.params, 1e-6, params);
  compare(run.momentum, ref.momentum, 1e-6, momentum);
}

}  // namespace

// Tolerance 1e-6: the trainer's SGD kernel and vision::sgd_step compute the same float operations, but the compiler
// may contract them into FMAs differently at the two sites (one rounding less), ~1 ulp per step over 3 steps; the
// losses and the evaluation are computed by the same network code on the same inputs and parameters up to that.
TEST(ResNetTrain, OneRankEqualsTheStandaloneNetwork) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_ref" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir + "/run", dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  const RunResult run = train(c, MPI_COMM_SELF, 1, true);
  const RunResult ref = reference(c, run.initial);
  expect_matches_reference(run, ref, "parameters", "momentum");
}

// model.conv_algorithm = "winograd" reaches the network. resnet8's last block has a 64 -> 64 3x3 stride-1
// convolution (4x4 maps here), which runs Winograd where oneDNN has it: the run must then differ bitwise from the
// same run with the direct sums (the trainer is deterministic, so equal bits would mean the key did nothing), and
// still compute the same function: losses, parameters and momentum within 1e-5 of the direct run's. Why 1e-5: the
// two differ by Winograd's rounding (~2x the direct sums', test_vision_kernels.cpp) carried through 3 steps;
// measured 1.6e-6 (momentum) here, while the trainer and the standalone network, both direct, differ by up to 7e-7
// from FMA contraction alone (the 1e-6 tests above). The reference recipe is not run: Winograd's own accuracy is
// tested against float64 at the kernel and network level.
TEST(ResNetTrain, WinogradKeyReachesTheNetwork) {
  gt::vision::ConvShape last{8, 4, 4, 64, 64, 3, 3, 1, 1, false, true};
  if (!gt::vision::conv_uses_winograd(last)) GTEST_SKIP() << "no Winograd kernel on this CPU: direct either way";
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_wino" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir + "/run", dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  gt::Config direct = c;
  direct.output.dir = dir + "/direct";
  c.model.conv_algorithm = "winograd";
  const RunResult w = train(c, MPI_COMM_SELF, 1), d = train(direct, MPI_COMM_SELF, 1);
  EXPECT_GT(compare_gap(w.params, d.params), 0.0) << "the Winograd run equals the direct one bitwise";
  expect_losses_near(w.losses, d.losses, 1e-5);
  compare(w.params, d.params, 1e-5, "parameters");
  compare(w.momentum, d.momentum, 1e-5, "momentum");
}

// train.precision = "bf16": the trainer's bf16 path (bf16 working copy of fp32 masters, bf16 convolutions, fp32
// BatchNorm, loss and gradients) equals the same recipe written out by hand above (same tolerance and reason as
// the fp32 test: both sides round to bf16 identically, so only FMA contraction in the two SGD loops differs).
// And bf16 is really on: the losses differ from the fp32 run's (by ~1e-3 relative here; the check is > 1e-6).
TEST(ResNetTrain, Bf16EqualsTheStandaloneRecipeAndDiffersFromFp32) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_bf16" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir + "/run", dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  c.train.precision = "bf16";
  const RunResult run = train(c, MPI_COMM_SELF, 1, true);
  const RunResult ref = reference(c, run.initial, Ref::BF16);
  expect_matches_reference(run, ref, "master parameters (bf16)", "momentum (bf16)");
  const RunResult fp32 = reference(c, run.initial);
  double most = 0;
  for (size_t i = 0; i < fp32.losses.size(); ++i)
    most = std::max(most, std::fabs(run.losses[i] - fp32.losses[i]) / fp32.losses[i]);
  EXPECT_GT(most, 1e-6) << "the bf16 run's losses equal fp32's: bf16 was not applied";
  RecordProperty("bf16_vs_fp32_max_relative_loss_gap", std::to_string(most));
}

// train.precision = "fp16" (emulated on CPUs, src/vision/fp16.hpp): the trainer's fp16 path (fp16 working copy of
// fp32 masters, fp16 convolution operands and outputs, the dynamic loss scale 2^16 applied at the logits' gradient
// and removed before the update) equals the recipe written out by hand at the fp32 test's 1e-6 (both round alike;
// only FMA contraction in the two SGD loops differs). It differs from fp32 (fp16 applied) and from bf16 (not
// bf16 under another name), by more than 1e-6; no step overflowed at 2^16 (every step kept its scale).
TEST(ResNetTrain, Fp16EqualsTheStandaloneRecipeWithTheLossScale) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_fp16" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir + "/run", dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  c.train.precision = "fp16";
  ASSERT_EQ(c.train.loss_scale_initial, 65536.0) << "the reference assumes the dynamic scale starts at 2^16";
  const RunResult run = train(c, MPI_COMM_SELF, 1, true);
  const RunResult ref = reference(c, run.initial, Ref::FP16);
  expect_matches_reference(run, ref, "master parameters (fp16)", "momentum (fp16)");
  for (const Ref other : {Ref::FP32, Ref::BF16}) {
    const RunResult o = reference(c, run.initial, other);
    double most = 0;
    for (size_t i = 0; i < o.losses.size(); ++i)
      most = std::max(most, std::fabs(run.losses[i] - o.losses[i]) / o.losses[i]);
    EXPECT_GT(most, 1e-6) << "the fp16 run's losses equal " << (other == Ref::FP32 ? "fp32" : "bf16") << "'s";
  }
}

// An overflow in the network itself, not a hook: started at a loss scale of 2^40, the scaled gradients pass
// fp16's 65504 inside the convolutions' backward, become inf, and the scaler skips those steps and halves the
// scale (hysteresis 1) until they fit; the run then learns the squares as the fp32 one does (the test below).
// Without the scale inside the network (applied at the hand-off, as fp32 and bf16 do) nothing would overflow.
TEST(ResNetTrain, Fp16OverflowsInsideTheNetworkAndTheScalerRecovers) {
  gt::Config c = learning_config("resnet_fp16_overflow");
  c.train.precision = "fp16";
  c.train.loss_scale_initial = std::ldexp(1.0, 40);
  c.train.loss_scale_hysteresis = 1;
  gt::Grid grid(MPI_COMM_SELF, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::Trainer t(c, grid, c.to_toml());
  ASSERT_EQ(t.run(), 0);
  int skipped = 0;
  double last_scale = 0, top1 = -1;
  for (const auto& s : t.history()) {
    skipped += s.skipped;
    last_scale = s.loss_scale;
    if (s.val_top1 >= 0) top1 = s.val_top1;
  }
  EXPECT_GE(skipped, 1) << "no overflow at a loss scale of 2^40";
  EXPECT_LT(last_scale, c.train.loss_scale_initial);
  EXPECT_GE(top1, 0.9) << "after " << skipped << " skipped steps, scale " << last_scale;
  RecordProperty("fp16_overflow_skipped_steps", skipped);
  RecordProperty("fp16_overflow_final_scale", std::to_string(last_scale));
}

// train.optimizer = "lars": the trainer's LARS equals the paper's rule written out above (per-tensor trust ratio
// from the tensor's weight and gradient norms; BatchNorm and the bias untouched), within the fp32 test's 1e-6 (the
// norms are double sums in both, in another order: ~1e-16; the update's float operations are grouped differently,
// ~1 ulp a step). And under ZeRO-1 at dp = 2, where each rank holds a shard of every tensor's optimizer state and
// the norms are summed over the shards, it equals one rank with 2 micro-batches (1e-6, as the fp32 DP test).
// eta = 0.02 with lr 0.05: trust ratios well away from 1 (so a LARS that did nothing would miss), and a run
// that still learns.
TEST(ResNetTrain, LarsEqualsThePaperRuleAndShardsUnderZero1) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_lars" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir + "/run", data);
  c.train.optimizer = "lars";
  c.train.lars_eta = 0.02;
  const RunResult run = train(c, MPI_COMM_SELF, 1, true);
  const RunResult ref = reference(c, run.initial);
  expect_losses_near(run.losses, ref.losses, 1e-6);
  compare(run.params, ref.params, 1e-6, "parameters (lars)");
  compare(run.momentum, ref.momentum, 1e-6, "momentum (lars)");
  gt::Config sgd = c;
  sgd.train.optimizer = "sgd";
  EXPECT_GT(compare_gap(reference(sgd, run.initial).params, ref.params), 1e-3) << "LARS changed nothing";

  gt::Config z = resnet_config(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_lars_z1"), data);
  z.train.optimizer = "lars";
  z.train.lars_eta = 0.02;
  z.train.micro_batch_size = 4;
  z.parallel.zero = 1;
  const RunResult dp2 = train(z, MPI_COMM_WORLD, 2);
  gt::Config one = z;
  one.output.dir = dir + "/acc";
  one.parallel.zero = 0;
  one.train.micro_batches = 2;
  const RunResult acc = train(one, MPI_COMM_SELF, 1);
  for (size_t i = 0; i < acc.losses.size(); ++i)
    EXPECT_NEAR(dp2.losses[i], acc.losses[i], 1e-6 * acc.losses[i]) << "step " << i + 1;
  compare(dp2.params, acc.params, 1e-6, "parameters (lars, zero 1 at dp 2)");
}

// The squares are learnable: 80 steps (10 epochs) of resnet8 reach at least 90% top-1 on the 16 test images (chance is 25%;
// the reference test above shows the arithmetic, this that the loop learns).
TEST(ResNetTrain, LearnsTheSquares) {
  gt::Config c = learning_config("resnet_learn");
  const std::string dir = c.output.dir;
  for (const char* precision : {"fp32", "bf16", "fp16"}) {  // bf16 and fp16 learn like fp32 (the words)
    SCOPED_TRACE(precision);
    c.train.precision = precision;
    c.output.dir = dir + "/" + precision;
    const RunResult run = train(c, MPI_COMM_SELF, 1);
    EXPECT_GE(run.val_top1, 0.9) << "loss " << run.losses.front() << " -> " << run.losses.back();
    EXPECT_LT(run.losses.back(), 0.5 * run.losses.front());
  }
}

// A run given in epochs (train.epochs, warmup_epochs, a step decay at epoch milestones) takes its length from the
// dataset: 64 training images at 8 a step are 8 steps an epoch, so 1.5 epochs are 12 steps, half an epoch of
// warm-up 4 and the milestone at epoch 1 step 8; each step's rate is the definition written out here. And
// model.zero_init_residual starts exactly the last BatchNorm gamma of each block at 0 (Goyal et al.), no other.
TEST(ResNetTrain, EpochScheduleAndZeroInitResidual) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_epochs" + std::to_string(world_rank()));
  gt::Config c = resnet_config(dir, dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data")));
  c.train.epochs = 1.5;
  c.train.warmup_epochs = 0.5;
  c.train.lr_decay = "step";
  c.train.lr_milestones = "1";
  c.train.lr_decay_factor = 0.1;
  c.data.val_every = 100;
  for (bool zero_init : {false, true}) {
    SCOPED_TRACE(zero_init ? "zero_init_residual" : "default init");
    c.model.zero_init_residual = zero_init;
    c.output.dir = dir + (zero_init ? "/zero" : "/ones");
    gt::Grid grid(MPI_COMM_SELF, 1, 1, 1, gt::AllreduceAlgo::Library);
    gt::Trainer t(c, grid, c.to_toml());
    int last_gammas = 0;
    for (auto& [name, v] : t.gather_params()) {
      if (name.size() < 6 || name.compare(name.size() - 6, 6, ".gamma") != 0) continue;
      const bool last = name.find(".bn2.gamma") != std::string::npos;  // resnet8: basic blocks of two convolutions
      last_gammas += last;
      const float want = zero_init && last ? 0.f : 1.f;
      for (float g : v) ASSERT_EQ(g, want) << name;
    }
    EXPECT_EQ(last_gammas, 3);  // one block in each of resnet8's three stages
    ASSERT_EQ(t.run(), 0);
    ASSERT_EQ(t.history().size(), 12u);
    for (int u = 0; u < 12; ++u) {
      const double want = u < 4 ? 0.05 * (u + 1) / 4.0 : u < 8 ? 0.05 : 0.005;
      EXPECT_NEAR(t.history()[size_t(u)].lr, want, 1e-12) << "update " << u;
    }
  }
}

// dp = 2 with 4 images per rank against one rank with 2 micro-batches of 4: the same BatchNorm groups (per-rank
// statistics over 4 images), the same weights 1/2 on each group's mean gradient; only the all-reduce's
// summation order differs from the accumulation's (2 terms: none), so 1e-6 covers it with room. The evaluation
// differs by design: under DP the running statistics are DP rank 0's (updated from its 4 images a step), with
// accumulation they are updated by both micro-batches in turn (docs/vision.md).
TEST(ResNetTrain, DataParallelEqualsGradientAccumulation) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  gt::Config c = resnet_config(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_dp2"), data);
  c.train.micro_batch_size = 4;
  const RunResult dp2 = train(c, MPI_COMM_WORLD, 2);
  gt::Config one = c;
  one.output.dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_acc" + std::to_string(world_rank()));
  one.train.micro_batches = 2;
  const RunResult acc = train(one, MPI_COMM_SELF, 1);
  expect_losses_near(dp2.losses, acc.losses, 1e-6);
  compare(dp2.params, acc.params, 1e-6, "parameters");
}

// Top-k compression (compress.method = topk, DGC-style error feedback) through the ResNet's gradient buckets. At
// density 1 every entry is sent and each bucket's sum over the 2 ranks is the same two fp32 terms the dense
// all-reduce adds (a + b is the same float in either order), so the runs agree to 1e-6; at density 0.05 the wire
// carries a small fraction (the ratio is at least 5; bucket indices cost some) and the parameters move away from
// the dense run's (so the first comparison can fail), and the loop still learns the squares.
TEST(ResNetTrain, TopkCompressionThroughTheBuckets) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_topk");
  gt::Config c = resnet_config(dir + "/dense", data);
  c.train.micro_batch_size = 4;
  const RunResult dense = train(c, MPI_COMM_WORLD, 2);
  c.compress.method = "topk";
  c.compress.density = 1.0;
  c.output.dir = dir + "/full";
  const RunResult full = train(c, MPI_COMM_WORLD, 2);
  compare(full.params, dense.params, 1e-6, "top-k at density 1 against dense");
  c.compress.density = 0.05;
  c.output.dir = dir + "/sparse";
  const RunResult sparse = train(c, MPI_COMM_WORLD, 2);
  EXPECT_GE(sparse.compression, 5.0);
  EXPECT_GT(compare_gap(sparse.params, dense.params), 1e-3);
  c.train.steps = 80;
  c.data.val_every = 80;
  c.output.dir = dir + "/learn";
  const RunResult learn = train(c, MPI_COMM_WORLD, 2);
  EXPECT_GE(learn.val_top1, 0.9) << "loss " << learn.losses.front() << " -> " << learn.losses.back();
}

// ZeRO-2/3 for the ResNet (parallel.zero): gradients handed off unit by unit as backward finishes them, into the
// staged reduce-scatter's buffers (one micro-batch) or the bucketed reduce-scatter (two); stage 3 gathers every
// unit before the forward. Each is the same update as ZeRO-0's: every parameter's gradient is the same sum of the
// same two ranks' terms (a + b is one float in either order), so 1e-6 (no accumulation-order freedom is left but
// the reduction's) and the momentum too; bf16 at stage 3 against bf16 at stage 0 (the gathers carry the working
// copy), fp16 at stages 2 and 3 (its gradients arrive already scaled: hand_off adds them unweighted). Without the
// hand-off (gradients never reaching the sink) the losses stay and the parameters do not move.
TEST(ResNetTrain, ZeroStagesTwoAndThreeEqualZeroZero) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_zero");
  for (const char* precision : {"fp32", "bf16", "fp16"})  // fp16: its gradients arrive scaled (hand_off's other path)
    for (int micro_batches : {1, 2}) {
      gt::Config c = resnet_config(dir + "/z0", data);
      c.train.micro_batch_size = 4;
      c.train.micro_batches = micro_batches;
      c.train.precision = precision;
      const std::string tag = std::string(precision) + " x" + std::to_string(micro_batches);
      c.output.dir = dir + "/z0_" + precision + std::to_string(micro_batches);
      const RunResult z0 = train(c, MPI_COMM_WORLD, 2);
      for (int stage : {2, 3}) {
        if (std::string(precision) == "bf16" && stage == 2) continue;  // stage 3 covers the 16-bit gathers
        SCOPED_TRACE(tag + " zero " + std::to_string(stage));
        c.parallel.zero = stage;
        c.output.dir = dir + "/z" + std::to_string(stage) + "_" + precision + std::to_string(micro_batches);
        const RunResult z = train(c, MPI_COMM_WORLD, 2);
        ASSERT_EQ(z.losses.size(), z0.losses.size());
        for (size_t i = 0; i < z0.losses.size(); ++i)
          EXPECT_NEAR(z.losses[i], z0.losses[i], 1e-6 * z0.losses[i]) << "step " << i + 1;
        compare(z.params, z0.params, 1e-6, "parameters");
        compare(z.momentum, z0.momentum, 1e-6, "momentum");
        c.parallel.zero = 0;
      }
    }
}

// Sync BN: dp = 2 with 4 images per rank and model.sync_bn normalises over the 8 images of both ranks, the same
// function as one rank with one micro-batch of 8. The statistics are summed from two partial double sums instead
// of one, and the parameter gradients are two halves all-reduced instead of one sum: rounding of the fp32 results
// only, so 1e-5 (and without sync BN the same comparison misses by far more: checked below, so the test can fail).
TEST(ResNetTrain, SyncBatchNormEqualsOneRankOnTheWholeBatch) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  gt::Config c = resnet_config(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_sync"), data);
  gt::Config one = c;
  one.output.dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_sync_one" + std::to_string(world_rank()));
  const RunResult whole = train(one, MPI_COMM_SELF, 1);  // 8 images in one BatchNorm
  c.train.micro_batch_size = 4;
  c.model.sync_bn = true;
  const RunResult sync = train(c, MPI_COMM_WORLD, 2);
  expect_losses_near(sync.losses, whole.losses, 1e-5);
  compare(sync.params, whole.params, 1e-5, "parameters (sync BN)");
  c.model.sync_bn = false;
  c.output.dir = gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_nosync");
  const RunResult local = train(c, MPI_COMM_WORLD, 2);
  EXPECT_GT(std::fabs(local.losses.back() - whole.losses.back()), 1e-4 * whole.losses.back())
      << "per-rank statistics should not match the whole batch's";
}

// 2:4 sparsity on the convolutions (SR-STE): after training, the working weights of every convolution with
// input channels in groups of 4 keep at most 2 of every 4 along the input channels; the 1-channel stem and the
// classifier stay dense; and the masked network still learns the squares (>= 90% top-1, as dense).
TEST(ResNetTrain, TwoFourSparsityMasksTheConvolutions) {
  gt::Config c = learning_config("resnet_24_");
  c.sparsity.pattern = "2:4";
  gt::Grid grid(MPI_COMM_SELF, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::Trainer t(c, grid, c.to_toml());
  ASSERT_EQ(t.run(), 0);
  int masked = 0;
  for (const auto& [name, w] : t.gather(gt::Buffer::Params)) {
    const bool conv = name.find("conv") != std::string::npos || name.find("proj.weight") != std::string::npos;
    const bool stem = name.rfind("stem.", 0) == 0;
    int dense_groups = 0;
    for (size_t g = 0; g + 4 <= w.size(); g += 4) {
      int nz = 0;
      for (size_t j = 0; j < 4; ++j) nz += w[g + j] != 0.0f;
      dense_groups += nz > 2;
    }
    if (conv && !stem) {
      EXPECT_EQ(dense_groups, 0) << name << " has groups of 4 with more than 2 weights";
      ++masked;
    } else if (name == "stem.conv.weight" || name == "fc.weight") {
      EXPECT_GT(dense_groups, 0) << name << " should stay dense";
    }
  }
  EXPECT_GE(masked, 6);  // resnet8: 3 blocks x 2 convs, and the 2 projections
  EXPECT_GE(t.history().back().val_top1, 0.9);
}

// The body of ResumeIsBitwiseAndReshardsToOneRank in one precision.
static void resume_and_reshard(const std::string& precision) {
  const std::string data = dataset(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_data"));
  gt::Config c = resnet_config(gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_whole_" + precision), data);
  c.train.micro_batch_size = 4;
  c.train.steps = 4;
  c.data.val_every = 4;
  c.train.precision = precision;
  c.train.loss_scale_initial = std::ldexp(1.0, 22);
  c.train.loss_scale_hysteresis = 1;
  const RunResult whole = train(c, MPI_COMM_WORLD, 2);

  gt::Config part = c;
  part.output.dir = gt_test::fresh_dir(MPI_COMM_WORLD, "resnet_part_" + precision);
  part.train.max_steps_per_run = 2;
  part.checkpoint.save_final = true;
  {
    gt::Grid grid(MPI_COMM_WORLD, 1, 1, 2, gt::AllreduceAlgo::Library);
    gt::Trainer t(part, grid, part.to_toml());
    EXPECT_NE(t.run(), 0);  // stopped for the restart (exit 75)
  }
  part.checkpoint.resume = "auto";
  part.train.max_steps_per_run = 0;
  const RunResult resumed = train(part, MPI_COMM_WORLD, 2);
  ASSERT_EQ(resumed.losses.size(), 2u);
  EXPECT_EQ(resumed.losses[0], whole.losses[2]);
  EXPECT_EQ(resumed.losses[1], whole.losses[3]);
  EXPECT_EQ(resumed.scales, std::vector<double>(whole.scales.begin() + 2, whole.scales.end()));
  if (precision == "fp16") {
    EXPECT_LT(whole.scales[2], c.train.loss_scale_initial) << "no overflow before the stop";
  }
  EXPECT_EQ(resumed.val_loss, whole.val_loss);
  EXPECT_EQ(resumed.val_top1, whole.val_top1);
  compare(resumed.params, whole.params, 0, "parameters after the resume");
  compare(resumed.momentum, whole.momentum, 0, "momentum after the resume");

  if (world_rank() == 0) {  // the dp = 2 checkpoint of step 2 on one rank
    gt::Config one = c;
    one.output.dir = gt_test::fresh_dir(MPI_COMM_SELF, "resnet_one");
    one.checkpoint.resume = part.output.dir + "/checkpoints/step_00000002.h5";
    one.train.micro_batches = 2;
    const RunResult r = train(one, MPI_COMM_SELF, 1);
    ASSERT_EQ(r.losses.size(), 2u);
    EXPECT_NEAR(r.losses[1], whole.losses[3], 1e-6 * whole.losses[3]);
    compare(r.params, whole.params, 1e-6, "parameters after resharding to one rank");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Stopped after 2 of 4 steps and resumed: bit for bit the uninterrupted run (parameters, momentum, and the
// evaluation, which reads BatchNorm's running statistics from the checkpoint on rank 1). The dp = 2 checkpoint
// then resumes on one rank with 2 micro-batches of 4 (the same BatchNorm groups): within 1e-6 as above.
// fp16 too, started at a loss scale of 2^22 with hysteresis 1 so that the first steps overflow inside the network
// and the scale the checkpoint carries is not the initial one: the resumed run must go on from it (the same scales
// and losses as the uninterrupted run).
TEST(ResNetTrain, ResumeIsBitwiseAndReshardsToOneRank) {
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    resume_and_reshard(precision);
  }
}

