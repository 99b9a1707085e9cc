// The linear scaling rule with gradual warmup (src/train/lr_scaling.hpp) against the paper's own numbers: Goyal et
// al. 2017 train ResNet-50 at batch 8192 with lr 0.1 x 8192/256 = 3.2, warmed up from 0.1 over 5 epochs.
#include <gtest/gtest.h>

#include "src/train/lr_scaling.hpp"

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
