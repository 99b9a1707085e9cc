// Single-rank training: the loss falls on the learnable synthetic task, runs are bitwise reproducible, and a
// different seed gives a different run.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/common/run_helpers.hpp"
#include "src/data/data_source.hpp"
#include "src/train/trainer.hpp"

namespace {

std::vector<double> train_losses(gt::Config c) {
  gt::Grid grid(MPI_COMM_WORLD, 1, 1, 1, gt::AllreduceAlgo::Library);
  gt::Trainer t(c, grid, c.to_toml());
  EXPECT_EQ(t.run(), 0);
  std::vector<double> l;
  for (const auto& s : t.history()) l.push_back(s.loss);
  return l;
}

gt::Config learnable(const std::string& dir) {
  gt::Config c = gt_test::learnable_config(dir);
  c.train.steps = 80;
  c.train.warmup_steps = 5;
  c.train.weight_decay = 0.0;
  return c;
}

}  // namespace

TEST(Training, LossFallsTowardsTheTasksOptimum) {
  gt::Config c = learnable(gt_test::fresh_dir(MPI_COMM_WORLD, "learn"));
  auto losses = train_losses(c);
  ASSERT_EQ(losses.size(), size_t(c.train.steps));
  const double start = std::log(double(c.model.vocab_size));  // uniform prediction
  gt::SyntheticSource src(c.model.vocab_size, c.model.seq_len, uint64_t(c.train.seed), c.data.synthetic_noise);
  const double best = src.optimal_loss();
  EXPECT_NEAR(losses.front(), start, 0.3) << "the first loss should be that of a near-uniform prediction";
  double tail = 0;
  for (size_t i = losses.size() - 5; i < losses.size(); ++i) tail += losses[i] / 5;
  // The model must close at least 80% of the gap between the uniform prediction and the best possible loss:
  // a model that learned nothing stays near ln V, one that learned the successor rule approaches `best`.
  EXPECT_LT(tail, best + 0.2 * (start - best)) << "start " << start << " optimum " << best << " tail " << tail;
  EXPECT_GT(tail, best - 0.05) << "below the entropy of the task: the loss or the data is wrong";
}

TEST(Training, SameSeedIsBitwiseIdenticalOtherSeedDiffers) {
  gt::Config c = gt_test::tiny_config(gt_test::fresh_dir(MPI_COMM_WORLD, "det"));
  c.train.steps = 6;
  auto a = train_losses(c);
  auto b = train_losses(c);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i;
  c.train.seed = 43;
  auto d = train_losses(c);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != d[i];
  EXPECT_EQ(differ, int(a.size()));
}

TEST(Training, GradientAccumulationMatchesOneLargeBatch) {
  gt::Config c = gt_test::tiny_config(gt_test::fresh_dir(MPI_COMM_WORLD, "accum"));
  auto one = train_losses(c);  // 16 sequences in one micro-batch
  c.train.micro_batch_size = 4;
  c.train.micro_batches = 4;
  auto four = train_losses(c);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(four[i], one[i], 1e-5 * std::fabs(one[i])) << "step " << i;
}
