#pragma once
// What the planner plans: a model shape and one layout (how the model is split over devices, in which
// precision, with which ZeRO stage and recompute). Plain values; the memory and time models read them.
#include <algorithm>
#include <string>

#include "src/core/config.hpp"

namespace gt::plan {

using Precision = gt::Precision;  // the config's enums (src/core/enums.hpp): one list for train and plan; FP8
using Recompute = gt::Recompute;  // (Hopper GEMMs in fp8, Transformer Engine, the rest bf16) is the planner's only
// Whose trainer to model: its memory ledger, overlap of communication with compute, attention kernel, ZeRO
// flavour and pipeline rules (src/plan/framework.hpp has each one's defaults and their sources).
enum class Framework { Gridtrain, Megatron, MegatronCore2024, DeepSpeedZero3, TorchtitanFsdp2, LlmC };
// Attention's kernels: the batched s x s products with the probabilities kept (materialized), or one fused
// (flash) kernel that never stores s x s. Auto: the framework's own.
enum class Attention { Auto, Materialized, Fused };
using Arch = gt::ModelArch;  // model.arch: the config's enum and names (src/core/enums.hpp)

std::string name(Precision p);
std::string name(Recompute r);
std::string name(Framework f);
std::string name(Attention a);
Precision parse_precision(const std::string& s);  // throws gt::Error naming the value
Recompute parse_recompute(const std::string& s);
Framework parse_framework(const std::string& s);

// Bytes of one element of the stored activations and weights (fp8 keeps bf16 activations in this model).
inline double elem_bytes(Precision p) { return p == Precision::FP32 ? 4.0 : 2.0; }

// The transformer's shape. GPT-2 (the default): LayerNorm, GeLU MLP of 4h, learned positions, biases, tied head,
// every head its own keys and values. Llama (arch = llama): RMSNorm, SwiGLU MLP of width ffn (three h x ffn
// matrices), rotary positions (no position table), no biases, untied head, grouped-query attention with kv
// key/value heads. The planner's keys: model.arch, model.ffn_hidden, model.n_kv_head, model.attention,
// model.tie_embeddings (apply_model_key), the names of the [llama] issue's configuration keys.
struct ModelShape {
  long L = 0, h = 0, a = 0, s = 0, V = 0;
  Arch arch = Arch::GPT2;
  long kv = 0;    // key/value heads; 0: a (multi-head attention)
  long ffn = 0;   // MLP hidden width; 0: 4h (GPT-2) or Llama's 2/3 4h rounded up to 256
  int tie = -1;   // tied head: -1 the architecture's own (GPT-2 tied, Llama untied), 0 untied, 1 tied
  Attention attention = Attention::Auto;
  // The trainer's model (model.attention names the kernel: gridtrain's ledger counts the log-sum-exp and the
  // fused scratch, or the (b, a, s, s) probabilities; kernels/work_sizes.hpp).
  static ModelShape from(const ModelConfig& m) {
    ModelShape r{m.n_layer, m.d_model, m.n_head, m.seq_len, m.vocab_size};
    r.attention = m.fused_attention() ? Attention::Fused : Attention::Materialized;
    r.arch = m.llama() ? Arch::Llama : Arch::GPT2;
    r.kv = r.llama() ? m.n_kv_head : 0;
    r.ffn = r.llama() ? m.ffn_hidden : 0;  // 0: the architecture's default (ffn_width)
    return r;
  }

  bool llama() const { return arch == Arch::Llama; }
  bool tied() const { return tie < 0 ? !llama() : tie == 1; }
  bool gated() const { return llama(); }  // SwiGLU: gate and up projections
  long kv_heads() const { return kv > 0 ? kv : a; }
  double kv_dim() const { return double(kv_heads()) * h / a; }  // width of K (and of V)
  // Width of K (and of V) on one of tp ranks: kv_dim / tp, or one head where tp > n_kv_head replicates each head
  // over tp / n_kv_head ranks (Megatron's GQA; gridtrain's llama_tensor_specs).
  double kv_dim_per_rank(int tp) const { return kv_dim() / double(std::min<long>(tp, kv_heads())); }
  long ffn_width() const;
  // Weights of one block's GEMMs: Q, K, V, output projection, MLP (2 or 3 matrices of h x ffn).
  double block_matmul_params() const;
  // Everything else in a block: the norms (2h LayerNorm gains and biases each, h RMSNorm gains) and biases.
  double block_other_params() const;
  double block_params() const { return block_matmul_params() + block_other_params(); }
  // Every parameter: embeddings (and the untied head), positions (GPT-2), blocks, final norm.
  double total_params() const;
  // Forward FLOPs per token of the GEMMs of the whole model (2 per multiply-add), head included.
  double matmul_flops_per_token() const { return 2.0 * (L * block_matmul_params() + double(V) * h); }
};

// Applies one planner model key (model.arch, model.ffn_hidden, model.n_kv_head, model.attention,
// model.tie_embeddings); false when the key is not one of them. Throws gt::Error naming a bad value.
bool apply_model_key(ModelShape& m, const std::string& key, const std::string& value);
// The shape's own consistency: kv heads dividing the heads, widths positive. Throws gt::Error naming it.
void check_model_shape(const ModelShape& m);

struct Layout {
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;             // context parallel: the sequence split over cp ranks (ring attention)
  int vp = 1;             // virtual pipeline stages per device (interleaved 1F1B when > 1)
  int micro_batch = 1;    // b: sequences per micro-batch on one DP rank
  int micro_batches = 1;  // m: micro-batches per step (pipeline micro-batches / gradient accumulation)
  int zero = 0;           // ZeRO stage 0-3 over the DP (x CP) group
  Precision precision = Precision::FP32;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;  // Megatron's SP (activations of LN/dropout split over tp)
  bool gpipe = false;              // schedule: false = 1F1B, true = GPipe (all forwards first)
  // The kernels' GPU work split (kernels/lanes.hpp), whose scratch is larger: attention's backward holds all local
  // heads' T x T, and the column sums keep partials (kernels/work_sizes.hpp). Set for a GPU cluster or build.
  bool device_split = false;
  int devices() const { return tp * cp * pp * dp; }
  int shard_group() const { return dp * cp; }  // ranks holding the same weights: gradients and ZeRO shards
  long global_batch() const { return long(micro_batch) * micro_batches * dp; }
  std::string str() const;  // "tp2 pp1 dp4 b2 m4 zero1 bf16 rc=selective"
};

}  // namespace gt::plan
