// The learning-rate schedule: the linear scaling rule with gradual warmup (src/train/optim/lr_scaling.hpp) against the paper's own numbers: Goyal et
// al. 2017 train ResNet-50 at batch 8192 with lr 0.1 x 8192/256 = 3.2, warmed up from 0.1 over 5 epochs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/train/optim/lr_scaling.hpp"
#include "src/train/optim/lr_schedule.hpp"

TEST(LrScaling, LinearRuleWithGradualWarmup) {
  using gt::LrScaling;
  const long warm = 5 * 156;  // 5 epochs of 1.28M images at 8192 per step (156 steps per epoch)
  EXPECT_DOUBLE_EQ(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, 0), 0.1);
  EXPECT_DOUBLE_EQ(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, warm), 3.2);
  EXPECT_DOUBLE_EQ(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, 10 * warm), 3.2);
  EXPECT_NEAR(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, warm / 2), 0.1 + 3.1 / 2, 1e-12);
  for (long s = 1; s < warm; ++s)  // strictly rising during warmup
    ASSERT_GT(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, s),
              gt::scaled_learning_rate(LrScaling::Linear, 0.1, 8192, 256, warm, s - 1));
  // none: the base rate whatever the batch; no warmup: the target at once
  EXPECT_DOUBLE_EQ(gt::scaled_learning_rate(LrScaling::None, 0.1, 8192, 256, warm, 0), 0.1);
  EXPECT_DOUBLE_EQ(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 512, 256, 0, 0), 0.2);
  EXPECT_THROW(gt::scaled_learning_rate(LrScaling::Linear, 0.1, 512, 0, 0, 0), gt::Error);
}

// The whole schedule (src/train/optim/lr_schedule.hpp). Goyal et al.'s ResNet-50 recipe given in epochs: 90 epochs of
// ImageNet's 1,281,167 images at batch 8192, 5 warm-up epochs, /10 at epochs 30, 60 and 80. The expected steps are
// the definitions written out here (ceil for the run's length, nearest step for warm-up and milestones).
TEST(LrSchedule, EpochsResolveAgainstTheDataset) {
  gt::TrainConfig t;
  t.lr = 0.1;
  t.epochs = 90;
  t.warmup_epochs = 5;
  t.lr_decay = "step";
  t.lr_milestones = "30,60,80";
  t.lr_reference_batch = 256;
  gt::ConfigChoices c;
  c.lr_scaling = gt::LrScaling::Linear;
  c.lr_decay = gt::LrDecay::Step;
  const double per_epoch = 1281167.0 / 8192.0;
  const gt::LrSchedule s(t, c, 8192, 1281167);
  EXPECT_EQ(s.total_steps(), int(std::ceil(90 * per_epoch)));
  EXPECT_EQ(s.warmup_steps(), int(std::lround(5 * per_epoch)));
  ASSERT_EQ(s.milestones().size(), 3u);
  EXPECT_EQ(s.milestones()[0], int(std::lround(30 * per_epoch)));
  EXPECT_EQ(s.milestones()[2], int(std::lround(80 * per_epoch)));
  // warm-up from 0.1 to 3.2, then 3.2 until the first milestone, x 0.1 at each
  const int w = s.warmup_steps(), m0 = s.milestones()[0], m1 = s.milestones()[1], m2 = s.milestones()[2];
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(w), 3.2);
  EXPECT_DOUBLE_EQ(s.at(m0 - 1), 3.2);
  EXPECT_NEAR(s.at(m0), 0.32, 1e-12);
  EXPECT_NEAR(s.at(m1 - 1), 0.32, 1e-12);
  EXPECT_NEAR(s.at(m1), 0.032, 1e-12);
  EXPECT_NEAR(s.at(m2), 0.0032, 1e-12);
  EXPECT_NEAR(s.at(s.total_steps() - 1), 0.0032, 1e-12);
  // a source without epochs (synthetic: 2^40 samples) cannot take train.epochs
  EXPECT_THROW(gt::LrSchedule(t, c, 8192, int64_t(1) << 40), gt::Error);
}

// Given in steps with the cosine decay, the schedule is the function the trainer always used (bitwise: a run's
// losses must not move), with and without the linear scaling rule (whose warm-up starts at the unscaled rate).
TEST(LrSchedule, CosineInStepsIsTheFormerFormula) {
  gt::TrainConfig t;
  t.steps = 200;
  t.lr = 0.1;
  t.min_lr = 0.001;
  t.warmup_steps = 20;
  gt::ConfigChoices c;
  for (gt::LrScaling mode : {gt::LrScaling::None, gt::LrScaling::Linear}) {
    c.lr_scaling = mode;
    const gt::LrSchedule s(t, c, 512, 60000);
    EXPECT_EQ(s.total_steps(), 200);
    const double peak = mode == gt::LrScaling::None ? 0.1 : 0.2;
    for (int u = 0; u < 200; ++u) {
      const double old = mode == gt::LrScaling::Linear && u < 20
                             ? gt::scaled_learning_rate(mode, 0.1, 512, 256, 20, u)
                             : gt::learning_rate(u, peak, 0.001, 20, 0, 200);
      ASSERT_EQ(s.at(u), old) << "update " << u;
    }
  }
}

// The schedule's keys refuse what cannot mean anything, with a line naming the key.
TEST(LrSchedule, BadKeysAreRefused) {
  auto refused = [](const std::vector<std::string>& sets, const std::string& key) {
    gt::Config c;
    try {  // a name outside a key's choices is refused by set() already, a range or a rule by validate()
      for (const auto& kv : sets) c.set(kv);
      c.validate();
    } catch (const gt::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << sets.front();
  };
  refused({"train.epochs=-1"}, "train.epochs");
  refused({"train.epochs=10", "train.warmup_epochs=1", "train.warmup_steps=5"}, "train.warmup_epochs");
  refused({"train.warmup_epochs=1"}, "train.warmup_epochs");
  refused({"train.lr_milestones=60,30"}, "train.lr_milestones");
  refused({"train.lr_milestones=30,x"}, "train.lr_milestones");
  refused({"train.lr_decay=step"}, "train.lr_decay");
  refused({"train.lr_decay=linear"}, "train.lr_decay");
  refused({"train.lr_decay_factor=0"}, "train.lr_decay_factor");
  gt::Config ok;  // and the recipe itself passes
  for (const char* kv : {"train.epochs=90", "train.warmup_epochs=5", "train.lr_decay=step", "train.lr_milestones=30,60,80"})
    ok.set(kv);
  EXPECT_NO_THROW(ok.validate());
}
