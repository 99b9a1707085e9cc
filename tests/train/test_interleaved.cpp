// The interleaved 1F1B schedule (parallel.schedule = interleaved, parallel.virtual_stages = v) against 1F1B on the
// same layout (tp pp dp v m, from the command line), bit for bit, and checkpoints crossing between the two.
//
// Why bitwise: the same blocks compute the same micro-batches with the same kernels on the same inputs (activations
// and their gradients cross stages as copied bits); each parameter belongs to one chunk, whose backwards run in
// micro-batch order in both schedules (pipeline_schedule), so every gradient element accumulates the same terms in
// the same order; the tied wte's two copies are summed over the two-rank embedding group and DP sums two ranks
// (a + b = b + a exactly), whatever the buckets; the loss is summed in micro-batch order on the head's chunk. What
// does differ is the grouping of the global gradient norm's sum of squares over ranks (other tensors per rank), so
// the norm can differ in its last double bit; clipping is off here so that the norm, which only clipping reads,
// cannot move the update (test_zero_resume does the same for its bitwise segment).
//
// Then (cross = 1) the run cut after two steps: interleaved, resumed under 1F1B, and the reverse, equal to the uninterrupted
// 1F1B run bit for bit: the checkpoint holds global shapes, and each rank's layout of the chunks is its own business.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"

namespace {
constexpr int kGlobalBatch = 16;

using Result = gt_test::RunRecord;  // with the validation losses

Result run(const gt::Config& c, int expect_exit) { return gt_test::run_and_record(MPI_COMM_WORLD, c, expect_exit); }

gt::Config with_schedule(gt::Config c, const std::string& schedule, int v, const std::string& out) {
  c.parallel.schedule = schedule;
  c.parallel.virtual_stages = v;
  c.output.dir = out;
  return c;
}

// Two steps under `first`, checkpointed (train.max_steps_per_run), then the rest resumed under `second`.
Result segmented(const gt::Config& first, const gt::Config& second, const std::string& dir) {
  gt::Config a = first, b = second;
  a.checkpoint.dir = b.checkpoint.dir = dir + "/checkpoints";
  a.train.max_steps_per_run = 2;
  b.checkpoint.resume = "auto";
  Result r = run(a, gt::kExitPreempted);
  const Result rest = run(b, 0);
  r.losses.insert(r.losses.end(), rest.losses.begin(), rest.losses.end());
  r.val.insert(r.val.end(), rest.val.begin(), rest.val.end());
  r.params = rest.params;
  return r;
}

void expect_same_tensors(const std::vector<std::pair<std::string, std::vector<float>>>& got,
                         const std::vector<std::pair<std::string, std::vector<float>>>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].second, want[k].second) << what << " " << got[k].first;
}
}  // namespace

TEST(Interleaved, Equals1F1BBitwiseAndCheckpointsCross) {
  ASSERT_EQ(gt_test::argc, 7) << "usage: test_interleaved tp pp dp virtual_stages micro_batches cross(0|1)";
  const int tp = std::atoi(gt_test::argv[1]), pp = std::atoi(gt_test::argv[2]), dp = std::atoi(gt_test::argv[3]);
  const int v = std::atoi(gt_test::argv[4]), m = std::atoi(gt_test::argv[5]);
  const bool cross = std::atoi(gt_test::argv[6]) != 0;  // the checkpoint crossings too
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "interleaved");
  gt::Config c = gt_test::tiny_config(dir);
  c.model.n_layer = std::max(4, pp * v);  // one layer per chunk at the least
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.parallel.bucket_mb = 0.01;  // several DP buckets, launched from each chunk's last backward
  c.train.steps = 4;
  c.train.micro_batches = m;
  c.train.micro_batch_size = kGlobalBatch / (m * dp);
  c.train.grad_clip = 0;  // see the header
  c.data.val_every = 2;   // validation's forward-only order over the chunks too
  c.data.val_batches = 1;

  const Result ref = run(with_schedule(c, "1f1b", 1, dir + "/1f1b"), 0);
  const Result ilv = run(with_schedule(c, "interleaved", v, dir + "/interleaved"), 0);
  EXPECT_EQ(ilv.losses, ref.losses);
  EXPECT_EQ(ilv.val, ref.val);
  expect_same_tensors(ilv.grads, ref.grads, "gradient of the last step,");
  expect_same_tensors(ilv.params, ref.params, "parameter");
  if (!cross) return;

  const Result i_then_1 = segmented(with_schedule(c, "interleaved", v, dir + "/i1_a"),
                                    with_schedule(c, "1f1b", 1, dir + "/i1_b"), dir + "/i1");
  EXPECT_EQ(i_then_1.losses, ref.losses) << "interleaved, resumed under 1f1b";
  EXPECT_EQ(i_then_1.val, ref.val);
  expect_same_tensors(i_then_1.params, ref.params, "interleaved then 1f1b: parameter");
  const Result one_then_i = segmented(with_schedule(c, "1f1b", 1, dir + "/1i_a"),
                                      with_schedule(c, "interleaved", v, dir + "/1i_b"), dir + "/1i");
  EXPECT_EQ(one_then_i.losses, ref.losses) << "1f1b, resumed under interleaved";
  expect_same_tensors(one_then_i.params, ref.params, "1f1b then interleaved: parameter");
}
