// Dynamic loss scaling. Unit tests of the scaler's rules (Megatron/DeepSpeed semantics, docs/precision.md),
// then the trainer with an inf or NaN injected into one gradient element of one rank (test hook): the step is
// skipped on every rank, and parameters and AdamW moments end bit for bit where a run that stopped before
// that step left them.
// ARGS (for the trainer case): tp pp dp inject_rank nan(0|1)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "src/core/error.hpp"
#include "src/train/extensions/loss_scaler.hpp"
#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"

namespace {

gt::TrainConfig scaler_config(double initial, double min, int window, int hysteresis) {
  gt::TrainConfig t;
  t.loss_scale_initial = initial;
  t.loss_scale_min = min;
  t.loss_scale_window = window;
  t.loss_scale_hysteresis = hysteresis;
  return t;  // growth 2, backoff 0.5 (defaults)
}

TEST(LossScaler, HalvesOnlyOnceTheHysteresisIsUsedUp) {
  gt::LossScaler s(scaler_config(1024, 1, 100, 2), true);
  EXPECT_TRUE(s.update(true, 1));  // skipped, hysteresis 2 -> 1, scale kept
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_TRUE(s.update(true, 2));  // hysteresis used up: backoff
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true, 3));  // and every further overflow backs off until a full clean window
  EXPECT_EQ(s.scale(), 256);
}

TEST(LossScaler, NonConsecutiveOverflowsUseUpTheHysteresisToo) {
  gt::LossScaler s(scaler_config(1024, 1, 5, 2), true);
  EXPECT_TRUE(s.update(true, 1));
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(s.update(false, 2 + i));  // 4 clean steps: window (5) not complete
  EXPECT_EQ(s.state().hysteresis_left, 1);
  EXPECT_TRUE(s.update(true, 6));
  EXPECT_EQ(s.scale(), 512);
}

TEST(LossScaler, GrowsAfterACleanWindowAndRefillsTheHysteresis) {
  gt::LossScaler s(scaler_config(1024, 1, 3, 2), true);
  EXPECT_TRUE(s.update(true, 1));  // hysteresis 1 left
  EXPECT_FALSE(s.update(false, 2));
  EXPECT_FALSE(s.update(false, 3));
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_FALSE(s.update(false, 4));  // third clean step in a row
  EXPECT_EQ(s.scale(), 2048);
  EXPECT_EQ(s.state().hysteresis_left, 2);
  EXPECT_EQ(s.state().clean_steps, 0);
  EXPECT_TRUE(s.update(true, 5));  // refilled: one overflow is absorbed again
  EXPECT_EQ(s.scale(), 2048);
}

TEST(LossScaler, NeverGoesBelowTheMinimumAndStopsThere) {
  gt::LossScaler s(scaler_config(6, 2, 100, 1), true);
  EXPECT_TRUE(s.update(true, 1));
  EXPECT_EQ(s.scale(), 3);
  EXPECT_TRUE(s.update(true, 2));
  EXPECT_EQ(s.scale(), 2);  // 1.5 clamped to the minimum
  try {
    s.update(true, 3);
    FAIL() << "no error with the scale stuck at the minimum";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss scale stuck at the minimum"), std::string::npos) << e.what();
  }
}

TEST(LossScaler, OffMeansScaleOneAndAnOverflowIsAnError) {
  gt::LossScaler s(scaler_config(1024, 1, 1, 1), false);
  EXPECT_EQ(s.scale(), 1);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(s.update(false, i + 1));
  EXPECT_EQ(s.scale(), 1);  // no growth when off
  EXPECT_THROW(s.update(true, 4), gt::Error);
}

struct RunResult {
  std::vector<gt::StepStats> history;
  gt::TrainProgress progress;
  double loss_scale = 0;  // the scaler's at the end
  std::vector<std::pair<std::string, std::vector<float>>> params, m, v;
};

RunResult train(gt::Config c) {
  gt::Grid grid(MPI_COMM_WORLD, c.parallel.tp, c.parallel.pp, c.parallel.dp, gt::AllreduceAlgo::Library);
  gt::Trainer t(c, grid, c.to_toml());
  EXPECT_EQ(t.run(), 0);
  return RunResult{t.history(), t.progress(), t.loss_scale(), t.gather_params(), t.gather(gt::Buffer::AdamM),
                   t.gather(gt::Buffer::AdamV)};
}

TEST(LossScaler, OneRanksOverflowSkipsTheStepOnEveryRank) {
  if (gt_test::argc != 6 && gt_test::argc != 7)
    GTEST_SKIP() << "trainer case needs ARGS tp pp dp inject_rank nan [precision]";
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  gt::Config c = gt_test::tiny_config(gt_test::fresh_dir(MPI_COMM_WORLD, "loss_scale"));
  c.parallel.tp = std::atoi(gt_test::argv[1]);
  c.parallel.pp = std::atoi(gt_test::argv[2]);
  c.parallel.dp = std::atoi(gt_test::argv[3]);
  ASSERT_EQ(world, c.parallel.tp * c.parallel.pp * c.parallel.dp);
  c.train.micro_batches = 2;
  c.train.micro_batch_size = 16 / (2 * c.parallel.dp);
  // fp16 (its scaler on by default) or the scaler forced on in fp32: the same decision path, on 16-bit
  // activations or not. In fp16 the skipped step must also leave the fp16 working copy as it was: the
  // gathered masters are compared below, and the working copy is only ever rounded from them.
  c.train.precision = gt_test::argc == 7 ? gt_test::argv[6] : "fp32";
  c.train.loss_scale = "dynamic";
  c.train.loss_scale_initial = 1024;
  c.train.loss_scale_hysteresis = 1;
  // The overflow comes at step 2 on one rank (a run of one step never reaches it).
  setenv("GRIDTRAIN_TEST_INF_RANK", gt_test::argv[4], 1);
  setenv("GRIDTRAIN_TEST_INF_STEP", "2", 1);
  setenv("GRIDTRAIN_TEST_INF_NAN", gt_test::argv[5], 1);

  gt::Config one = c;
  one.train.steps = 1;
  one.output.dir += "/one_step";
  gt::Config two = c;
  two.train.steps = 2;
  two.output.dir += "/two_steps";
  const RunResult a = train(one), b = train(two);

  ASSERT_EQ(b.history.size(), 2u);
  EXPECT_FALSE(b.history[0].skipped);
  EXPECT_TRUE(b.history[1].skipped) << "this rank did not skip the step";
  EXPECT_FALSE(std::isfinite(b.history[1].grad_norm));
  EXPECT_EQ(b.progress.skipped, 1);
  EXPECT_EQ(b.history[1].loss_scale, 1024);
  EXPECT_EQ(b.loss_scale, 512);  // hysteresis 1: the overflow backed off at once
  // Bit for bit: the skipped step changed no parameter and no moment.
  for (const auto* pair : {&a.params, &a.m, &a.v}) {
    const auto& other = pair == &a.params ? b.params : pair == &a.m ? b.m : b.v;
    ASSERT_EQ(pair->size(), other.size());
    for (size_t k = 0; k < pair->size(); ++k)
      EXPECT_EQ(0, std::memcmp((*pair)[k].second.data(), other[k].second.data(), other[k].second.size() * 4))
          << (*pair)[k].first;
  }
}

}  // namespace
