// The planner's memory model against independent references: the ZeRO paper's published example, a hand
// computation of Korthikanti's activation formula, and gridtrain's own model (GPT<float>) for several layouts.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "kernels/device_stream.hpp"
#include "src/core/error.hpp"
#include "src/model/gpt.hpp"
#include "src/plan/cluster.hpp"
#include "src/plan/memory.hpp"


using namespace gt::plan;

// Rajbhandari et al. 2020 (arXiv 1910.02054), Figure 1: Psi = 7.5B, Nd = 64, K = 12 (mixed-precision Adam):
// 120 GB, 31.4 GB, 16.6 GB, 1.9 GB per device. The paper prints one decimal: tolerance 0.05 GB.
TEST(PlanMemory, ZeroPaperExample) {
  const double psi = 7.5e9;
  const StateBytes sb = state_bytes(Precision::FP16);  // 2 + 2 + 12 = the paper's (2 + 2 + K) Psi
  const double published[4] = {120.0, 31.4, 16.6, 1.9};
  for (int z = 0; z <= 3; ++z)
    EXPECT_NEAR(zero_states(psi, sb, z, 64).states() / 1e9, published[z], 0.05) << "stage " << z;
  // Megatron's bf16 distributed optimizer (REFERENCES: 18 bytes, or 6 + 12/dp): fp32 gradients.
  EXPECT_DOUBLE_EQ(zero_states(1.0, state_bytes(Precision::BF16), 0, 8).states(), 18.0);
  EXPECT_DOUBLE_EQ(zero_states(1.0, state_bytes(Precision::BF16), 1, 8).states(), 6.0 + 12.0 / 8);
}

// Korthikanti et al. 2022, eq. (1)-(3) and Table 2, written out by hand for one layer of a GPT-3 175B-like
// shape (s = 2048, b = 1, h = 12288, a = 96, t = 8): exact integer arithmetic, so the tolerance is rounding.
TEST(PlanMemory, MegatronActivationFormula) {
  const ModelShape m{96, 12288, 96, 2048, 51200};
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  Layout l;
  l.tp = 8;
  l.precision = Precision::BF16;
  l.micro_batch = 1;
  auto got = [&] { return megatron_layer_activation_bytes(m, l); };
  EXPECT_NEAR(got(), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)), 1.0);  // TP, no SP
  l.sequence_parallel = true;
  EXPECT_NEAR(got(), s * b * h / t * (34 + 5 * a * s / h), 1.0);  // TP + SP
  l.recompute = Recompute::Selective;
  EXPECT_NEAR(got(), 34 * s * b * h / t, 1.0);
  l.recompute = Recompute::Full;
  EXPECT_NEAR(got(), 2 * s * b * h / t, 1.0);
  l.tp = 1;
  l.sequence_parallel = false;
  l.recompute = Recompute::None;
  EXPECT_NEAR(got(), s * b * h * (34 + 5 * a * s / h), 1.0);  // no parallelism
}

// More data-parallel ranks shard ZeRO-3's states further; memory never grows with dp for any stage.
TEST(PlanMemory, MonotoneInDp) {
  const ModelShape m{24, 2048, 16, 2048, 50304};
  for (int z = 0; z <= 3; ++z) {
    double prev = 1e300;
    for (int dp : {1, 2, 4, 8, 16, 64}) {
      Layout l;
      l.dp = dp;
      l.zero = z;
      l.precision = Precision::BF16;
      const double mem = peak_memory(m, l, Framework::Megatron).total();
      if (z == 3 && dp > 1) {
        EXPECT_LT(mem, prev) << "zero3 dp " << dp;
      }
      EXPECT_LE(mem, prev) << "zero " << z << " dp " << dp;
      prev = mem;
    }
  }
}

// gridtrain's own ledger: for every stage of several layouts, the planner's activation and work bytes equal
// what GPT<float> reports for the same stage (the model's own functions), and its parameter count equals the
// stage's parameter store. Exact: both count elements. On a CUDA build this compares the device split's ledger.
// GPT-2 with either attention, and Llama (fused only) with grouped key/value heads (4 on 8 heads, so tp 4 leaves
// one per rank; llama_rep: 2 on 8, so tp 4 replicates each on 2 ranks, Megatron's GQA) and a SwiGLU width that is not 4 d_model; each layout with tp > 1 also with sequence parallelism.
TEST(PlanMemory, GridtrainLedgerEqualsModel) {
  gt::ModelConfig mc;
  mc.n_layer = 5;
  mc.d_model = 48;
  mc.n_head = 4;
  mc.seq_len = 16;
  mc.vocab_size = 64;
  struct Case { int tp, pp, b, mb; bool gpipe; };
  for (const char* attention : {"materialized", "fused", "llama", "llama_rep"})
  for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full})
  for (Case k : {Case{1, 1, 2, 1, false}, Case{2, 1, 3, 2, false}, Case{1, 2, 2, 4, false}, Case{1, 3, 1, 4, true},
                 Case{4, 2, 2, 3, false}, Case{2, 5, 1, 8, false}})
  for (bool sp : {false, true}) {
    if (sp && k.tp == 1) continue;
    const bool llama = std::string(attention).rfind("llama", 0) == 0;
    mc.attention = llama ? "fused" : attention;
    mc.arch = llama ? "llama" : "gpt2";
    mc.n_head = llama ? 8 : 4;  // head dim 6: even, as RoPE needs
    mc.n_kv_head = llama ? (std::string(attention) == "llama_rep" ? 2 : 4) : 0;
    mc.ffn_hidden = llama ? 72 : 0;
    const ModelShape m = ModelShape::from(mc);
    Layout l;
    l.device_split = gt::kernels_on_device();  // the work split GPT<float> was built with (host here, GPU on CUDA)
    l.recompute = rc;
    l.tp = k.tp;
    l.pp = k.pp;
    l.micro_batch = k.b;
    l.micro_batches = k.mb;
    l.gpipe = k.gpipe;
    l.sequence_parallel = sp;
    const std::vector<int> begin = stage_blocks(m, k.pp, Framework::Gridtrain);
    for (int s = 0; s < k.pp; ++s) {
      gt::StageLayout st{s, k.pp, begin[s], begin[s + 1]};
      const int slots = in_flight(l, s);
      const gt::Recompute mrc = rc == Recompute::Full        ? gt::Recompute::Full
                                : rc == Recompute::Selective ? gt::Recompute::Selective
                                                             : gt::Recompute::None;
      gt::GPT<float> model(mc, 1, k.b, st, gt::TensorParallel{0, k.tp, nullptr, sp}, slots, nullptr, mrc);
      const MemoryBreakdown pm = stage_memory(m, l, Framework::Gridtrain, s);
      const double model_act = double(model.slots()) * model.activation_bytes_per_slot();
      EXPECT_DOUBLE_EQ(pm.activations, model_act) << l.str() << " stage " << s << " " << attention;
      EXPECT_DOUBLE_EQ(pm.workspace, double(model.work_bytes())) << l.str() << " stage " << s << " " << attention;
      // elements that belong to tensors (the flat buffers add a little alignment padding the planner ignores)
      EXPECT_DOUBLE_EQ(pm.params, 4.0 * model.store().layout().used()) << l.str() << " stage " << s;
    }
  }
}

// Sequence parallelism's saving, counted by hand: with tp = t the residual stream (x0), each block's norm inputs and
// outputs (ln1, res2, ln2, res3) with their statistics, and the last stage's dlnf and ln_f statistics are kept for
// B*T/t rows instead of B*T: (1 - 1/t) of them is saved per slot. fp32, one stage, no recompute.
TEST(PlanMemory, SequenceParallelSavesTheSplitRows) {
  for (bool llama : {false, true}) {
    ModelShape m{6, 64, 8, 32, 96};  // L, h, a, s, V
    m.attention = Attention::Fused;
    if (llama) {
      m.arch = Arch::Llama;
      m.kv = 4;
    }
    Layout l;
    l.tp = 4;
    l.micro_batch = 3;
    const double off = gridtrain_activation_bytes_per_slot(m, l, 6, true);
    l.sequence_parallel = true;
    const double on = gridtrain_activation_bytes_per_slot(m, l, 6, true);
    const double BT = 3 * 32, C = 64, stats = llama ? 2 : 4, stats_f = llama ? 1 : 2;
    const double split = BT * C + 6 * BT * (4 * C + stats) + BT * (C + stats_f);  // elements
    EXPECT_DOUBLE_EQ(off - on, 4.0 * split * (1.0 - 1.0 / 4)) << (llama ? "llama" : "gpt2");
  }
}

// The device split's extra scratch, counted by hand: attention's backward holds all NHl = a/t heads' s x s instead
// of one (e bytes each), and the column sums keep fp32 partials, ceil(bs / 64) row chunks times the widest column
// sum (LayerNorm's 2h, the qkv bias 3h/t, the fc bias 4h/t; ln_f's 2h on a head-only stage; nothing on a stage
// that only embeds). And the GPU cluster descriptions select the device split, the CPU one does not.
TEST(PlanMemory, DeviceSplitScratch) {
  ModelShape m{4, 64, 8, 32, 96};  // L, h, a, s, V
  m.attention = Attention::Materialized;  // the s x s scratch counted below
  const double chunks = 2;               // b = 3: 96 rows, a full chunk of 64 and a partial one
  struct Case { int tp; Precision p; double attention, widest; };
  for (Case k : {Case{1, Precision::FP32, 4.0 * 7 * 32 * 32, 4 * 64},    // widest: the fc bias 4h
                 Case{2, Precision::BF16, 2.0 * 3 * 32 * 32, 2 * 64},    // 2h = 4h/t
                 Case{4, Precision::BF16, 2.0 * 1 * 32 * 32, 2 * 64}}) {  // 2h > 4h/t
    Layout host;
    host.tp = k.tp;
    host.micro_batch = 3;
    host.precision = k.p;
    Layout dev = host;
    dev.device_split = true;
    auto extra = [&](int blocks, bool last) {
      return gridtrain_work_bytes(m, dev, blocks, last) - gridtrain_work_bytes(m, host, blocks, last);
    };
    EXPECT_DOUBLE_EQ(extra(2, false), k.attention + 4 * chunks * k.widest) << dev.str();
    EXPECT_DOUBLE_EQ(extra(0, true), 4 * chunks * 2 * 64) << dev.str();
    EXPECT_DOUBLE_EQ(extra(0, false), 0.0) << dev.str();
  }
  const std::string dir = GRIDTRAIN_SOURCE_DIR "/inputs/clusters/";
  EXPECT_TRUE(load_cluster(dir + "dgx-h200.toml").gpu);
  EXPECT_TRUE(load_cluster(dir + "a100-pcie.toml").gpu);
  EXPECT_FALSE(load_cluster(dir + "cpu-2core.toml").gpu);
  // Any other kind is an error naming the key and the value.
  const std::string bad = testing::TempDir() + "gridtrain_bad_kind.toml";
  std::ofstream(bad) << "name = \"x\"\n[device]\nkind = \"tpu\"\nmemory_gb = 1\npeak_tflops_fp32 = 1\nmemory_gbs = 1\n"
                        "[node]\ndevices = 1\nlink_gbs = 1\n[network]\ngbs_per_device = 1\n";
  try {
    load_cluster(bad);
    ADD_FAILURE() << "device.kind = \"tpu\" was accepted";
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'device.kind': expected \"gpu\" or \"cpu\", got \"tpu\""), std::string::npos)
        << e.what();
  }
  std::remove(bad.c_str());
}
