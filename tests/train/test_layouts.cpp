// One parallel layout (tp pp dp micro_batches schedule allreduce, from the command line) against the
// single-rank run: five steps on the same global batch and seed give the single-rank losses within 1e-5
// relative, and the gathered final parameters match.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "tests/common/run_helpers.hpp"
#include "src/train/trainer.hpp"

namespace {
int g_tp = 1, g_pp = 1, g_dp = 1, g_mb = 1;
std::string g_sched = "1f1b", g_algo = "mpi";
constexpr int kGlobalBatch = 16;

struct Result {
  std::vector<double> losses;
  std::vector<std::pair<std::string, std::vector<float>>> params;
};

Result run(MPI_Comm comm, gt::Config c) {
  gt::Grid grid(comm, c.parallel.tp, c.parallel.pp, c.parallel.dp, gt::parse_allreduce_algo(c.parallel.allreduce));
  gt::Trainer t(c, grid, c.to_toml());
  EXPECT_EQ(t.run(), 0);
  Result r;
  for (const auto& s : t.history()) r.losses.push_back(s.loss);
  r.params = t.gather_params();
  return r;
}
}  // namespace

TEST(Layouts, MatchesTheSingleRankRun) {
  // Positional arguments left after gtest's own: tp pp dp micro_batches schedule allreduce.
  ASSERT_EQ(gt_test::argc, 7) << "usage: test_layouts tp pp dp micro_batches schedule allreduce";
  g_tp = std::atoi(gt_test::argv[1]);
  g_pp = std::atoi(gt_test::argv[2]);
  g_dp = std::atoi(gt_test::argv[3]);
  g_mb = std::atoi(gt_test::argv[4]);
  g_sched = gt_test::argv[5];
  g_algo = gt_test::argv[6];
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
  Result par = run(MPI_COMM_WORLD, c);

  int ok = 1;
  if (rank == 0) {
    gt::Config ref = c;
    ref.parallel.tp = ref.parallel.pp = ref.parallel.dp = 1;
    ref.parallel.allreduce = "mpi";
    ref.train.micro_batches = 1;
    ref.train.micro_batch_size = kGlobalBatch;
    ref.output.dir = c.output.dir + "/reference";
    Result one = run(MPI_COMM_SELF, ref);
    EXPECT_EQ(par.losses.size(), one.losses.size());
    for (size_t i = 0; i < std::min(par.losses.size(), one.losses.size()); ++i)
      EXPECT_NEAR(par.losses[i], one.losses[i], 1e-5 * std::fabs(one.losses[i])) << "loss of step " << i + 1;
    // Parameters: norm-wise relative difference per tensor below 1e-3, and no element off by more than
    // steps * lr. Why not 1e-5 as for the losses: Adam normalises every element's update by that element's own
    // gradient scale, so elements whose gradient is at the level of fp32 round-off move by amounts that
    // depend on the summation order. The key bias is the extreme case: its exact gradient is zero (softmax
    // ignores a constant added to every score of a row), so its values after five steps are round-off
    // amplified by Adam, in any layout. Measured worst case over the layouts here: 1.4e-4 (biases).
    ASSERT_EQ(par.params.size(), one.params.size());
    for (size_t k = 0; k < par.params.size(); ++k) {
      const auto& a = par.params[k].second;
      const auto& b = one.params[k].second;
      double num = 0, den = 0, worst = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        num += double(a[i] - b[i]) * (a[i] - b[i]);
        den += double(b[i]) * b[i];
        worst = std::max(worst, double(std::fabs(a[i] - b[i])));
      }
      EXPECT_LT(std::sqrt(num / std::max(den, 1e-30)), 1e-3) << par.params[k].first;
      EXPECT_LT(worst, c.train.steps * c.train.lr) << par.params[k].first;
    }
    ok = !::testing::Test::HasFailure();
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_TRUE(ok);
}

