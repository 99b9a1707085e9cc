#include "src/plan/step_time.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/core/model_flops.hpp"
#include "src/plan/framework.hpp"
#include "src/plan/memory.hpp"

namespace gt::plan {

double allreduce_seconds(double n, int k, const LinkLevel& link) {
  if (k <= 1 || n <= 0) return 0;
  return 2.0 * (k - 1) * link.latency_us * 1e-6 + 2.0 * (k - 1) / k * n / (link.gbs * 1e9 * link.efficiency);
}

double allgather_seconds(double n, int k, const LinkLevel& link) {
  if (k <= 1 || n <= 0) return 0;
  return (k - 1) * link.latency_us * 1e-6 + double(k - 1) / k * n / (link.gbs * 1e9 * link.efficiency);
}

double p2p_seconds(double n, const LinkLevel& link) {
  return link.latency_us * 1e-6 + n / (link.gbs * 1e9 * link.efficiency);
}

LinkLevel group_link(const Cluster& c, int stride, int size) {
  if (size <= 1 || long(stride) * size <= c.devices_per_node) return c.intra;
  LinkLevel l = c.inter;
  // Ranks of the group inside one node each drive their own NIC (DGX: one per GPU), up to the node's link.
  const int per_node = std::max(1, c.devices_per_node / std::max(1, stride));
  l.gbs = std::min(c.inter.gbs * per_node, c.intra.gbs);
  return l;
}

double model_flops_per_step(const ModelShape& m, long B) {
  // Megatron-Core's count, 3 B s (2 (L P_gemm + V h) + 4 L s h), is the run report's 6 N_matmul + 12 L s h per token
  return double(B) * double(m.s) * flops_per_token(m.matmul_flops_per_token() / 2.0, m.L, m.s, m.h);
}

namespace {

// One transformer layer, one micro-batch, one TP rank (seconds).
struct LayerTime {
  double fwd = 0, bwd = 0;      // compute; bwd includes recompute
  double gemm[4] = {0, 0, 0, 0};  // forward GEMMs: QKV, projection, MLP up (and gate), MLP down
  double attn_fwd = 0, attn_bwd = 0;  // the attention core
};

LayerTime layer_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework fw, bool tp_overlap) {
  const Attention att = attention_of(m, fw);
  const FrameworkTraits& tr = traits(fw);
  const Precision act = l.precision == Precision::FP8 ? Precision::BF16 : l.precision;
  const double gemm_peak = c.peak_flops(l.precision), peak = c.peak_flops(act), e = elem_bytes(l.precision);
  const double b = l.micro_batch, s = double(m.s), t = l.tp, a = m.a, h = m.h, f = m.ffn_width();
  const double bs = b * s / l.cp, sbh = bs * h;  // tokens of this rank (cp splits the sequence)
  const double mem = c.memory_gbs * 1e9 * c.memory_efficiency;
  // TP communication overlapped with the GEMMs (userbuffers' ring exchange) cuts each GEMM into t chunks along
  // its rows, each at the efficiency of its own, smaller size.
  const double chunks = tp_overlap && l.tp > 1 ? t : 1.0;
  auto gemm = [&](double M, double N, double K) {  // forward GEMM (M x K) (K x N); backward = 2 of the same size
    const double fl = 2 * M * N * K;
    return fl / (gemm_peak * c.gemm_eff(fl / chunks));
  };
  LayerTime r;
  r.gemm[0] = gemm(bs, h / t + 2 * m.kv_dim_per_rank(l.tp), h);  // K, V: one head per rank where tp > n_kv_head
  r.gemm[1] = gemm(bs, h, h / t);
  r.gemm[2] = gemm(bs, (m.gated() ? 2 : 1) * f / t, h);
  r.gemm[3] = gemm(bs, h, f / t);
  const double gemms = r.gemm[0] + r.gemm[1] + r.gemm[2] + r.gemm[3];
  const bool sp = l.sequence_parallel && l.tp > 1;
  double softmax = 0;
  if (att == Attention::Fused) {
    // FlashAttention-2 (Dao 2023): causal, the tiles above the diagonal skipped (half of 4 b s^2 h / t), the
    // backward 5 GEMM-shaped products to the forward's 2 (it recomputes P); cp ranks each take s/cp queries.
    r.attn_fwd = 2 * b * s * s * h / t / l.cp / (peak * c.fused_attention_eff());
    r.attn_bwd = 2.5 * r.attn_fwd;
  } else {
    r.attn_fwd = 4 * b * s * s * h / t / l.cp / (peak * c.attention_efficiency);
    r.attn_bwd = 2 * r.attn_fwd;
    softmax = 4.5 * a * s * s * b / t / l.cp * e / mem;
  }
  // element-wise: norms, residuals, dropouts (10 sbh, split by SP), the MLP's activation (2 ffn, SwiGLU 3 ffn),
  // Llama's rotary embedding on Q and K; fp8 casts of the GEMM inputs (read 2 bytes, write 1; gradients too)
  double elementwise = (10 * sbh / (sp ? t : 1) + (m.gated() ? 3 : 2) * bs * f / t) * e / mem;
  if (m.llama()) elementwise += 2 * bs * (h + m.kv_dim()) / t * e / mem;
  elementwise *= tr.elementwise_factor;
  const double casts = l.precision == Precision::FP8 ? 3.0 * bs * (2 * h + h / t + f / t) / mem : 0.0;
  const double rest = gemms + softmax + elementwise + casts;
  r.fwd = rest + r.attn_fwd;
  r.bwd = 2 * rest + r.attn_bwd;
  if (l.recompute == Recompute::Full) r.bwd += r.fwd;
  if (l.recompute == Recompute::Selective && att != Attention::Fused) r.bwd += r.attn_fwd / 2 + softmax;
  if (l.recompute == Recompute::Selective && tr.selective_half_gemms) {
    // torchtitan's op policy: the element-wise ops and every second mm run again (Llama: wk, wo, w3; GPT-2: the
    // projection and the MLP's down)
    const double again = m.llama() ? r.gemm[0] * m.kv_dim() / (h + 2 * m.kv_dim()) + r.gemm[1] + r.gemm[2] / 2
                                   : r.gemm[1] + r.gemm[3];
    r.bwd += again + elementwise;
  }
  return r;
}

// TP communication of one layer and micro-batch on the critical path: two all-reduces of the (b, s/cp, h)
// activations forward and two backward (Shoeybi et al. 2019), two more forward again with full recompute; SP
// replaces each by an all-gather + reduce-scatter of the same volume. Overlapped (Megatron-Core's
// --tp-comm-overlap, userbuffers; torchtitan's async TP), each all-gather or reduce-scatter is cut into t chunks
// that move while the GEMM it feeds (or drains) computes on the chunk before: what the GEMM's (t - 1)/t does not
// cover stays exposed; backward has the data- and weight-gradient GEMMs (twice the forward's) to cover it.
double tp_exposed(const LayerTime& lt, const ModelShape& m, const Layout& l, const Cluster& c, bool overlap) {
  if (l.tp <= 1) return 0;
  const double n = double(m.s) / l.cp * l.micro_batch * m.h * elem_bytes(l.precision);
  const LinkLevel link = group_link(c, 1, l.tp);
  const int passes = l.recompute == Recompute::Full ? 3 : 2;  // forward, backward (x2 GEMM), recompute forward
  if (!overlap) return (passes == 3 ? 6 : 4) * allreduce_seconds(n, l.tp, link);
  const double half = allgather_seconds(n, l.tp, link), cover = double(l.tp - 1) / l.tp;
  double exposed = 0;
  for (double g : lt.gemm) {
    exposed += std::max(0.0, half - g * cover);          // forward
    exposed += std::max(0.0, half - 2 * g * cover);      // backward
    if (passes == 3) exposed += std::max(0.0, half - g * cover);
  }
  return exposed;
}

// Context parallelism (ring attention, as Megatron-Core/Transformer Engine and torchtitan do it): cp - 1 steps, each
// passing one rank's K and V to the next while attention computes on the pair it has; the backward passes K, V
// and their gradients (twice the bytes). Exposed: what the attention compute does not cover.
double cp_exposed(const LayerTime& lt, const ModelShape& m, const Layout& l, const Cluster& c) {
  if (l.cp <= 1) return 0;
  const double kv = 2.0 * l.micro_batch * double(m.s) / l.cp * m.kv_dim() / l.tp * elem_bytes(l.precision);
  const LinkLevel link = group_link(c, l.tp, l.cp);
  const double fwd = (l.cp - 1) * p2p_seconds(kv, link), bwd = 2 * fwd;
  double exposed = std::max(0.0, fwd - lt.attn_fwd) + std::max(0.0, bwd - lt.attn_bwd);
  if (l.recompute == Recompute::Full) exposed += std::max(0.0, fwd - lt.attn_fwd);
  return exposed;
}

struct StageTime {
  double fwd = 0, bwd = 0;    // compute of one micro-batch (all v chunks)
  double tp = 0, cp = 0;      // exposed, one micro-batch
  double dp_layer = 0;        // ZeRO-3 per-layer exposed DP, one micro-batch
  double dp_layer_total = 0;  // its whole traffic
  double psi = 0;             // parameters of this stage on one TP rank
};

// ZeRO-3 / FSDP per micro-batch (Rajbhandari et al. 2020 section 7; FSDP2 and DeepSpeed prefetch one unit ahead):
// forward all-gathers every unit's parameters, backward all-gathers them again (resharded after forward) and
// reduce-scatters the gradients. A unit's traffic hides behind the previous unit's compute only (prefetch depth
// one); the first gather and the last reduce-scatter are exposed. Each collective is a ring over dp x cp ranks,
// (k - 1) latency steps: at thousands of ranks the latency alone outlasts a small layer's compute.
void zero3_per_layer(StageTime& st, const LayerTime& lt, int blocks, double emb_params, const ModelShape& m,
                     const Layout& l, const Cluster& c, Framework f) {
  const int k = l.shard_group();
  if (k <= 1) return;
  const LinkLevel link = group_link(c, l.tp, k);
  const double w = state_bytes(l.precision).w, g = grad_wire_bytes(l, f);
  const double blk = m.block_params() / l.tp;
  const double ag = allgather_seconds(blk * w, k, link), rs = allgather_seconds(blk * g, k, link);
  const double ag_e = allgather_seconds(emb_params * w, k, link), rs_e = allgather_seconds(emb_params * g, k, link);
  double exposed = ag_e + (blocks > 0 ? ag : 0);  // the first gathers wait for nothing to hide behind
  exposed += std::max(0, blocks - 1) * std::max(0.0, ag - lt.fwd);
  exposed += blocks * std::max(0.0, ag + rs - lt.bwd) + rs_e;
  st.dp_layer = exposed;
  st.dp_layer_total = blocks * (2 * ag + rs) + 2 * ag_e + rs_e;
}

StageTime stage_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f, int blocks, bool first,
                     bool last, bool tp_overlap) {
  const LayerTime lt = layer_time(m, l, c, f, tp_overlap);
  const Precision act = l.precision == Precision::FP8 ? Precision::BF16 : l.precision;
  const double e = elem_bytes(l.precision), bs = double(l.micro_batch) * m.s / l.cp, sbh = bs * m.h;
  const double mem = c.memory_gbs * 1e9 * c.memory_efficiency;
  StageTime st;
  st.fwd = blocks * lt.fwd;
  st.bwd = blocks * lt.bwd;
  st.tp = blocks * tp_exposed(lt, m, l, c, tp_overlap);
  st.cp = blocks * cp_exposed(lt, m, l, c);
  const double V = double(m.V);
  if (last) {
    const double fl = 2 * bs * V / l.tp * m.h, head = fl / (c.peak_flops(act) * c.gemm_eff(fl));
    const double loss = 3 * bs * V / l.tp * 4.0 / mem;
    st.fwd += head + loss;
    st.bwd += 2 * head + loss;
  }
  if (first) st.fwd += 2 * sbh * e / mem;  // embedding lookup
  st.psi = stage_params(m, l.tp, blocks, first, last, f);
  if (l.zero >= 3 && traits(f).dp == DpOverlap::PerLayer) {
    const double emb = double(V) * m.h / l.tp;
    zero3_per_layer(st, lt, blocks, (first ? emb : 0.0) + (last && (!first || !m.tied()) ? emb : 0.0), m, l, c, f);
  }
  return st;
}

}  // namespace

TimeBreakdown step_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f) {
  return step_time(m, l, c, f, stage_blocks(m, l.pp, f), TimeOptions{});
}

namespace {

// Data-parallel time of one stage that the step waits for (hidden parts removed), and its whole traffic.
struct DpTime {
  double exposed = 0, total = 0;
};

DpTime dp_time(const StageTime& st, int stage, const Layout& l, const Cluster& c, Framework f, const ModelShape& m) {
  DpTime r;
  const int k = l.shard_group(), mb = l.micro_batches;
  if (k <= 1) return r;
  const LinkLevel link = group_link(c, l.tp, k);
  const StateBytes sb = state_bytes(l.precision);
  const double grads = st.psi * grad_wire_bytes(l, f), params = st.psi * sb.w;
  const FrameworkTraits& tr = traits(f);
  if (tr.dp == DpOverlap::PerLayer && l.zero >= 3) {
    r.exposed = mb * st.dp_layer;
    r.total = mb * st.dp_layer_total;
    return r;
  }
  if (tr.dp == DpOverlap::ReduceAndGather || tr.dp == DpOverlap::AfterBackward) {
    // distributed optimizer (ZeRO-1): reduce-scatter the gradients, all-gather the updated parameters; ZeRO-0: one
    // all-reduce
    const double reduce = l.zero >= 1 ? allgather_seconds(grads, k, link) : allreduce_seconds(grads, k, link);
    const double gather = l.zero >= 1 ? allgather_seconds(params, k, link) : 0.0;
    r.total = reduce + gather;
    if (tr.dp == DpOverlap::AfterBackward) {
      // llm.c: each block's gradients leave behind the backward of the blocks below it; the embedding's (the
      // last to be computed) and the parameter gather after the update are exposed
      const double emb = double(m.V) * m.h / l.tp, share = std::min(1.0, emb / std::max(1.0, st.psi));
      const double blocks = reduce * (1 - share), window = st.bwd * (1 - 1.0 / std::max(1L, m.L));
      r.exposed = std::max(0.0, blocks - window) + reduce * share + gather;
      return r;
    }
    // Megatron-Core: buckets reduce behind the last micro-batch's backward and, on stage s, the s backward slots
    // of the pipeline drain that follow it there; the parameter gather behind the next step's first forward and
    // the s forward slots of warm-up before it. The last bucket (40M parameters) is exposed either way.
    // Interleaved (v chunks per stage), each chunk's buckets start when that chunk's last backward ends; the chunks
    // end about p chunk-slots apart in the cool-down, so each chunk's share hides there too, and only the last
    // chunk's (the stage's first layers) waits for the end as above (the gather mirrors it in the warm-up).
    const double bucket = std::min(1.0, tr.bucket_params / std::max(1.0, st.psi));
    const double v = l.vp, gap_r = l.pp * st.bwd / v, gap_g = l.pp * st.fwd / v;
    auto hide = [&](double traffic, double last_window, double gap) {
      if (traffic <= 0) return 0.0;
      return (v - 1) * std::max(0.0, traffic / v - gap) + std::max(traffic / v - last_window / v, bucket * traffic);
    };
    r.exposed = hide(reduce, (1 + stage) * st.bwd, gap_r) + hide(gather, (1 + stage) * st.fwd, gap_g);
    return r;
  }
  // gridtrain and Megatron-LM 2021: stages 0-1 one all-reduce per step (ZeRO-1's reduce-scatter + all-gather is
  // the same volume); stage 2 a reduce-scatter per micro-batch and one all-gather of parameters; stage 3 two
  // parameter all-gathers and a reduce-scatter per micro-batch (Rajbhandari et al. 2020, section 7).
  double hideable = 0, exposed_rest = 0, window = 0;
  if (l.zero <= 1) {
    hideable = allreduce_seconds(grads, k, link);
    window = st.bwd;
  } else if (l.zero == 2) {
    hideable = mb * allgather_seconds(grads, k, link);
    exposed_rest = allgather_seconds(params, k, link);
    window = mb * st.bwd;
  } else {
    hideable = mb * (allgather_seconds(grads, k, link) + 2 * allgather_seconds(params, k, link));
    window = mb * (st.fwd + st.bwd);
  }
  r.total = hideable + exposed_rest;
  if (tr.dp == DpOverlap::Buckets) {
    // gradient buckets reduce behind the backward they follow; the last bucket (25 MiB) is never hidden
    const double bucket = std::min(1.0, 25.0 * 1048576.0 / std::max(1.0, grads));
    r.exposed = std::max(hideable - window, bucket * hideable) + exposed_rest;
  } else {
    r.exposed = r.total;  // 2021-22: the all-reduce after the backward
  }
  return r;
}

}  // namespace

TimeBreakdown step_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f,
                        const std::vector<int>& begin, const TimeOptions& opt) {
  TimeBreakdown r;
  const FrameworkTraits& tr = traits(f);
  const bool tp_overlap = opt.tp_overlap < 0 ? tr.tp_overlap : opt.tp_overlap > 0;
  const double e = elem_bytes(l.precision), sbh = double(m.s) / l.cp * l.micro_batch * m.h;
  const bool sp = l.sequence_parallel && l.tp > 1;
  // PP: one (b, s, h) send forward and one back per micro-batch and chunk (1/t of it with SP's scatter-gather);
  // hidden by the interleaved schedule's overlapped sends where the framework has them.
  const LinkLevel pp_link = group_link(c, l.tp * l.cp * l.dp, l.pp);
  double pp_per_mb = l.pp > 1 ? 2 * l.vp * p2p_seconds(sbh * e / (sp ? l.tp : 1), pp_link) : 0;
  const bool pp_hidden = tr.pp_overlap && l.vp > 1;

  double slowest = 0, dp_exposed = 0, psi_max = 0;
  StageTime worst;
  for (int s = 0; s < l.pp; ++s) {
    const StageTime st = stage_time(m, l, c, f, begin[s + 1] - begin[s], s == 0, s == l.pp - 1, tp_overlap);
    const double slot = st.fwd + st.bwd + st.tp + st.cp + st.dp_layer + c.microbatch_overhead_ms * 1e-3;
    if (slot > slowest) {
      slowest = slot;
      worst = st;
    }
    const DpTime dt = dp_time(st, s, l, c, f, m);
    dp_exposed = std::max(dp_exposed, dt.exposed);
    r.dp_total = std::max(r.dp_total, dt.total);
    psi_max = std::max(psi_max, st.psi);
  }
  const int mb = l.micro_batches;
  r.compute = mb * (worst.fwd + worst.bwd);
  r.tp = mb * worst.tp;
  r.cp = mb * worst.cp;
  r.pp = pp_hidden ? 0.0 : mb * pp_per_mb;
  r.overhead = mb * c.microbatch_overhead_ms * 1e-3 + c.step_overhead_ms * 1e-3;
  // Pipeline bubble (Narayanan et al. 2021): p - 1 idle slots of a micro-batch's time, (p - 1) / m of the ideal;
  // interleaved, the slots are a chunk's, 1/v of the stage's: (p - 1) / (v m).
  r.bubble = (l.pp - 1) * (slowest + (pp_hidden ? 0.0 : pp_per_mb)) / l.vp;
  // ZeRO-3 per-layer traffic sits inside every micro-batch slot; the rest waits at the end of the step.
  r.dp = dp_exposed;
  if (tr.dp == DpOverlap::PerLayer && l.zero >= 3) r.dp = mb * worst.dp_layer;

  // Optimizer: AdamW streams the sharded states once: reads the fp32 weights, the gradient, m and v, writes
  // the weights, m and v, and in mixed precision the 16-bit copy of the weights.
  const StateBytes sb = state_bytes(l.precision);
  const double opt_params = psi_max / (l.zero >= 1 ? l.shard_group() : 1);
  const double opt_bytes = (4 + sb.g + 8) + 12 + (l.precision == Precision::FP32 ? 0 : 2);
  r.optimizer = opt_params * opt_bytes / (c.memory_gbs * 1e9 * c.memory_efficiency);

  r.step = r.compute + r.tp + r.cp + r.pp + r.bubble + r.dp + r.optimizer + r.overhead;
  const long B = l.global_batch();
  r.tokens_per_s = double(B) * m.s / r.step;
  const Precision peak = l.precision == Precision::FP8 ? Precision::BF16 : l.precision;  // MFU against bf16
  r.mfu = model_flops_per_step(m, B) / (r.step * l.devices() * c.peak_flops(peak));
  return r;
}

}  // namespace gt::plan
