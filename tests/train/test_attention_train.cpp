// model.attention = fused against materialized in whole training runs of the real trainer (one layout per test:
// tp pp precision from the command line). seq_len 150 crosses the host split's 128-row query and key tiles, and
// d_model 48 over 4 heads gives hd = 12.
//
// The two paths compute the same function with different summation orders (tiles and an online softmax instead of
// full rows), so they agree to rounding, not bit for bit. Tolerances, from what the steps can amplify:
// - fp32, 5 steps: every step's loss within 1e-5 relative, the final parameters and the last gradients within 5e-5
//   norm-wise relative. The attention kernels agree to ~3e-7 (tests/kernels/test_attention_fused.cpp); AdamW
//   divides by sqrt(v), so a rounding-level difference in a small gradient element can move its parameter by a
//   visible fraction of lr, and the steps compound it: measured 4.8e-6 (parameters) and 7.4e-6 (gradients) after 5
//   steps, 2026-12-04; 5e-5 leaves a factor 7.
// - bf16, 1 step: the weights and activations are rounded to bf16 (u = 2^-8) in both runs but at different points
//   (the materialized path rounds the normalised probabilities, the fused one the unnormalised exp(S - m) as GEMM
//   operands and divides by the row sum in fp32), so the attention outputs differ by about u per element and a
//   step with AdamW at lr 1e-2 turns that into percent-level parameter differences (measured 1.4% after 5 steps).
//   So one step: the loss (the forward alone) within 2e-3 relative (half of u) and the gradients within 2u = 7.8e-3
//   norm-wise.
// Also, with the fused path, train.recompute = selective and full equal none bit for bit (selective has nothing
// to recompute with fused attention; full reruns the same kernels on the same inputs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"

namespace {
using Result = gt_test::RunRecord;

Result run(const gt::Config& c) { return gt_test::run_and_record(MPI_COMM_WORLD, c); }

// ||a - b|| / ||b|| over all tensors together.
double rel(const std::vector<std::pair<std::string, std::vector<float>>>& a,
           const std::vector<std::pair<std::string, std::vector<float>>>& b) {
  double d = 0, n = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].second.size(); ++i) {
      const double x = a[k].second[i], y = b[k].second[i];
      d += (x - y) * (x - y);
      n += y * y;
    }
  return std::sqrt(d / n);
}
}  // namespace

TEST(FusedAttentionTraining, EqualsMaterializedWithinRounding) {
  ASSERT_EQ(gt_test::argc, 4) << "usage: test_attention_train tp pp precision";
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "attention");
  gt::Config c = gt_test::tiny_config(dir);
  c.parallel.tp = std::atoi(gt_test::argv[1]);
  c.parallel.pp = std::atoi(gt_test::argv[2]);
  c.train.precision = gt_test::argv[3];
  c.model.d_model = 48;
  c.model.seq_len = 150;
  c.train.micro_batch_size = 2;
  c.train.micro_batches = 2;
  const bool bf16 = c.train.precision == "bf16";
  c.train.steps = bf16 ? 1 : 5;
  c.model.attention = "materialized";
  c.output.dir = dir + "/materialized";
  const Result mat = run(c);
  c.model.attention = "fused";
  c.output.dir = dir + "/fused";
  const Result fus = run(c);
  ASSERT_EQ(fus.losses.size(), mat.losses.size());
  for (size_t s = 0; s < mat.losses.size(); ++s)
    EXPECT_NEAR(fus.losses[s], mat.losses[s], (bf16 ? 2e-3 : 1e-5) * std::fabs(mat.losses[s])) << "step " << s;
  ASSERT_EQ(fus.params.size(), mat.params.size());
  const double dp = rel(fus.params, mat.params), dg = rel(fus.grads, mat.grads);
  EXPECT_LT(dg, bf16 ? 2 * std::ldexp(1.0, -8) : 5e-5);
  if (!bf16) {
    EXPECT_LT(dp, 5e-5);
  }
  std::printf("fused vs materialized (%s, %d steps): parameters %.3g, last gradients %.3g norm-wise relative, "
              "first loss %.3g relative\n", c.train.precision.c_str(), c.train.steps, dp, dg,
              std::fabs(fus.losses[0] / mat.losses[0] - 1));

  gt_test::expect_recompute_bitwise(c, fus, dir + "/fused_");
}
