#include "src/plan/step_time.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/core/model_flops.hpp"
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
  return double(B) * double(m.s) * gpt_flops_per_token(m.L, m.h, m.s, m.V);  // the run report's count too
}

namespace {

// Seconds of one stage's forward and backward of one micro-batch (compute only), per TP rank.
struct StageCompute {
  double fwd = 0, bwd = 0;
};

StageCompute stage_compute(const ModelShape& m, const Layout& l, const Cluster& c, int blocks, bool first, bool last) {
  const double peak = c.peak_flops(l.precision), e = elem_bytes(l.precision);
  const double b = l.micro_batch, s = m.s, h = m.h, t = l.tp, a = m.a;
  const double bs = b * s, sbh = bs * h;
  const double mem = c.memory_gbs * 1e9 * c.memory_efficiency;
  auto gemm = [&](double M, double N, double K) {  // forward GEMM (M x K) (K x N); backward = 2 of the same size
    const double f = 2 * M * N * K;
    return f / (peak * c.gemm_eff(f));
  };
  // One layer, forward: QKV, projection, MLP up and down (Megatron split), the attention products, and the
  // element-wise kernels (layer norms, bias-GeLU, softmax, dropouts, residuals) at memory bandwidth.
  const double gemms = gemm(bs, 3 * h / t, h) + gemm(bs, h, h / t) + gemm(bs, 4 * h / t, h) + gemm(bs, h, 4 * h / t);
  const double attn = 4 * b * s * s * h / t / (peak * c.attention_efficiency);
  const bool sp = l.sequence_parallel && l.tp > 1;
  const double softmax = 4.5 * a * s * s * b / t * e / mem;
  const double elementwise = (10 * sbh / (sp ? t : 1) + 8 * sbh / t) * e / mem;
  const double layer_fwd = gemms + attn + softmax + elementwise;
  StageCompute r;
  r.fwd = blocks * layer_fwd;
  r.bwd = 2 * blocks * layer_fwd;
  if (l.recompute == Recompute::Full) r.bwd += blocks * layer_fwd;
  if (l.recompute == Recompute::Selective) r.bwd += blocks * (attn / 2 + softmax);  // scores and softmax again
  if (last) {
    const double V = m.V, head = gemm(bs, V / t, h), loss = 3 * bs * V / t * 4.0 / mem;
    r.fwd += head + loss;
    r.bwd += 2 * head + loss;
  }
  if (first) r.fwd += 2 * sbh * e / mem;  // embedding lookup
  return r;
}

}  // namespace

TimeBreakdown step_time(const ModelShape& m, const Layout& l, const Cluster& c, Framework f) {
  TimeBreakdown r;
  const std::vector<int> begin = stage_blocks(m, l.pp, f);
  const double e = elem_bytes(l.precision), sbh = double(m.s) * l.micro_batch * m.h;
  const LinkLevel tp_link = group_link(c, 1, l.tp), dp_link = group_link(c, l.tp, l.dp),
                  pp_link = group_link(c, l.tp * l.dp, l.pp);
  const bool sp = l.sequence_parallel && l.tp > 1;
  // TP: two all-reduces of (b, s, h) per layer in forward and two in backward (Shoeybi et al. 2019), two
  // more with full recompute; sequence parallel replaces each by an all-gather + reduce-scatter (same volume).
  const double tp_per_layer = (l.recompute == Recompute::Full ? 6 : 4) * allreduce_seconds(sbh * e, l.tp, tp_link);
  // PP: one (b, s, h) send forward and one back per micro-batch (1/t of it with SP's scatter-gather).
  const double pp_per_mb = l.pp > 1 ? 2 * p2p_seconds(sbh * e / (sp ? l.tp : 1), pp_link) : 0;

  double slowest = 0, comp_mb = 0, bwd_mb = 0, tp_mb = 0, psi_max = 0;
  for (int s = 0; s < l.pp; ++s) {
    const int blocks = begin[s + 1] - begin[s];
    const StageCompute sc = stage_compute(m, l, c, blocks, s == 0, s == l.pp - 1);
    const double tpc = blocks * tp_per_layer;
    const double slot = sc.fwd + sc.bwd + tpc + c.microbatch_overhead_ms * 1e-3;
    if (slot > slowest) {
      slowest = slot;
      comp_mb = sc.fwd + sc.bwd;
      bwd_mb = sc.bwd;
      tp_mb = tpc;
    }
    psi_max = std::max(psi_max, stage_params(m, l.tp, blocks, s == 0, s == l.pp - 1, f));
  }
  const int mb = l.micro_batches;
  r.compute = mb * comp_mb;
  r.tp = mb * tp_mb;
  r.pp = mb * pp_per_mb;
  r.overhead = mb * c.microbatch_overhead_ms * 1e-3 + c.step_overhead_ms * 1e-3;
  // Pipeline bubble (Narayanan et al. 2021): p - 1 idle slots of a micro-batch's time: (p - 1) / m of ideal.
  r.bubble = (l.pp - 1) * (slowest + pp_per_mb);

  // DP: gradients (and ZeRO's parameter gathers) of the most-loaded stage on this TP rank. Stages 0-1 move one
  // all-reduce per step; stage 2 a reduce-scatter per micro-batch and one all-gather of parameters; stage 3
  // gathers parameters in forward and backward and reduce-scatters gradients in every micro-batch: 1.5x of
  // the all-reduce per micro-batch (Rajbhandari et al. 2020, section 7).
  const StateBytes sb = state_bytes(l.precision);
  if (l.dp > 1) {
    const double grads = psi_max * sb.g, params = psi_max * sb.w;
    // What hides it (gridtrain; Megatron's 2021 runs all-reduced after backward, nothing hidden): gradient
    // reductions run behind the backward they follow (stages 0-1: the last micro-batch's; stage 2: every
    // micro-batch's), stage 2's parameter all-gather after the optimizer is exposed, stage 3's prefetched
    // gathers hide behind all the compute. The last bucket (25 MB) is never hidden.
    double hideable = 0, exposed_rest = 0, window = 0;
    if (l.zero <= 1) {
      hideable = allreduce_seconds(grads, l.dp, dp_link);
      window = bwd_mb;
    } else if (l.zero == 2) {
      hideable = mb * allgather_seconds(grads, l.dp, dp_link);
      exposed_rest = allgather_seconds(params, l.dp, dp_link);
      window = mb * bwd_mb;
    } else {
      hideable = mb * (allgather_seconds(grads, l.dp, dp_link) + 2 * allgather_seconds(params, l.dp, dp_link));
      window = r.compute;
    }
    r.dp_total = hideable + exposed_rest;
    if (f == Framework::Gridtrain) {
      const double bucket = std::min(1.0, 25.0 * 1048576.0 / std::max(1.0, grads));
      r.dp = std::max(hideable - window, bucket * hideable) + exposed_rest;
    } else {
      r.dp = r.dp_total;
    }
  }
  // Optimizer: AdamW streams the sharded states once: reads the fp32 weights, the gradient, m and v, writes
  // the weights, m and v, and in mixed precision the 16-bit copy of the weights.
  const double opt_params = psi_max / (l.zero >= 1 ? l.dp : 1);
  const double opt_bytes = (4 + sb.g + 8) + 12 + (l.precision == Precision::FP32 ? 0 : 2);
  r.optimizer = opt_params * opt_bytes / (c.memory_gbs * 1e9 * c.memory_efficiency);

  r.step = r.compute + r.tp + r.pp + r.bubble + r.dp + r.optimizer + r.overhead;
  const long B = l.global_batch();
  r.tokens_per_s = double(B) * m.s / r.step;
  r.mfu = model_flops_per_step(m, B) / (r.step * l.devices() * c.peak_flops(l.precision));
  return r;
}

}  // namespace gt::plan
