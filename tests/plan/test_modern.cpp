// The planner's issue-24 mechanisms against independent references: published parameter counts of Llama models,
// Megatron-Core's own FLOP formula, the interleaved schedule's published bubble and memory formulas, fused
// attention's linear memory, context parallelism's split, TP overlap, ZeRO-3's per-layer latency, uneven stage
// splits, fp8 GEMMs, and each framework's defaults. No timed assertions: every time is the model's arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "src/core/error.hpp"
#include "src/plan/framework.hpp"
#include "src/plan/planner.hpp"
#include "tests/plan/round_cluster.hpp"

using namespace gt::plan;

namespace {

ModelShape llama(long L, long h, long a, long kv, long ffn, long V, long s) {
  ModelShape m{L, h, a, s, V};
  m.arch = Arch::Llama;
  m.kv = kv;
  m.ffn = ffn;
  return m;
}

// test_time.cpp's round numbers, with memory that never binds (these tests check time and counts).
Cluster test_cluster() {
  Cluster c = round_cluster();
  c.memory_gb = 1e6;
  return c;
}

}  // namespace

// Published parameter counts (the models' released weights): Llama 2 7B 6,738,415,616; Llama 2 70B 68,976,648,192
// (GQA, 8 KV heads); Llama 3 8B 8,030,261,248 (GQA, vocabulary 128256). Exact: both are integer counts.
TEST(PlanModern, LlamaParameterCounts) {
  EXPECT_EQ(llama(32, 4096, 32, 32, 11008, 32000, 4096).total_params(), 6738415616.0);
  EXPECT_EQ(llama(80, 8192, 64, 8, 28672, 32000, 4096).total_params(), 68976648192.0);
  EXPECT_EQ(llama(32, 4096, 32, 8, 14336, 128256, 8192).total_params(), 8030261248.0);
  // Llama's default width: 2/3 of 4h rounded up to 256 (Llama 2 7B's 11008)
  ModelShape m = llama(32, 4096, 32, 32, 0, 32000, 4096);
  EXPECT_EQ(m.ffn_width(), 11008);
  // GPT-2 stays 12h^2 + 13h per block, tied: the 124M model's 124,439,808 (GPT-2's released weights)
  EXPECT_EQ(ModelShape({12, 768, 12, 1024, 50257}).total_params(), 124439808.0);
}

// Megatron-Core's num_floating_point_operations (training.py, 2024), written out here independently:
// 12 B s L h^2 ((1 + g/a + s/h) + f/h x 3/2 (SwiGLU) + V/(2 L h)). Relative 1e-12: both are float arithmetic.
TEST(PlanModern, ModelFlopsAreMegatronCores) {
  for (ModelShape m : {llama(32, 4096, 32, 8, 14336, 128256, 8192), llama(80, 8192, 64, 8, 28672, 32000, 4096),
                       ModelShape{24, 2048, 16, 4096, 131072}}) {
    const double B = 64, s = m.s, L = m.L, h = m.h, a = m.a, g = m.kv_heads(), f = m.ffn_width(), V = m.V;
    const double ref = 12 * B * s * L * h * h * ((1 + g / a + s / h) + f / h * (m.gated() ? 1.5 : 1.0) + V / (2 * L * h));
    EXPECT_NEAR(model_flops_per_step(m, 64), ref, 1e-12 * ref);
  }
}

// Interleaved 1F1B (Narayanan et al. 2021): the bubble is (p - 1)/(v m) of the ideal time; with Megatron-Core's
// overlapped sends nothing else sits between the slots. Tiny vocabulary: the head adds nothing to the last stage.
TEST(PlanModern, InterleavedBubble) {
  Cluster c = test_cluster();
  const ModelShape m{48, 2048, 16, 2048, 16};
  for (int p : {2, 4, 8})
    for (int v : {1, 2, 3})
      for (int mb : {8, 16, 64}) {
        Layout l;
        l.pp = p;
        l.vp = v;
        l.micro_batches = mb;
        l.precision = Precision::BF16;
        const TimeBreakdown t = step_time(m, l, c, Framework::MegatronCore2024);
        const double ideal = t.compute + t.tp + t.pp;
        EXPECT_NEAR(t.bubble / ideal, double(p - 1) / (v * mb), 1e-3 * (p - 1) / (v * mb)) << p << " " << v << " " << mb;
      }
}

// Megatron's theoretical memory (REFERENCES, "Planner"): interleaving multiplies the first stage's in-flight
// activations (p micro-batches in 1F1B) by 1 + (p - 1)/(p v).
TEST(PlanModern, InterleavedInFlight) {
  for (int p : {2, 4, 8, 16})
    for (int v : {1, 2, 4}) {
      Layout l;
      l.pp = p;
      l.vp = v;
      l.micro_batches = 4 * p;
      const double expect = v == 1 ? p : p * (1.0 + double(p - 1) / (p * v));
      EXPECT_NEAR(in_flight_stages(l, 0), expect, 1e-12) << p << " " << v;
      EXPECT_LE(in_flight_stages(l, p - 1), in_flight_stages(l, 0));
    }
}

// Fused attention keeps no s x s tensor: a layer's activations grow linearly in s (exactly 2x at 2s, Llama: no
// dropout masks), the materialized path's faster than that; at the same s the fused path keeps less.
TEST(PlanModern, FusedAttentionLinearMemory) {
  Layout l;
  l.precision = Precision::BF16;
  for (long s : {1024L, 4096L, 16384L}) {
    const ModelShape m1 = llama(32, 4096, 32, 8, 14336, 128256, s), m2 = llama(32, 4096, 32, 8, 14336, 128256, 2 * s);
    const double f1 = megatron_layer_activation_bytes(m1, l, Attention::Fused);
    const double f2 = megatron_layer_activation_bytes(m2, l, Attention::Fused);
    EXPECT_NEAR(f2 / f1, 2.0, 1e-12);
    const double r1 = megatron_layer_activation_bytes(m1, l, Attention::Materialized);
    const double r2 = megatron_layer_activation_bytes(m2, l, Attention::Materialized);
    EXPECT_GT(r2 / r1, 2.0);
    EXPECT_LT(f1, r1);
  }
}

// Context parallelism splits the sequence: a layer's fused-attention activations at cp = 4 are a quarter of cp = 1's;
// the attention compute too (each rank s/cp queries against all keys, half of them masked).
TEST(PlanModern, ContextParallelSplits) {
  const ModelShape m = llama(32, 4096, 32, 8, 14336, 128256, 32768);
  Layout l;
  l.precision = Precision::BF16;
  const double one = megatron_layer_activation_bytes(m, l, Attention::Fused);
  l.cp = 4;
  EXPECT_NEAR(megatron_layer_activation_bytes(m, l, Attention::Fused) / one, 0.25, 1e-12);
  // the ring's traffic by hand: cp - 1 steps of one rank's K and V (2 b s/cp kv_dim e), forward once, backward
  // twice; on a link this slow none of it hides behind the attention compute
  Cluster c = test_cluster();
  c.intra = {1e-3, 0, 1};  // 1 MB/s
  const TimeBreakdown t = step_time(m, l, c, Framework::MegatronCore2024);
  const double kv = 2.0 * 32768 / 4 * m.kv_dim() * 2, ring = 3 * kv / 1e6;
  EXPECT_NEAR(t.cp / (32 * 3 * ring), 1.0, 0.02);  // 2 %: the attention compute it does hide is that small here
}

// TP overlap: what a GEMM's (t - 1)/t does not cover stays exposed, never more than without overlap; with GEMMs
// much longer than the transfers nothing is exposed, with a link this slow all of it is (minus the cover).
TEST(PlanModern, TpOverlap) {
  const ModelShape m{24, 8192, 64, 4096, 16};
  Layout l;
  l.tp = 8;
  l.sequence_parallel = true;
  l.precision = Precision::BF16;
  Cluster c = test_cluster();
  TimeOptions on, off;
  on.tp_overlap = 1;
  off.tp_overlap = 0;
  const std::vector<int> one{0, 24};
  const TimeBreakdown a = step_time(m, l, c, Framework::MegatronCore2024, one, on);
  const TimeBreakdown b = step_time(m, l, c, Framework::MegatronCore2024, one, off);
  EXPECT_LT(a.tp, b.tp);
  c.intra.gbs = 1e6;  // transfers of microseconds against GEMMs of milliseconds
  c.intra.latency_us = 0;
  EXPECT_EQ(step_time(m, l, c, Framework::MegatronCore2024, one, on).tp, 0.0);
  c.intra.gbs = 1e-3;  // transfers of hours: overlap hides a negligible part
  const double exposed = step_time(m, l, c, Framework::MegatronCore2024, one, on).tp;
  const double plain = step_time(m, l, c, Framework::MegatronCore2024, one, off).tp;
  EXPECT_NEAR(exposed / plain, 1.0, 1e-3);
}

// ZeRO-3 at scale: every layer's gathers and reduce-scatter are rings of k - 1 latency steps, so at a fixed batch per
// GPU the exposed DP time grows with dp once the latency outlasts a layer's compute; by hand for a model whose
// compute is negligible: per micro-batch the embedding's and every block's gathers, forward and backward, and
// every reduce-scatter are exposed: (2 L + 1 + 1 + L + 1) (k - 1) alpha on a link with infinite bandwidth... which
// the test cluster approximates with 1e6 GB/s.
TEST(PlanModern, Zero3LatencyAtScale) {
  const ModelShape m{4, 64, 4, 16, 64};
  Cluster c = test_cluster();
  c.intra = {1e6, 5, 1};
  c.inter = {1e6, 10, 1};
  double prev = 0;
  for (int dp : {16, 64, 256, 1024}) {
    Layout l;
    l.dp = dp;
    l.zero = 3;
    l.precision = Precision::BF16;
    const TimeBreakdown t = step_time(m, l, c, Framework::TorchtitanFsdp2);
    // forward: embedding gather + L block gathers; backward: L (gather + reduce-scatter) + the embedding's
    // reduce-scatter (the tied head: one unit)
    const double steps = 1 + 4 + 4 * 2 + 1;
    EXPECT_NEAR(t.dp / (steps * (dp - 1) * 10e-6), 1.0, 0.01) << dp;  // 1 %: the compute hidden is tiny
    EXPECT_GT(t.dp, prev);
    prev = t.dp;
  }
}

// Uneven stage splits: Megatron-Core and torchtitan plan 70 layers on 12 stages (no stage above ceil(70/12) = 6
// layers, all 70 placed) and Llama 3 405B's 126 on 16 (the head's stage lighter); Megatron-LM 2021 refuses them.
TEST(PlanModern, UnevenStages) {
  const ModelShape m70 = llama(70, 8192, 64, 8, 28672, 128256, 4096);
  for (Framework f : {Framework::MegatronCore2024, Framework::TorchtitanFsdp2}) {
    const std::vector<int> b = stage_blocks(m70, 12, f);
    ASSERT_EQ(b.size(), 13u);
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), 70);
    for (int s = 0; s < 12; ++s) EXPECT_LE(b[s + 1] - b[s], 6);
  }
  const ModelShape m405 = llama(126, 16384, 128, 8, 53248, 128256, 8192);
  const std::vector<int> b = stage_blocks(m405, 16, Framework::MegatronCore2024);
  EXPECT_EQ(b.back(), 126);
  EXPECT_LE(b[16] - b[15], 7);  // the last stage carries the head
  for (int s = 0; s < 16; ++s) EXPECT_LE(b[s + 1] - b[s], 8);
  Cluster c = test_cluster();
  PlanOptions o;
  o.devices = 12;
  o.global_batch = 12;
  o.pp = 12;
  o.precisions = {Precision::BF16};
  o.framework = Framework::MegatronCore2024;
  EXPECT_FALSE(make_plan(llama(70, 1024, 8, 8, 2816, 32000, 1024), c, o).fits.empty());
  o.framework = Framework::Megatron;
  const Plan p = make_plan(llama(70, 1024, 8, 8, 2816, 32000, 1024), c, o);
  EXPECT_TRUE(p.fits.empty());
  EXPECT_NE(p.rejected.front().reason.find("does not divide the 70 layers"), std::string::npos);
}

// fp8 GEMMs at twice the bf16 peak: a GEMM-dominated layer's compute is more than halfway from bf16's to half
// of it (attention and element-wise stay bf16, the casts cost traffic), and never below half.
TEST(PlanModern, Fp8Gemms) {
  Cluster c = test_cluster();
  c.memory_gbs = 1e6;  // element-wise and casts nearly free
  const ModelShape m = llama(8, 8192, 64, 8, 28672, 16, 512);
  Layout l;
  l.precision = Precision::BF16;
  const double bf16 = step_time(m, l, c, Framework::MegatronCore2024).compute;
  l.precision = Precision::FP8;
  const double fp8 = step_time(m, l, c, Framework::MegatronCore2024).compute;
  EXPECT_LT(fp8, 0.6 * bf16);
  EXPECT_GT(fp8, 0.5 * bf16);
}

// Each framework's defaults as its documentation states them (framework.cpp's sources).
TEST(PlanModern, FrameworkDefaults) {
  EXPECT_EQ(traits(Framework::MegatronCore2024).attention, Attention::Fused);
  EXPECT_TRUE(traits(Framework::MegatronCore2024).tp_overlap);
  EXPECT_EQ(traits(Framework::MegatronCore2024).dp, DpOverlap::ReduceAndGather);
  EXPECT_EQ(traits(Framework::MegatronCore2024).zero_max, 1);  // the distributed optimizer
  EXPECT_EQ(traits(Framework::TorchtitanFsdp2).zero_min, 3);   // FSDP
  EXPECT_EQ(traits(Framework::TorchtitanFsdp2).grad_wire_bytes, 4.0);  // reduce_dtype float32
  EXPECT_EQ(traits(Framework::DeepSpeedZero3).dp, DpOverlap::PerLayer);
  EXPECT_EQ(traits(Framework::Megatron).dp, DpOverlap::None);
  EXPECT_TRUE(traits(Framework::Gridtrain).gridtrain_ledger);
  for (const char* n : {"gridtrain", "megatron", "megatron-core-2024", "deepspeed-zero3", "torchtitan-fsdp2", "llm.c"})
    EXPECT_EQ(name(parse_framework(n)), n);
  EXPECT_EQ(parse_framework("megatron-2021"), Framework::Megatron);
  EXPECT_THROW(parse_framework("megatron-core"), gt::Error);
  ModelShape m{2, 64, 4, 32, 256};
  EXPECT_TRUE(apply_model_key(m, "model.arch", "llama"));
  EXPECT_FALSE(m.tied());
  EXPECT_TRUE(apply_model_key(m, "model.tie_embeddings", "true"));
  EXPECT_TRUE(m.tied());
  EXPECT_FALSE(apply_model_key(m, "model.n_layer", "3"));  // the engine's key, not the planner's
  EXPECT_THROW(apply_model_key(m, "model.n_kv_head", "-1"), gt::Error);
}
