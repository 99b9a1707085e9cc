// One parallel layout (tp pp dp micro_batches schedule allreduce [precision [arch]], from the command line) against
// the single-rank run in the same precision: five steps on the same global batch and seed give the single-rank
// losses within 1e-5 relative (fp32; bf16: see the tolerances below), and the gathered final parameters match.
// arch llama: the same with the Llama block (RMSNorm, SwiGLU, RoPE, 4 heads on 2 key/value heads, untied head),
// whose TP splits the grouped qkv weight by key/value heads and whose head is not tied to the first stage's wte.
// sp (a last argument): parallel.sequence_parallel on, against the single rank as above, and also against the same
// layout without it: the losses and the global gradient norms of every step within 1e-5 relative in fp32 (the
// summation orders differ only: reduce-scatter against all-reduce, and the norms' gain gradients summed per rank
// first), 4e-3 relative in bf16 (the tolerance of the losses below; both paths round each reduced row once).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"
#include "src/train/trainer.hpp"

namespace {
int g_tp = 1, g_pp = 1, g_dp = 1, g_mb = 1;
std::string g_sched = "1f1b", g_algo = "mpi", g_precision = "fp32", g_arch = "gpt2";
bool g_sp = false;
constexpr int kGlobalBatch = 16;

using Result = gt_test::RunRecord;  // losses, gradient norms, parameters

Result run(MPI_Comm comm, const gt::Config& c) { return gt_test::run_and_record(comm, c, 0, false); }

// ||a - b|| in double.
double diff_norm(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s);
}

// Sequence parallel against the same layout without it (rank 0 compares; every rank runs both).
void compare_without_sp(const gt::Config& c, const Result& with) {
  gt::Config off = c;
  off.parallel.sequence_parallel = false;
  off.output.dir = c.output.dir + "/without_sp";
  const Result without = run(MPI_COMM_WORLD, off);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  const double rtol = c.train.precision == "fp32" ? 1e-5 : 4e-3;
  ASSERT_EQ(with.losses.size(), without.losses.size());
  for (size_t i = 0; i < with.losses.size(); ++i) {
    EXPECT_NEAR(with.losses[i], without.losses[i], rtol * std::fabs(without.losses[i])) << "sp: loss of step " << i + 1;
    EXPECT_NEAR(with.grad_norms[i], without.grad_norms[i], rtol * std::fabs(without.grad_norms[i]))
        << "sp: gradient norm of step " << i + 1;
  }
}
}  // namespace

TEST(Layouts, MatchesTheSingleRankRun) {
  // Positional arguments left after gtest's own: tp pp dp micro_batches schedule allreduce [precision [arch]].
  ASSERT_TRUE(gt_test::argc >= 7 && gt_test::argc <= 10)
      << "usage: test_layouts tp pp dp micro_batches schedule allreduce [fp32|bf16|fp16 [gpt2|llama [sp]]]";
  g_tp = std::atoi(gt_test::argv[1]);
  g_pp = std::atoi(gt_test::argv[2]);
  g_dp = std::atoi(gt_test::argv[3]);
  g_mb = std::atoi(gt_test::argv[4]);
  g_sched = gt_test::argv[5];
  g_algo = gt_test::argv[6];
  if (gt_test::argc >= 8) g_precision = gt_test::argv[7];
  if (gt_test::argc >= 9) g_arch = gt_test::argv[8];
  if (gt_test::argc == 10) g_sp = std::string(gt_test::argv[9]) == "sp";
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ASSERT_EQ(world, g_tp * g_pp * g_dp);
  gt::Config c = gt_test::tiny_config(gt_test::fresh_dir(MPI_COMM_WORLD, "layout"));
  c.parallel.tp = g_tp;
  c.parallel.pp = g_pp;
  c.parallel.dp = g_dp;
  c.parallel.schedule = g_sched;
  c.parallel.allreduce = g_algo;
  c.parallel.bucket_mb = 0.01;  // several buckets even for the tiny model, to exercise the overlap
  c.train.micro_batches = g_mb;
  c.train.micro_batch_size = kGlobalBatch / (g_mb * g_dp);
  c.train.precision = g_precision;
  if (g_arch == "llama") {
    c.model.arch = "llama";
    c.model.n_kv_head = 2;     // tp 2: one key/value head (and its 2 query heads) per rank
    c.model.ffn_hidden = 88;   // 8 d_model / 3 rounded up to a multiple of 8: divisible by tp
  }
  c.parallel.sequence_parallel = g_sp;
  Result par = run(MPI_COMM_WORLD, c);
  if (g_sp) compare_without_sp(c, par);

  int ok = 1;
  if (rank == 0) {
    gt::Config ref = c;
    ref.parallel.tp = ref.parallel.pp = ref.parallel.dp = 1;
    ref.parallel.allreduce = "mpi";
    ref.parallel.sequence_parallel = false;
    ref.train.micro_batches = 1;
    ref.train.micro_batch_size = kGlobalBatch;
    ref.output.dir = c.output.dir + "/reference";
    Result one = run(MPI_COMM_SELF, ref);
    const bool half = g_precision != "fp32";
    // In a 16-bit precision the layout and the single rank round the activations at different points (a TP
    // row-parallel output is two partial sums each rounded to bf16, then summed in fp32 and rounded again; one
    // rank rounds the whole sum once), so they are two runs with different bf16 rounding noise. The yardstick
    // for "within bf16 tolerance" is then the effect of bf16 rounding itself, measured on this task: the same
    // single-rank run in fp32 (`f32`) against the single-rank bf16 run.
    Result f32;
    if (half) {
      gt::Config r32 = ref;
      r32.train.precision = "fp32";
      r32.output.dir = c.output.dir + "/reference_fp32";
      f32 = run(MPI_COMM_SELF, r32);
    }
    EXPECT_EQ(par.losses.size(), one.losses.size());
    for (size_t i = 0; g_sp && !half && i < std::min(par.grad_norms.size(), one.grad_norms.size()); ++i)
      EXPECT_NEAR(par.grad_norms[i], one.grad_norms[i], 1e-5 * one.grad_norms[i]) << "gradient norm of step " << i + 1;
    double worst_loss = 0, worst_param = 0;
    for (size_t i = 0; i < std::min(par.losses.size(), one.losses.size()); ++i) {
      // fp32: 1e-5 relative (summation orders in fp32 only). bf16: 4e-3 relative, u_bf16 = 2^-8: each
      // activation carries one to two extra roundings of relative u between the layouts, and the mean
      // cross-entropy moves by at most that much relative (measured: 4.2e-4 worst over the bf16 layouts).
      const double rtol = half ? 4e-3 : 1e-5;
      EXPECT_NEAR(par.losses[i], one.losses[i], rtol * std::fabs(one.losses[i])) << "loss of step " << i + 1;
      worst_loss = std::max(worst_loss, std::fabs(par.losses[i] - one.losses[i]) / std::fabs(one.losses[i]));
    }
    // Parameters, fp32: norm-wise relative difference per tensor below 1e-3, and no element off by more than
    // steps * lr. Why not 1e-5 as for the losses: Adam normalises every element's update by that element's own
    // gradient scale, so elements whose gradient is at the level of fp32 round-off move by amounts that
    // depend on the summation order. The key bias is the extreme case: its exact gradient is zero (softmax
    // ignores a constant added to every score of a row), so its values after five steps are round-off
    // amplified by Adam, in any layout. Measured worst case over the layouts here: 1.4e-4 (biases).
    // bf16: the same amplification of bf16 rounding moves weights by a few percent in five steps at lr 1e-2
    // (the key bias by ~60%), in any run; so per tensor ||layout - one|| <= 2 ||one - fp32|| + 2 steps lr: a
    // layout adds no more than bf16 rounding itself does (two independent roundings differ by ~sqrt(2) of one),
    // plus one element's worth of sign flips (an element whose gradient is within rounding noise of zero can
    // step either way, +-lr, in each of the steps: two runs differ there by up to 2 steps lr; tp=2 showed single
    // tensors, a row-parallel bias and two LayerNorm gains, at up to 14x the bf16-vs-fp32 distance that way,
    // 0.02 absolute). A dropped or doubled gradient, a stale working copy or a wrong shard moves a whole tensor
    // by up to lr per element per step: sqrt(C) = 5.7 times that slack and more for the LayerNorm gains.
    ASSERT_EQ(par.params.size(), one.params.size());
    for (size_t k = 0; k < par.params.size(); ++k) {
      const auto& a = par.params[k].second;
      const auto& b = one.params[k].second;
      const double worst = gt_test::max_abs_diff(a, b);
      const double d = diff_norm(a, b), nb = diff_norm(b, std::vector<float>(b.size(), 0.0f));
      if (half) {
        const double yardstick = diff_norm(b, f32.params[k].second);
        const double slack = 2 * c.train.steps * c.train.lr;
        EXPECT_LE(d, 2 * yardstick + slack) << par.params[k].first;
        worst_param = std::max(worst_param, (d - 2 * yardstick) / slack);
      } else {
        EXPECT_LT(d / std::max(nb, 1e-30), 1e-3) << par.params[k].first;
        worst_param = std::max(worst_param, d / std::max(nb, 1e-30));
      }
      EXPECT_LT(worst, c.train.steps * c.train.lr) << par.params[k].first;
    }
    std::printf("%s: worst loss rel diff %.2e, worst tensor %s %.2e\n", g_precision.c_str(), worst_loss,
                half ? "(||layout - one|| - 2 ||one - fp32||) / (2 steps lr)" : "rel diff", worst_param);
    ok = !::testing::Test::HasFailure();
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_TRUE(ok);
}

