#include "src/plan/memory.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/work_sizes.hpp"
#include "src/plan/framework.hpp"
#include "src/plan/rebalance.hpp"
#include "src/train/dp/shard_plan.hpp"

namespace gt::plan {

StateBytes state_bytes(Precision p) {
  switch (p) {
    case Precision::FP32: return {4, 4, 8};
    case Precision::BF16: return {2, 4, 12};
    case Precision::FP16: return {2, 2, 12};
    case Precision::FP8: return {2, 4, 12};  // Transformer Engine: bf16 weights, fp32 gradients and master
  }
  return {4, 4, 8};
}

MemoryBreakdown zero_states(double psi, StateBytes sb, int zero, int dp) {
  MemoryBreakdown m;
  const double n = std::max(1, dp);
  m.params = psi * sb.w / (zero >= 3 ? n : 1.0);
  m.grads = psi * sb.g / (zero >= 2 ? n : 1.0);
  m.optimizer = psi * sb.o / (zero >= 1 ? n : 1.0);
  return m;
}

namespace {
// gridtrain's attention kernel for this shape: model.attention, or the trainer's default (fused) when not given.
bool fused(const ModelShape& m) { return attention_of(m, Framework::Gridtrain) == Attention::Fused; }

long padded_vocab(const ModelShape& m, int tp, Framework f) {
  if (!traits(f).pad_vocab) return m.V;
  const long q = 128L * tp;  // Megatron's --make-vocab-size-divisible-by 128, times tp
  return (m.V + q - 1) / q * q;
}
}  // namespace

std::vector<int> stage_blocks(const ModelShape& m, int pp, Framework f) {
  std::vector<int> begin(pp + 1);
  if (f == Framework::Gridtrain) return modelled_partition(m, pp);  // the trainer's default (src/train/trainer.cpp)
  if (traits(f).even_layers || m.L % pp == 0) {
    for (int s = 0; s <= pp; ++s) begin[s] = int(long(s) * m.L / pp);
    return begin;
  }
  // Uneven: the split that balances forward + backward FLOPs, the head's GEMM counted on the last stage (the first
  // and last stages get fewer layers, as Llama 3's 126 layers on 16 stages and Megatron-Core's
  // --decoder-first/last-pipeline-num-layers do).
  const double block = 2.0 * m.block_matmul_params() + 4.0 * double(m.s) * double(m.h);
  const double head = 2.0 * double(m.V) * double(m.h);
  return partition_by_cost(std::vector<double>(size_t(m.L), 1.0), pp, 0.0, head / block);
}

namespace {
// One block's parameters on one TP rank: the GEMM weights and the column-parallel biases (Q, K, V and the MLP's up)
// split over tp; the norms and the row-parallel biases (projection, MLP down) replicated, as model_tensor_specs
// places them (Llama: no biases, two RMSNorm gains).
double block_params_per_rank(const ModelShape& m, int tp) {
  const double h = double(m.h);
  const double split_bias = m.llama() ? 0.0 : (h + 2.0 * m.kv_dim()) + double(m.ffn_width());
  const double replicated = m.llama() ? 2.0 * h : 6.0 * h;
  // K and V: split over tp, or one head per rank (replicated over tp / n_kv_head ranks) where tp > n_kv_head
  const double kv = 2.0 * h * m.kv_dim();
  return (m.block_matmul_params() - kv + split_bias) / tp + 2.0 * h * m.kv_dim_per_rank(tp) + replicated;
}
}  // namespace

double stage_params(const ModelShape& m, int tp, int blocks, bool first, bool last, Framework f) {
  const double h = double(m.h);
  double n = blocks * block_params_per_rank(m, tp);
  const double emb = double(padded_vocab(m, tp, f)) * h / tp;
  if (first) n += emb + (m.llama() ? 0.0 : double(m.s) * h);
  if (last && (!first || !m.tied())) n += emb;  // the head: the tied copy off the first stage, or its own matrix
  if (last) n += m.llama() ? h : 2.0 * h;       // the final norm
  return n;
}

int in_flight(const Layout& l, int stage) {
  return l.gpipe ? l.micro_batches : std::min(l.micro_batches, l.pp - stage);
}

namespace {
// The widths (per TP rank) of the buffers GPT<T> allocates (src/model/gpt.cpp): Cl = heads/t x head dim, Qw the
// qkv row ((heads + 2 kv heads)/t x head dim: 3 Cl for GPT-2), Fl the MLP width / t, fc the stored MLP input
// (GPT-2: Fl; Llama: [gate | up], 2 Fl), stats the per-row norm statistics of a block (LayerNorm's mean and rstd
// twice; RMSNorm's rstd twice) and of the final norm, norm_cols the widest norm gradient column sum.
struct BlockWidths {
  double Cl, Qw, Fl, fc, stats, stats_f, norm_cols;
};
BlockWidths block_widths(const ModelShape& m, int tp) {
  const double C = double(m.h), t = tp;
  BlockWidths w;
  w.Cl = C / t;
  w.Qw = w.Cl + 2.0 * m.kv_dim_per_rank(tp);  // K, V: one head per rank where tp > n_kv_head
  w.Fl = double(m.ffn_width()) / t;
  w.fc = m.gated() ? 2.0 * w.Fl : w.Fl;
  w.stats = m.llama() ? 2.0 : 4.0;
  w.stats_f = m.llama() ? 1.0 : 2.0;
  w.norm_cols = m.llama() ? C : 2.0 * C;
  return w;
}
// Sequence parallelism (src/model/seq_split.hpp) keeps the rows outside the TP regions (the norms' inputs and outputs,
// their statistics, the residuals) for B*T/tp rows only: the fraction of a row that is split, and the divisor.
bool seq_split(const Layout& l) { return l.sequence_parallel && l.tp > 1; }
double split_rows(const Layout& l) { return seq_split(l) ? double(l.tp) : 1.0; }
// One block's stored elements for B*T rows (ln1, res2, ln2, res3 and the stats: split over split_rows; qkv, atty, fc,
// fchg: the TP part, whole rows).
double block_elems(const ModelShape& m, const BlockWidths& w, const Layout& l, double BT) {
  return BT * (4.0 * double(m.h) + w.stats) / split_rows(l) + BT * (w.Qw + w.Cl + w.fc + w.Fl);
}
}  // namespace

// Shapes (per TP rank): B micro-batch, T sequence, C width, NHl = heads/t; the rest block_widths.
double gridtrain_activation_bytes_per_slot(const ModelShape& m, const Layout& l, int blocks, bool last) {
  const double e = elem_bytes(l.precision), B = l.micro_batch, T = m.s, C = m.h, t = l.tp;
  const double BT = B * T, NHl = m.a / t;
  const BlockWidths w = block_widths(m, l.tp);
  const double probs = fused(m) ? 0.0 : B * NHl * T * T;  // fused: none kept
  const double rows = BT / split_rows(l);  // the residual stream's rows on this rank (sequence parallel: BT / tp)
  double per_block = block_elems(m, w, l, BT) + probs;
  if (l.recompute == Recompute::Selective) per_block -= probs;     // scores recomputed in backward
  if (l.recompute == Recompute::Full) per_block = rows * C;        // only the block input is kept
  double n = rows * C + per_block * blocks;
  if (last) n += rows * (C + w.stats_f);
  // fused: each block keeps the fp32 log-sum-exp of its queries (B, NHl, T), in the shared set under full recompute
  const double lse = fused(m) && l.recompute != Recompute::Full ? blocks * B * NHl * T * 4.0 : 0.0;
  return n * e + BT * 2 * 4.0 + lse;  // + int32 inputs and targets
}

double gridtrain_work_bytes(const ModelShape& m, const Layout& l, int blocks, bool last) {
  const double e = elem_bytes(l.precision), B = l.micro_batch, T = m.s, C = m.h, t = l.tp;
  const double BT = B * T, NHl = m.a / t;
  const BlockWidths w = block_widths(m, l.tp);
  const double rows = BT / split_rows(l);
  double n = 2 * BT * C + rows * C;  // tmp, dln, dres (this rank's rows)
  // sequence parallel: the gathered normed input (B*T, C), the replicated parameters' partial gradients (fp32: GPT-2's
  // two LayerNorms and two row-parallel biases, Llama's two gains), and with 16-bit elements the fp32 staging of the
  // reduce-scatter (all rows and this rank's)
  double sp_extra = 0;
  if (seq_split(l) && (blocks > 0 || last)) {
    n += BT * C;
    sp_extra = 4.0 * (m.llama() ? 2.0 : 6.0) * C + (e < 4 ? 4.0 * (BT + rows) * C : 0.0);
  }
  // attention's backward scratch: one head's T x T on the host split, all NHl heads' on the device split; fused,
  // fp32 elements linear in T (kernels/work_sizes.hpp)
  const double fused_scratch =
      fused(m) && blocks > 0
          ? 4.0 * attention_fused_scratch_elems(int(B), int(NHl), int(T), int(m.h / m.a), l.device_split) : 0.0;
  if (blocks > 0) n += BT * (w.Qw + w.Cl + w.fc + w.Fl);  // dqkv, datty, dfch, dfchg
  // Llama: RoPE's cos and sin tables, (T, head dim / 2) each in fp32
  const double rope = m.llama() && blocks > 0 ? 4.0 * T * (C / m.a) : 0.0;
  // tp > n_kv_head: the replicated key/value heads' gradient slots, one per head and one set aside, fp32 (K and V)
  const double kv_slots = m.llama() && blocks > 0 && t > m.kv_heads() ? 4.0 * (m.kv_heads() + 1.0) * 2.0 * (C / m.a) * C : 0.0;
  if (blocks > 0 && !fused(m)) n += attention_scratch_elems(int(NHl), int(T), l.device_split);
  if (last) n += BT * C + BT * (m.V / t) + 3 * BT;  // lnf, logits, ce
  // The device split's column-sum partials, fp32 in every precision (the gradient type), for the widest column sum
  // over the B*T rows: LayerNorm's two C-wide gradients, the qkv (3Cl) and fc (Fl) biases; ln_f's on a head-only
  // stage (Llama: RMSNorm's C, no biases). None on the host split.
  const double widest = m.llama() ? w.norm_cols : std::max({w.norm_cols, w.Qw, w.Fl});
  const double cols = blocks > 0 ? widest : last ? w.norm_cols : 0;
  const double partials = double(colsum_partials_elems(long(BT), long(cols), l.device_split));
  // Full recompute rebuilds one block's activations at a time during backward (one shared set, its output
  // into dln); selective refills one shared probability buffer.
  const double probs = fused(m) ? 0.0 : B * NHl * T * T;
  const double shared_lse = fused(m) && l.recompute == Recompute::Full && blocks > 0 ? B * NHl * T * 4.0 : 0.0;
  if (l.recompute == Recompute::Full && blocks > 0) n += block_elems(m, w, l, BT) + probs - rows * C;
  if (l.recompute == Recompute::Selective && blocks > 0) n += probs;
  // + the loss accumulator, one double
  return n * e + partials * 4.0 + fused_scratch + shared_lse + rope + kv_slots + sp_extra + (last ? 8.0 : 0.0);
}

double in_flight_stages(const Layout& l, int stage) {
  if (l.gpipe) return l.micro_batches;
  if (l.vp <= 1) return std::min(l.micro_batches, l.pp - stage);
  // Interleaved 1F1B (Megatron's schedule): 2 (p - s - 1) + (v - 1) p warm-up chunk-micro-batches, plus the one
  // computing, each 1/v of the stage's layers; stage 0: p (1 + (p - 1)/(p v)) (Megatron's theoretical memory).
  const double chunks = 2.0 * (l.pp - stage - 1) + double(l.vp - 1) * l.pp + 1.0;
  return std::min(double(l.micro_batches), chunks / l.vp);
}

double megatron_layer_activation_bytes(const ModelShape& m, const Layout& l, Attention att, bool op_selective) {
  // Korthikanti et al. 2022 (section 4) per layer: 34 sbh + 5 as^2b bytes in 16 bits, 34 = 16 two-byte tensors of
  // size sbh and two one-byte dropout masks, 5 = 2 two-byte tensors and one mask of size as^2b; written for any
  // element size e and for the general block: norm inputs (2), the QKV and MLP inputs (2) and the masks replicated
  // (split by tp with SP); Q, K and V (h + 2 kv_dim), the projection's input (h) and the MLP's (2 ffn: its GeLU's
  // input and output, or 3 ffn for SwiGLU: gate, up and their product) split by tp. Llama blocks have no dropout.
  // Fused attention keeps no s x s tensor (its log-sum-exp, 4 bytes per row and head, instead). cp splits s.
  const double e = elem_bytes(l.precision), s = double(m.s) / l.cp, b = l.micro_batch, h = m.h, a = m.a, t = l.tp;
  const double sbh = s * b * h;
  const bool sp = l.sequence_parallel && l.tp > 1;
  const double masks = m.llama() ? 0.0 : 2.0;
  if (l.recompute == Recompute::Full) return sbh * e / (sp ? t : 1.0);
  if (l.recompute == Recompute::Selective && op_selective) {
    // torchtitan's op policy keeps the block's input and the outputs of its GEMMs except every second one, and the
    // attention's output: x, Q, V, attention out, the MLP's first and last GEMM outputs (Llama: wq, wv, w1, w2);
    // norms, RoPE, SiLU and the products are recomputed
    return sbh * e / (sp ? t : 1.0) + s * b * e * (3.0 * h + m.kv_dim() + double(m.ffn_width())) / t +
           (att == Attention::Fused ? 4.0 * a * s * b / t : 0.0);
  }
  const double replicated = sbh * (4 * e + masks);
  const double mlp = (m.gated() ? 3.0 : 2.0) * double(m.ffn_width());
  const double split = s * b * e * (h + h + mlp);
  double bytes = replicated / (sp ? t : 1.0) + split / t + s * b * e * 2.0 * m.kv_dim_per_rank(l.tp);
  if (att == Attention::Fused)
    bytes += 4.0 * a * s * b / t;
  else if (l.recompute == Recompute::None)
    bytes += a * s * double(m.s) * b * (2 * e + (m.llama() ? 0.0 : 1.0)) / t;
  return bytes;
}

MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage) {
  return stage_memory(m, l, f, stage, stage_blocks(m, l.pp, f));
}

MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage, const std::vector<int>& begin) {
  const int blocks = begin[stage + 1] - begin[stage];
  const bool first = stage == 0, last = stage == l.pp - 1;
  const double psi = stage_params(m, l.tp, blocks, first, last, f);
  MemoryBreakdown r = zero_states(psi, state_bytes(l.precision), l.zero, l.shard_group());
  r.stage = stage;
  // gridtrain's units (src/model/units.hpp, UnitSpan): the blocks, the embedding (wte + wpe; Llama: wte) on the
  // first stage, the head on the last (the final norm, and the tied wte's copy off the first stage or Llama's own
  // lm_head).
  const double emb = double(padded_vocab(m, l.tp, f)) * m.h / l.tp;
  const double block = block_params_per_rank(m, l.tp);
  const double wpe = m.llama() ? 0.0 : double(m.s) * m.h, norm_f = m.llama() ? m.h : 2.0 * m.h;
  // Staged gradients (zero 2/3, one micro-batch, one stage) split the tied wte into chunks of as many rows as fit
  // in the largest block (unit_spans, wte_chunk_rows): the embedding unit is wpe alone, each chunk a unit. An
  // untied wte stays whole (the trainer chunks only the tied one).
  const int zero = shard_plan::running_stage(l.zero, l.dp);  // gridtrain's rules (src/train/dp/shard_plan.hpp)
  const bool staged = f == Framework::Gridtrain && shard_plan::stages_grads(zero, l.micro_batches, l.pp);
  std::vector<double> units(size_t(blocks), block);
  if (first && staged && m.tied()) {
    units.push_back(wpe);
    const double rows = shard_plan::wte_chunk_rows(std::floor(blocks > 0 ? block : norm_f), double(m.h));
    units.push_back(std::min(emb, std::floor(rows) * m.h));
  } else if (first) {
    units.push_back(emb + wpe);
  }
  if (last) units.push_back(norm_f + (first && m.tied() ? 0.0 : emb));
  std::sort(units.rbegin(), units.rend());
  // gridtrain's ZeRO-2/3 (src/train/dp/zero.cpp, predicted_state_bytes): the gradient shard, plus either the staging
  // of one unit at a time (two buffers of the largest unit, src/train/dp/zero_grads.hpp) or the full accumulation
  // buffer.
  if (f == Framework::Gridtrain && zero >= 2) {
    const double staging = staged ? shard_plan::staging_elems(units.front()) : 0.0;
    r.grads = state_bytes(l.precision).g * shard_plan::grad_elems(psi, l.dp, zero, staging);
  }
  const double e = elem_bytes(l.precision), sbh = double(m.s) / l.cp * l.micro_batch * m.h;
  if (f == Framework::Gridtrain) {
    const int slots = in_flight(l, stage);
    r.activations = slots * gridtrain_activation_bytes_per_slot(m, l, blocks, last);
    r.workspace = gridtrain_work_bytes(m, l, blocks, last);
  } else {
    const double slots = in_flight_stages(l, stage);
    r.activations = slots * blocks * megatron_layer_activation_bytes(m, l, attention_of(m, f), traits(f).selective_half_gemms);
    // Korthikanti section 4.3: the embedding's dropout mask (one byte, per micro-batch in flight).
    if (first && !m.llama()) r.activations += slots * sbh / (l.sequence_parallel ? l.tp : 1);
    // fp32 logits of the last stage's micro-batch for the cross-entropy.
    if (last) r.workspace = 4.0 * m.s / l.cp * l.micro_batch * double(padded_vocab(m, l.tp, f)) / l.tp;
  }
  // Communication buffers: pipeline send and receive of one micro-batch's (b, s, h) activations, and ZeRO-3's
  // two gather buffers, as large as the stage's largest unit and its second largest (src/train/dp/zero_gather.hpp:
  // the embedding or the tied head, a block).
  // (gridtrain with sequence parallelism sends this rank's rows only)
  if (l.pp > 1) r.comm_buffers += 2 * sbh * e / (f == Framework::Gridtrain ? split_rows(l) : 1.0);
  if (f == Framework::Gridtrain && zero >= 3) {
    r.comm_buffers += e * shard_plan::gather_elems(units[0], units.size() > 1 ? units[1] : 0.0);
  } else if (l.zero >= 3 && blocks > 0) {
    // the block computing and the one prefetched, gathered in the compute dtype, and (FSDP2, DeepSpeed) one block's
    // unsharded gradients before their reduce-scatter
    const double blk = m.block_params() / l.tp;
    r.comm_buffers += 2 * blk * e + (f == Framework::Megatron ? 0.0 : blk * grad_wire_bytes(l, f));
  }
  return r;
}

double grad_wire_bytes(const Layout& l, Framework f) {
  const double w = traits(f).grad_wire_bytes;
  return w > 0 ? w : state_bytes(l.precision).g;
}

MemoryBreakdown peak_memory(const ModelShape& m, const Layout& l, Framework f) {
  return peak_memory(m, l, f, stage_blocks(m, l.pp, f));
}

MemoryBreakdown peak_memory(const ModelShape& m, const Layout& l, Framework f, const std::vector<int>& begin) {
  MemoryBreakdown best;
  double most = -1;
  for (int s = 0; s < l.pp; ++s) {
    MemoryBreakdown b = stage_memory(m, l, f, s, begin);
    if (b.total() > most) {
      most = b.total();
      best = b;
    }
  }
  return best;
}

}  // namespace gt::plan
