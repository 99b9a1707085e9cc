// Activation recomputation (train.recompute) against none on one layout (tp pp precision, from the command
// line): three steps with micro_batches = 4, so that under pp = 2 two micro-batches are in flight in 1F1B and
// the buffers shared under recompute are refilled by another slot's and another block's forward between a
// block's forward and its backward. Selective and full rerun the same kernels on the same inputs in the same
// order (the TP all-reduces included), so the losses, the last step's gradients (the fp32 Grads buffer) and
// the parameters must equal none's bit for bit: no tolerance. A recompute that read a stale shared buffer (the
// probabilities of another block, a ln statistic of another slot) changes the gradients and fails here.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/train/trainer.hpp"
#include "tests/common/run_helpers.hpp"
#include "tests/common/trainer_run.hpp"

namespace {
using Result = gt_test::RunRecord;

Result run(const gt::Config& c) { return gt_test::run_and_record(MPI_COMM_WORLD, c); }
}  // namespace

TEST(Recompute, EqualsNoneBitwise) {
  ASSERT_EQ(gt_test::argc, 4) << "usage: test_recompute tp pp precision";
  const int tp = std::atoi(gt_test::argv[1]), pp = std::atoi(gt_test::argv[2]);
  const std::string dir = gt_test::fresh_dir(MPI_COMM_WORLD, "recompute");
  gt::Config c = gt_test::tiny_config(dir);
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.train.steps = 3;
  c.train.micro_batches = 4;
  c.train.micro_batch_size = 4;
  c.train.precision = gt_test::argv[3];
  // the materialized attention: its stored probabilities are what selective recompute rebuilds (the fused path's
  // recompute modes: tests/train/test_attention_train.cpp)
  c.model.attention = "materialized";
  c.output.dir = dir + "/none";
  const Result none = run(c);
  gt_test::expect_recompute_bitwise(c, none, dir + "/");
}
