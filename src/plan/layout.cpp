#include "src/plan/layout.hpp"

#include <cerrno>
#include <cstdlib>

#include "src/core/error.hpp"

namespace gt::plan {

std::string name(Precision p) { return enum_name(p); }

std::string name(Recompute r) { return enum_name(r); }

std::string name(Framework f) {
  switch (f) {
    case Framework::Gridtrain: return "gridtrain";
    case Framework::Megatron: return "megatron";
    case Framework::MegatronCore2024: return "megatron-core-2024";
    case Framework::DeepSpeedZero3: return "deepspeed-zero3";
    case Framework::TorchtitanFsdp2: return "torchtitan-fsdp2";
    case Framework::LlmC: return "llm.c";
  }
  return "?";
}

std::string name(Attention a) {
  switch (a) {
    case Attention::Auto: return "auto";
    case Attention::Materialized: return "materialized";
    case Attention::Fused: return "fused";
  }
  return "?";
}

Precision parse_precision(const std::string& s) {
  Precision p;
  if (!parse_enum(s, p)) throw Error("unknown precision '" + s + "' (fp32, bf16, fp16, fp8)");
  return p;
}

Recompute parse_recompute(const std::string& s) {
  Recompute r;
  if (!parse_enum(s, r)) throw Error("unknown recompute '" + s + "' (none, selective, full)");
  return r;
}

Framework parse_framework(const std::string& s) {
  for (Framework f : {Framework::Gridtrain, Framework::Megatron, Framework::MegatronCore2024, Framework::DeepSpeedZero3,
                      Framework::TorchtitanFsdp2, Framework::LlmC})
    if (s == name(f)) return f;
  if (s == "megatron-2021") return Framework::Megatron;
  throw Error("unknown framework '" + s +
              "' (gridtrain, megatron (Megatron-LM 2021-22), megatron-core-2024, deepspeed-zero3, torchtitan-fsdp2, llm.c)");
}

long ModelShape::ffn_width() const {
  if (ffn > 0) return ffn;
  if (!llama()) return 4 * h;
  return llama_default_ffn(h);  // src/core/config.hpp, as the trainer's model
}

double ModelShape::block_matmul_params() const {
  const double hh = double(h);
  return 2.0 * hh * hh + 2.0 * hh * kv_dim() + (gated() ? 3.0 : 2.0) * hh * double(ffn_width());
}

double ModelShape::block_other_params() const {
  const double hh = double(h);
  if (llama()) return 2.0 * hh;  // two RMSNorm gains, no biases
  // two LayerNorms (gain and bias each), the biases of Q, K, V, the projection, the MLP's up and down
  return 4.0 * hh + (hh + 2.0 * kv_dim()) + hh + double(ffn_width()) + hh;
}

double ModelShape::total_params() const {
  const double hh = double(h), emb = double(V) * hh;
  return emb * (tied() ? 1.0 : 2.0) + (llama() ? 0.0 : double(s) * hh) + L * block_params() + (llama() ? hh : 2.0 * hh);
}

namespace {
long positive_int(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < 1 || x > (1LL << 24))
    throw Error("plan: " + key + " expects an integer from 1 to 16777216, got '" + v + "'");
  return long(x);
}
}  // namespace

bool apply_model_key(ModelShape& m, const std::string& key, const std::string& value) {
  if (key == "model.arch") {
    if (!parse_enum(value, m.arch)) throw Error("plan: model.arch expects gpt2 or llama, got '" + value + "'");
  } else if (key == "model.ffn_hidden") {
    m.ffn = positive_int(key, value);
  } else if (key == "model.n_kv_head") {
    m.kv = positive_int(key, value);
  } else if (key == "model.attention") {
    // the trainer's kernels by the config's names (src/core/enums.hpp), and the planner's own "auto"
    AttentionKernel k;
    if (value == "auto") m.attention = Attention::Auto;
    else if (parse_enum(value, k)) m.attention = k == AttentionKernel::Fused ? Attention::Fused : Attention::Materialized;
    else throw Error("plan: model.attention expects fused, materialized or auto, got '" + value + "'");
  } else if (key == "model.tie_embeddings") {
    if (value != "true" && value != "false")
      throw Error("plan: model.tie_embeddings expects true or false, got '" + value + "'");
    m.tie = value == "true" ? 1 : 0;
  } else {
    return false;
  }
  return true;
}

void check_model_shape(const ModelShape& m) {
  if (m.kv_heads() > m.a || m.a % m.kv_heads() != 0)
    throw Error("plan: model.n_kv_head = " + std::to_string(m.kv_heads()) + " does not divide model.n_head = " +
                std::to_string(m.a));
}

std::string Layout::str() const {
  return "tp" + std::to_string(tp) + (cp > 1 ? " cp" + std::to_string(cp) : "") + " pp" + std::to_string(pp) +
         (vp > 1 ? " v" + std::to_string(vp) : "") + " dp" + std::to_string(dp) + " b" + std::to_string(micro_batch) +
         " m" + std::to_string(micro_batches) + " zero" + std::to_string(zero) + " " + name(precision) +
         " rc=" + name(recompute) + (sequence_parallel ? " sp" : "") + (gpipe ? " gpipe" : "");
}

}  // namespace gt::plan
