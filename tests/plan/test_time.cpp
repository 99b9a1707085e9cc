// The planner's time model: the bubble formula, ring-collective arithmetic, monotonicity, ZeRO-3's traffic,
// the trainer's own stage split and schedule, and parallel.layout = auto choosing a layout that fits.
#include <gtest/gtest.h>

#include <cmath>

#include "src/core/error.hpp"
#include "src/plan/planner.hpp"
#include "src/plan/rebalance.hpp"
#include "src/train/adapt/rebalancer.hpp"
#include "src/train/schedule.hpp"
#include "tests/plan/round_cluster.hpp"

using namespace gt::plan;

namespace {
Cluster test_cluster() { return round_cluster(); }
const ModelShape kModel{24, 2048, 16, 2048, 51200};
}  // namespace

// Narayanan et al. 2021: with p equal stages and m micro-batches, bubble time / ideal time = (p - 1) / m.
// Megatron's split gives equal stages only without the head, so the check is bubble = (p - 1) x slot time,
// the slot time being the first (middle-like) stage's: compared against the formula through compute / m.
TEST(PlanTime, BubbleFormula) {
  Cluster c = test_cluster();
  c.microbatch_overhead_ms = 0;
  const ModelShape m{24, 2048, 16, 2048, 16};  // tiny vocabulary: the head adds ~nothing to the last stage
  for (int p : {2, 4, 8})
    for (int mb : {1, 4, 16, 64}) {
      Layout l;
      l.pp = p;
      l.micro_batches = mb;
      l.precision = Precision::BF16;
      const TimeBreakdown t = step_time(m, l, c, Framework::Megatron);
      const double ideal = t.compute + t.tp + t.pp;
      EXPECT_NEAR(t.bubble / ideal, double(p - 1) / mb, 1e-3 * (p - 1) / mb) << "p " << p << " m " << mb;
    }
}

// Ring all-reduce: 2(k-1) latency steps and 2(k-1)/k of the buffer through each link (nccl-tests' busbw).
TEST(PlanTime, RingAllreduceByHand) {
  const LinkLevel link{10, 20, 0.5};  // 10 GB/s at 50 %, 20 us
  const double n = 1e9, k = 8;
  EXPECT_NEAR(allreduce_seconds(n, 8, link), 2 * (k - 1) * 20e-6 + 2 * (k - 1) / k * n / 5e9, 1e-12);
  EXPECT_NEAR(allgather_seconds(n, 8, link), (k - 1) * 20e-6 + (k - 1) / k * n / 5e9, 1e-12);
  EXPECT_EQ(allreduce_seconds(n, 1, link), 0.0);
}

// More bandwidth never means more communication time, for every kind of communication.
TEST(PlanTime, MoreBandwidthLessComm) {
  Layout l;
  l.tp = 4;
  l.pp = 4;
  l.dp = 8;
  l.micro_batches = 8;
  l.precision = Precision::BF16;
  double prev_tp = 1e300, prev_pp = 1e300, prev_dp = 1e300;
  for (double bw : {1.0, 10.0, 100.0, 1000.0}) {
    Cluster c = test_cluster();
    c.intra.gbs = bw;
    c.inter.gbs = bw / 4;
    const TimeBreakdown t = step_time(kModel, l, c, Framework::Megatron);
    EXPECT_LT(t.tp, prev_tp);
    EXPECT_LT(t.pp, prev_pp);
    EXPECT_LT(t.dp, prev_dp);
    prev_tp = t.tp, prev_pp = t.pp, prev_dp = t.dp;
  }
}

// ZeRO-3 moves 1.5x the all-reduce's bytes at one micro-batch (Rajbhandari et al. 2020, section 7.2.2); stages
// 1 and 2 move the same as plain DP. With latency zero the ratio of times is the ratio of bytes (bf16 weights
// and fp16 gradients: fp16, so that gathers and reductions move the same dtype).
TEST(PlanTime, ZeroTrafficRatios) {
  Cluster c = test_cluster();
  c.intra.latency_us = c.inter.latency_us = 0;
  Layout l;
  l.dp = 8;
  l.precision = Precision::FP16;
  auto dp_total = [&](int z) {
    l.zero = z;
    return step_time(kModel, l, c, Framework::Megatron).dp_total;
  };
  const double base = dp_total(0);
  EXPECT_NEAR(dp_total(1) / base, 1.0, 1e-12);
  EXPECT_NEAR(dp_total(2) / base, 1.0, 1e-12);
  EXPECT_NEAR(dp_total(3) / base, 1.5, 1e-12);
}

// The modelled unit costs (docs/planner.md "Stages"), computed by hand for the tiny preset (h 128, s 64, V 256):
// block 3 (24 h^2 + 4 s h), head 6 V h + 16 V x 8, embedding 28 h x 8 FLOP-equivalents per token.
TEST(PlanTime, ModelledUnitCosts) {
  const UnitCosts c = modelled_unit_costs(ModelShape{2, 128, 4, 64, 256});
  EXPECT_DOUBLE_EQ(c.block, 1277952.0);
  EXPECT_DOUBLE_EQ(c.head, 229376.0);
  EXPECT_DOUBLE_EQ(c.embedding, 28672.0);  // 0.022 of a block: what the old unexplained 0.02 stood for
}

// The planner's split of gridtrain's blocks over stages is the trainer's (its stage_partition without
// parallel.stage_blocks), and the micro-batches a stage holds are what the trainer's schedule keeps in flight.
TEST(PlanTime, GridtrainStagesAndSlots) {
  for (ModelShape m : {ModelShape{6, 384, 6, 256, 8192}, ModelShape{12, 768, 12, 1024, 50304}, ModelShape{5, 48, 4, 16, 64}})
    for (int pp = 1; pp <= m.L; ++pp) {
      gt::Config cfg;
      cfg.model.n_layer = int(m.L), cfg.model.d_model = int(m.h), cfg.model.n_head = int(m.a);
      cfg.model.seq_len = int(m.s), cfg.model.vocab_size = int(m.V);
      EXPECT_EQ(stage_blocks(m, pp, Framework::Gridtrain), gt::stage_partition(cfg, pp));
      for (int mb : {1, 3, 8})
        for (bool gpipe : {false, true}) {
          Layout l;
          l.pp = pp;
          l.micro_batches = mb;
          l.gpipe = gpipe;
          for (int s = 0; s < pp; ++s) {
            auto ops = gt::pipeline_schedule(gpipe ? gt::Schedule::GPipe : gt::Schedule::OneFOneB, pp, s, mb);
            EXPECT_EQ(in_flight(l, s), gt::max_in_flight(ops)) << "pp " << pp << " stage " << s << " m " << mb;
          }
        }
    }
}

// parallel.layout = auto: on a device too small for the whole model, the choice must be a layout that fits
// (checked with the memory model itself against the usable memory) and never one that does not.
TEST(PlanTime, AutoLayoutFits) {
  Cluster c = test_cluster();
  const ModelShape m{8, 1024, 16, 1024, 32768};
  Layout whole;
  whole.micro_batch = 4;
  const double one = peak_memory(m, whole, Framework::Gridtrain).total();
  c.memory_gb = 0.6 * one / 1e9;  // a single device cannot hold it
  const AutoChoice a = choose_layout(m, c, 8, 4, 4);
  EXPECT_LE(peak_memory(m, a.best.layout, Framework::Gridtrain).total(), c.usable_memory_bytes());
  EXPECT_GT(a.best.layout.tp * a.best.layout.pp, 1);
  EXPECT_EQ(a.best.layout.devices(), 8);
  ASSERT_TRUE(a.has_runner_up);
  EXPECT_GE(a.best.time.tokens_per_s, a.runner_up.time.tokens_per_s);
  c.memory_gb = 1e-3;  // nothing fits: an error, not a layout
  EXPECT_THROW(choose_layout(m, c, 8, 4, 4), gt::Error);
}
