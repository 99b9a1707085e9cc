#pragma once
// What the planner plans: a model shape and one layout (how the model is split over devices, in which
// precision, with which ZeRO stage and recompute). Plain values; the memory and time models read them.
#include <string>

#include "src/core/config.hpp"

namespace gt::plan {

enum class Precision { FP32, BF16, FP16 };
enum class Recompute { None, Selective, Full };
// Which trainer's memory ledger and overlap behaviour to model: gridtrain's own (GPT<T>'s activation ledger,
// DP buckets overlapped with the last backward) or Megatron-LM's (Korthikanti et al. 2022 activations,
// 2021-era DP all-reduce after backward, vocabulary padded to 128 x tp).
enum class Framework { Gridtrain, Megatron };

std::string name(Precision p);
std::string name(Recompute r);
std::string name(Framework f);
Precision parse_precision(const std::string& s);  // throws gt::Error naming the value
Recompute parse_recompute(const std::string& s);
Framework parse_framework(const std::string& s);

// Bytes of one element in the compute dtype (weights and activations).
inline double elem_bytes(Precision p) { return p == Precision::FP32 ? 4.0 : 2.0; }

// GPT-2 shape: L blocks of width h, a heads, sequence s, vocabulary V, MLP 4h, biases, tied head.
struct ModelShape {
  long L = 0, h = 0, a = 0, s = 0, V = 0;
  // model.attention = "fused": no (b, a, s, s) probabilities; the log-sum-exp (b, a, s) in fp32 instead, and the
  // kernels' scratch linear in s (kernels/work_sizes.hpp). Memory only: the flops are the same up to the fused
  // backward's recomputed scores (docs/model.md).
  bool fused_attention = false;
  static ModelShape from(const ModelConfig& m) {
    return {m.n_layer, m.d_model, m.n_head, m.seq_len, m.vocab_size, m.attention == "fused"};
  }
  // Parameters of one block (weights and biases of attention, MLP and both layer norms).
  double block_params() const { return 12.0 * h * h + 13.0 * h; }
  // Every parameter: embeddings (tied head), positions, blocks, final layer norm.
  double total_params() const { return double(V) * h + double(s) * h + L * block_params() + 2.0 * h; }
};

struct Layout {
  int tp = 1, pp = 1, dp = 1;
  int micro_batch = 1;    // b: sequences per micro-batch on one DP rank
  int micro_batches = 1;  // m: micro-batches per step (pipeline micro-batches / gradient accumulation)
  int zero = 0;           // ZeRO stage 0-3 over the DP group
  Precision precision = Precision::FP32;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;  // Megatron's SP (activations of LN/dropout split over tp)
  bool gpipe = false;              // schedule: false = 1F1B, true = GPipe (all forwards first)
  // The kernels' GPU work split (kernels/lanes.hpp), whose scratch is larger: attention's backward holds all local
  // heads' T x T, and the column sums keep partials (kernels/work_sizes.hpp). Set for a GPU cluster or build.
  bool device_split = false;
  int devices() const { return tp * pp * dp; }
  long global_batch() const { return long(micro_batch) * micro_batches * dp; }
  std::string str() const;  // "tp2 pp1 dp4 b2 m4 zero1 bf16 rc=selective"
};

}  // namespace gt::plan
