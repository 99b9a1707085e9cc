// GPT's sizes and tensors: ModelDims (the config's sizes checked against the TP degree) and the tensor specs of a
// stage on a TP rank (global shapes, TP splits, units, the tied wte), which the TrainState's layout is built from.
#include <cmath>

#include "src/core/error.hpp"
#include "src/model/gpt.hpp"

namespace gt {

ModelDims::ModelDims(const ModelConfig& m, int tp_rank, int tp_size)
    : L(m.n_layer), C(m.d_model), NH(m.n_head), hd(m.d_model / m.n_head), T(m.seq_len), V(m.vocab_size) {
  if (m.d_model % m.n_head != 0)
    throw Error("model.d_model (" + std::to_string(C) + ") is not divisible by model.n_head (" + std::to_string(NH) + ")");
  if (NH % tp_size != 0)
    throw Error("model.n_head (" + std::to_string(NH) + ") is not divisible by parallel.tp (" + std::to_string(tp_size) + ")");
  if (V % tp_size != 0)
    throw Error("model.vocab_size (" + std::to_string(V) + ") is not divisible by parallel.tp (" + std::to_string(tp_size) + ")");
  NHl = NH / tp_size;
  Cl = NHl * hd;
  Vl = V / tp_size;
  v0 = tp_rank * Vl;
  llama = m.llama();
  NKV = llama && m.n_kv_head > 0 ? m.n_kv_head : NH;
  F = llama ? (m.ffn_hidden > 0 ? m.ffn_hidden : int(llama_default_ffn(C))) : 4 * C;
  if (!llama && m.n_kv_head > 0 && m.n_kv_head != NH)
    throw Error("model.n_kv_head (" + std::to_string(m.n_kv_head) + ") needs model.arch = llama (GPT-2 has one key/value head per query head)");
  if (!llama && m.ffn_hidden > 0 && m.ffn_hidden != F)
    throw Error("model.ffn_hidden (" + std::to_string(m.ffn_hidden) + ") needs model.arch = llama (GPT-2's MLP is 4 d_model = " +
                std::to_string(F) + " wide)");
  if (llama) check_llama(m, tp_size);
  kv_rep = NKV < tp_size ? tp_size / NKV : 1;
  NKVl = NKV / tp_size > 0 ? NKV / tp_size : 1;
  kv0 = tp_rank * NKV / tp_size;
  Fl = F / tp_size;
  Qw = (NHl + 2 * NKVl) * hd;
}

// The Llama block's own constraints, one line each: grouped-query heads, RoPE's pairs, the TP split.
void ModelDims::check_llama(const ModelConfig& m, int tp_size) const {
  auto n = [](int v) { return std::to_string(v); };
  if (NH % NKV != 0) throw Error("model.n_kv_head (" + n(NKV) + ") does not divide model.n_head (" + n(NH) + ")");
  if (hd % 2 != 0)
    throw Error("model.arch = llama: RoPE rotates pairs of a head's dimensions, but the head dimension d_model / n_head = " +
                n(hd) + " is odd");
  if (NKV % tp_size != 0 && tp_size % NKV != 0)
    throw Error("model.n_kv_head (" + n(NKV) + ") is neither divisible by parallel.tp (" + n(tp_size) +
                ") nor a divisor of it: key/value heads are split over TP ranks or each replicated on tp / n_kv_head");
  if (F % tp_size != 0)
    throw Error("model.ffn_hidden (" + n(F) + ") is not divisible by parallel.tp (" + n(tp_size) + ")");
  if (!m.fused_attention())
    throw Error("model.arch = llama needs model.attention = fused (grouped-query heads and the grouped qkv layout)");
}

namespace {
std::string bname(int l, const char* leaf) { return "h." + std::to_string(l) + "." + leaf; }
}  // namespace

std::vector<TensorSpec> model_tensor_specs(const ModelConfig& cfg, const StageLayout& stage, int tp_rank, int tp_size) {
  if (cfg.llama()) return llama_tensor_specs(cfg, stage, tp_rank, tp_size);  // src/model/llama_block.cpp
  const ModelDims d(cfg, tp_rank, tp_size);
  const int L = d.L, C = d.C, r = tp_rank;
  const double std0 = cfg.init_std, std_res = cfg.init_std / std::sqrt(2.0 * L);
  std::vector<TensorSpec> specs;
  auto rep = [&](std::string name, std::vector<int64_t> shape, Init init, double sd, bool decay, int unit) {
    TensorSpec s;
    s.name = std::move(name); s.global_shape = std::move(shape); s.init = init; s.std = sd; s.decay = decay; s.unit = unit;
    specs.push_back(s);
  };
  auto split = [&](std::string name, std::vector<int64_t> shape, int dim, int64_t len, Init init, double sd, bool decay,
                   int unit) {
    TensorSpec s;
    s.name = std::move(name); s.global_shape = std::move(shape); s.split_dim = dim; s.split_start = r * len;
    s.split_len = len; s.init = init; s.std = sd; s.decay = decay; s.unit = unit;
    specs.push_back(s);
  };
  // Storage order = forward order, so that backward completes gradients from the end of the buffer.
  if (stage.first() || stage.last()) {
    split("wte", {d.V, C}, 0, d.Vl, Init::Normal, std0, true, stage.first() ? 0 : L + 1);
    if (!stage.first()) specs.back().tied_to_stage = 0;
  }
  if (stage.first()) rep("wpe", {d.T, C}, Init::Normal, std0, true, 0);
  for (int l = stage.block_begin; l < stage.block_end; ++l) {
    const int u = l + 1;
    rep(bname(l, "ln_1.w"), {C}, Init::Ones, 0, false, u);
    rep(bname(l, "ln_1.b"), {C}, Init::Zeros, 0, false, u);
    split(bname(l, "attn.qkv.w"), {3, C, C}, 1, d.Cl, Init::Normal, std0, true, u);
    split(bname(l, "attn.qkv.b"), {3, C}, 1, d.Cl, Init::Zeros, 0, false, u);
    split(bname(l, "attn.proj.w"), {C, C}, 1, d.Cl, Init::Normal, std_res, true, u);
    rep(bname(l, "attn.proj.b"), {C}, Init::Zeros, 0, false, u);
    rep(bname(l, "ln_2.w"), {C}, Init::Ones, 0, false, u);
    rep(bname(l, "ln_2.b"), {C}, Init::Zeros, 0, false, u);
    split(bname(l, "mlp.fc.w"), {4 * C, C}, 0, d.Fl, Init::Normal, std0, true, u);
    split(bname(l, "mlp.fc.b"), {4 * C}, 0, d.Fl, Init::Zeros, 0, false, u);
    split(bname(l, "mlp.proj.w"), {C, 4 * C}, 1, d.Fl, Init::Normal, std_res, true, u);
    rep(bname(l, "mlp.proj.b"), {C}, Init::Zeros, 0, false, u);
  }
  if (stage.last()) {
    rep("ln_f.w", {C}, Init::Ones, 0, false, L + 1);
    rep("ln_f.b", {C}, Init::Zeros, 0, false, L + 1);
  }
  for (TensorSpec& s : specs)  // the linear layers' weights take 2:4 sparsity (src/train/extensions/sparsity.hpp)
    for (const char* t : {".attn.qkv.w", ".attn.proj.w", ".mlp.fc.w", ".mlp.proj.w"})
      if (s.name.size() > std::string(t).size() && s.name.compare(s.name.size() - std::string(t).size(), std::string::npos, t) == 0)
        s.sparse24 = true;
  return specs;
}

}  // namespace gt
