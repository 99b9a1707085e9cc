#include "src/plan/memory.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/work_sizes.hpp"
#include "src/plan/rebalance.hpp"

namespace gt::plan {

StateBytes state_bytes(Precision p) {
  switch (p) {
    case Precision::FP32: return {4, 4, 8};
    case Precision::BF16: return {2, 4, 12};
    case Precision::FP16: return {2, 2, 12};
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
long padded_vocab(const ModelShape& m, int tp, Framework f) {
  if (f != Framework::Megatron) return m.V;
  const long q = 128L * tp;  // Megatron's --make-vocab-size-divisible-by 128, times tp
  return (m.V + q - 1) / q * q;
}
}  // namespace

std::vector<int> stage_blocks(const ModelShape& m, int pp, Framework f) {
  std::vector<int> begin(pp + 1);
  if (f == Framework::Megatron) {
    for (int s = 0; s <= pp; ++s) begin[s] = int(long(s) * m.L / pp);
    return begin;
  }
  return modelled_partition(m, pp);  // the trainer's default (src/train/trainer.cpp)
}

double stage_params(const ModelShape& m, int tp, int blocks, bool first, bool last, Framework f) {
  const double h = m.h, t = tp;
  double n = blocks * (12.0 * h * h / t + 7.0 * h / t + 6.0 * h);
  const double emb = double(padded_vocab(m, tp, f)) * h / t;
  if (first) n += emb + double(m.s) * h;
  if (last && !first) n += emb;  // the tied head's copy on the last stage
  if (last) n += 2.0 * h;        // ln_f
  return n;
}

int in_flight(const Layout& l, int stage) {
  return l.gpipe ? l.micro_batches : std::min(l.micro_batches, l.pp - stage);
}

// Shapes (per TP rank): B micro-batch, T sequence, C width, Cl = C/t, Fl = 4C/t, NHl = heads/t.
double gridtrain_activation_bytes_per_slot(const ModelShape& m, const Layout& l, int blocks, bool last) {
  const double e = elem_bytes(l.precision), B = l.micro_batch, T = m.s, C = m.h, t = l.tp;
  const double BT = B * T, Cl = C / t, Fl = 4 * C / t, NHl = m.a / t;
  const double probs = m.fused_attention ? 0.0 : B * NHl * T * T;  // fused: none kept
  double per_block = BT * (4 * C + 3 * Cl + Cl + 2 * Fl + 4) + probs;
  if (l.recompute == Recompute::Selective) per_block -= probs;     // scores recomputed in backward
  if (l.recompute == Recompute::Full) per_block = BT * C;          // only the block input is kept
  double n = BT * C + per_block * blocks;
  if (last) n += BT * (C + 2);
  // fused: each block keeps the fp32 log-sum-exp of its queries (B, NHl, T), in the shared set under full recompute
  const double lse = m.fused_attention && l.recompute != Recompute::Full ? blocks * B * NHl * T * 4.0 : 0.0;
  return n * e + BT * 2 * 4.0 + lse;  // + int32 inputs and targets
}

double gridtrain_work_bytes(const ModelShape& m, const Layout& l, int blocks, bool last) {
  const double e = elem_bytes(l.precision), B = l.micro_batch, T = m.s, C = m.h, t = l.tp;
  const double BT = B * T, Cl = C / t, Fl = 4 * C / t, NHl = m.a / t;
  double n = 3 * BT * C;  // tmp, dres, dln
  // attention's backward scratch: one head's T x T on the host split, all NHl heads' on the device split; fused,
  // fp32 elements linear in T (kernels/work_sizes.hpp)
  const double fused_scratch =
      m.fused_attention && blocks > 0
          ? 4.0 * attention_fused_scratch_elems(int(B), int(NHl), int(T), int(m.h / m.a), l.device_split) : 0.0;
  if (blocks > 0) n += 3 * BT * Cl + BT * Cl + 2 * BT * Fl;
  if (blocks > 0 && !m.fused_attention) n += attention_scratch_elems(int(NHl), int(T), l.device_split);
  if (last) n += BT * C + BT * (m.V / t) + 3 * BT;  // lnf, logits, ce
  // The device split's column-sum partials, fp32 in every precision (the gradient type), for the widest column sum
  // over the B*T rows: LayerNorm's two C-wide gradients, the qkv (3Cl) and fc (Fl) biases; ln_f's on a head-only
  // stage. None on the host split.
  const double cols = blocks > 0 ? std::max({2 * C, 3 * Cl, Fl}) : last ? 2 * C : 0;
  const double partials = double(colsum_partials_elems(long(BT), long(cols), l.device_split));
  // Full recompute rebuilds one block's activations at a time during backward (one shared set, its output
  // into dln); selective refills one shared probability buffer.
  const double probs = m.fused_attention ? 0.0 : B * NHl * T * T;
  const double shared_lse = m.fused_attention && l.recompute == Recompute::Full && blocks > 0 ? B * NHl * T * 4.0 : 0.0;
  if (l.recompute == Recompute::Full && blocks > 0) n += BT * (4 * C + 3 * Cl + Cl + 2 * Fl + 4) + probs - BT * C;
  if (l.recompute == Recompute::Selective && blocks > 0) n += probs;
  // + the loss accumulator, one double
  return n * e + partials * 4.0 + fused_scratch + shared_lse + (last ? 8.0 : 0.0);
}

double megatron_layer_activation_bytes(const ModelShape& m, const Layout& l) {
  // Korthikanti's 34 = 16 two-byte tensors of size sbh + 2 one-byte dropout masks, 5 = 2 two-byte + 1 mask
  // of size as^2b; written for any element size e: sbh(16e + 2) and as^2b(2e + 1).
  const double e = elem_bytes(l.precision), s = m.s, b = l.micro_batch, h = m.h, a = m.a, t = l.tp;
  const double sbh = s * b * h;
  const bool sp = l.sequence_parallel && l.tp > 1;
  if (l.recompute == Recompute::Full) return sbh * e / (sp ? t : 1.0);
  const double replicated = sbh * (4 * e + 2);  // LN inputs, QKV and MLP inputs, two dropout masks
  const double split = sbh * 12 * e;            // Q, K, V, projection input, fc output, GeLU output
  double bytes = replicated / (sp ? t : 1.0) + split / t;
  if (l.recompute == Recompute::None) bytes += a * s * s * b * (2 * e + 1) / t;
  return bytes;
}

MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage) {
  return stage_memory(m, l, f, stage, stage_blocks(m, l.pp, f));
}

MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage, const std::vector<int>& begin) {
  const int blocks = begin[stage + 1] - begin[stage];
  const bool first = stage == 0, last = stage == l.pp - 1;
  const double psi = stage_params(m, l.tp, blocks, first, last, f);
  MemoryBreakdown r = zero_states(psi, state_bytes(l.precision), l.zero, l.dp);
  r.stage = stage;
  // gridtrain's units (src/train/zero.hpp, ZeroUnit): the blocks, the embedding (wte + wpe) on the first stage,
  // the head on the last (ln_f, and the tied wte's copy off the first stage).
  const double emb = double(padded_vocab(m, l.tp, f)) * m.h / l.tp;
  const double block = 12.0 * m.h * m.h / l.tp + 7.0 * m.h / l.tp + 6.0 * m.h;
  // Staged gradients (zero 2/3, one micro-batch, one stage) split the tied wte into chunks of as many rows as fit
  // in the largest block (zero_units, wte_chunk_rows): the embedding unit is wpe alone, each chunk a unit.
  const bool staged = f == Framework::Gridtrain && l.zero >= 2 && l.dp > 1 && l.micro_batches == 1 && l.pp == 1;
  std::vector<double> units(size_t(blocks), block);
  if (first && staged) {
    units.push_back(double(m.s) * m.h);
    const double rows = std::max(1.0, std::floor((blocks > 0 ? block : 2.0 * m.h) / m.h));
    units.push_back(std::min(emb, rows * m.h));
  } else if (first) {
    units.push_back(emb + double(m.s) * m.h);
  }
  if (last) units.push_back(2.0 * m.h + (first ? 0.0 : emb));
  std::sort(units.rbegin(), units.rend());
  // gridtrain's ZeRO-2/3 (src/train/zero.cpp, predicted_state_bytes): the gradient shard, plus either the staging
  // of one unit at a time (two buffers of the largest unit, src/train/zero_grads.hpp) or the full accumulation
  // buffer.
  if (f == Framework::Gridtrain && l.zero >= 2 && l.dp > 1) {
    const double g = state_bytes(l.precision).g;
    if (staged)
      r.grads = psi * g / l.dp + g * 2.0 * units.front();
    else
      r.grads = psi * g * (1.0 + 1.0 / l.dp);
  }
  const double e = elem_bytes(l.precision), sbh = double(m.s) * l.micro_batch * m.h;
  const int slots = in_flight(l, stage);
  if (f == Framework::Gridtrain) {
    r.activations = slots * gridtrain_activation_bytes_per_slot(m, l, blocks, last);
    r.workspace = gridtrain_work_bytes(m, l, blocks, last);
  } else {
    r.activations = slots * blocks * megatron_layer_activation_bytes(m, l);
    // Korthikanti section 4.3: the embedding's dropout mask (one byte, per micro-batch in flight).
    if (first) r.activations += slots * sbh / (l.sequence_parallel ? l.tp : 1);
    // fp32 logits of the last stage's micro-batch for the cross-entropy.
    if (last) r.workspace = 4.0 * m.s * l.micro_batch * double(padded_vocab(m, l.tp, f)) / l.tp;
  }
  // Communication buffers: pipeline send and receive of one micro-batch's (b, s, h) activations, and ZeRO-3's
  // two gather buffers, as large as the stage's largest unit and its second largest (src/train/zero_gather.hpp:
  // the embedding or the tied head, a block).
  if (l.pp > 1) r.comm_buffers += 2 * sbh * e;
  if (f == Framework::Gridtrain && l.zero >= 3 && l.dp > 1) {
    for (size_t i = 0; i < std::min<size_t>(2, units.size()); ++i) r.comm_buffers += units[i] * e;
  } else if (l.zero >= 3 && blocks > 0) {
    r.comm_buffers += 2 * (12.0 * m.h * m.h / l.tp + 13.0 * m.h) * e;
  }
  return r;
}

MemoryBreakdown peak_memory(const ModelShape& m, const Layout& l, Framework f) {
  MemoryBreakdown best;
  double most = -1;
  const std::vector<int> begin = stage_blocks(m, l.pp, f);
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
