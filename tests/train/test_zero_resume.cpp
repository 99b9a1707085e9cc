// Checkpoints across ZeRO stages and layouts (4 ranks). A run is cut into segments of two steps, each
// resumed from the previous one's checkpoint on another stage or layout, and compared with the uninterrupted
// run. Under ZeRO every DP rank writes and reads only its shard's part of each tensor (a shard may cut a
// tensor mid-row), so these resumes exercise the hyperslab pieces of every stage in both directions.
//  - dp=2: zero=0 -> zero=1 -> zero=2, clipping off: bitwise equal to the uninterrupted zero=0 run. At dp=2
//    every stage computes the same sums in the same order (test_zero states why), and a checkpoint moves fp32
//    bits, so any element lost, misplaced or read from the wrong shard shows.
//  - zero=1 tp=2 dp=2 -> zero=3 dp=4 -> zero=0 on one rank: losses within 1e-5 relative of the uninterrupted
//    zero=0 tp=2 dp=2 run and parameters within test_layouts' tolerance (other layouts sum in other orders,
//    so fp32 round-off differs; a wrong element would change the loss at the 1e-2 level).
#include <gtest/gtest.h>

#include <cmath>

#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"

namespace {
constexpr int kGlobalBatch = 16;

struct Result {
  std::vector<double> losses;
  std::vector<std::pair<std::string, std::vector<float>>> params;
};

struct Layout {
  int tp, dp, zero;
};

// Runs `c` on the first tp*dp ranks of the world (the others wait) with the layout's batch split; returns the
// losses of this run's steps and the parameters (world rank 0's view).
Result run(gt::Config c, Layout l, const std::string& out, int expect_exit) {
  c.parallel.tp = l.tp;
  c.parallel.pp = 1;
  c.parallel.dp = l.dp;
  c.parallel.zero = l.zero;
  c.train.micro_batch_size = kGlobalBatch / l.dp;
  c.output.dir = out;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, rank < l.tp * l.dp ? 0 : MPI_UNDEFINED, rank, &comm);
  Result r;
  if (comm != MPI_COMM_NULL) {
    gt::Grid grid(comm, l.tp, 1, l.dp, gt::parse_allreduce_algo(c.parallel.allreduce));
    gt::Trainer t(c, grid, c.to_toml());
    EXPECT_EQ(t.run(), expect_exit);
    for (const auto& s : t.history()) r.losses.push_back(s.loss);
    r.params = t.gather_params();
    MPI_Comm_free(&comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return r;
}

// The run cut into segments of two steps (the last one runs to the end), one per layout.
Result segmented(const gt::Config& c, const std::vector<Layout>& layouts, const std::string& dir) {
  Result all;
  for (size_t k = 0; k < layouts.size(); ++k) {
    gt::Config s = c;
    s.checkpoint.dir = dir + "/checkpoints";
    s.checkpoint.resume = k == 0 ? "none" : "auto";
    const bool last = k + 1 == layouts.size();
    s.train.max_steps_per_run = last ? 0 : 2;
    const Result r = run(s, layouts[k], dir + "/seg" + std::to_string(k), last ? 0 : gt::kExitPreempted);
    all.losses.insert(all.losses.end(), r.losses.begin(), r.losses.end());
    all.params = r.params;
  }
  return all;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
}  // namespace

TEST(ZeroResume, StagesAtDp2Bitwise) {
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "zero_resume_dp2");
  gt::Config c = gt_test::tiny_config(dir);
  c.train.steps = 6;
  c.parallel.bucket_mb = 0.01;  // several buckets: stage 2's reduce-scatter cuts tensors
  c.train.grad_clip = 0.0;      // the norm's own summation order differs between stages
  const Result ref = run(c, {1, 2, 0}, dir + "/ref", 0);
  const Result seg = segmented(c, {{1, 2, 0}, {1, 2, 1}, {1, 2, 2}}, dir + "/chain");
  if (world_rank() == 0) {
    EXPECT_EQ(seg.losses, ref.losses);
    ASSERT_EQ(seg.params.size(), ref.params.size());
    for (size_t k = 0; k < ref.params.size(); ++k)
      EXPECT_EQ(seg.params[k].second, ref.params[k].second) << ref.params[k].first;
  }
}

TEST(ZeroResume, AcrossLayoutsWithinTolerance) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world, 4);
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "zero_resume_layouts");
  gt::Config c = gt_test::tiny_config(dir);
  c.train.steps = 6;
  c.parallel.bucket_mb = 0.01;
  const Result ref = run(c, {2, 2, 0}, dir + "/ref", 0);
  const Result seg = segmented(c, {{2, 2, 1}, {1, 4, 3}, {1, 1, 0}}, dir + "/chain");
  if (world_rank() == 0) {
    ASSERT_EQ(seg.losses.size(), ref.losses.size());
    for (size_t i = 0; i < ref.losses.size(); ++i)
      EXPECT_NEAR(seg.losses[i], ref.losses[i], 1e-5 * std::fabs(ref.losses[i])) << "step " << i + 1;
    gt_test::expect_params_close(seg.params, ref.params, c);  // test_layouts' tolerance, for its reasons
  }
}
