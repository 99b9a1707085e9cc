// model.arch = llama: the tensors and the block of a Llama-style decoder (docs/model.md "Llama"), in GPT<T>'s
// pipeline slots, TP groups and buffers. Pre-norm with RMSNorm; attention: one column-parallel GEMM into the grouped
// qkv layout (per key/value head its G query heads, key and value: a TP shard of key/value heads is one hyperslab of
// the weight), RoPE on the query and key heads, the fused grouped-query attention, row-parallel proj; MLP: one
// column-parallel GEMM into [gate | up], SwiGLU, row-parallel down. No biases; the head (norm_f, lm_head) is
// untied from wte and there are no learned positions (GPT<T>::head_forward, forward).
#include <cmath>
#include <string>

#include "kernels/attention_fused.hpp"
#include "kernels/kernels.hpp"
#include "kernels/rmsnorm.hpp"
#include "kernels/rope.hpp"
#include "kernels/swiglu.hpp"
#include "src/model/gpt.hpp"

namespace gt {

namespace {
// tp > n_kv_head: the rank's slice of the grouped qkv weight is its key/value group kv0, of that group's G query
// heads its NHl (the replica's share), and the group's key and value heads, which kv_rep ranks hold alike (Megatron's
// replicated GQA). The local layout is the grouped one with one group: [NHl query heads | key | value].
void replicate_kv(TensorSpec& s, const ModelDims& d, int tp_rank) {
  s.split_start = d.kv0;
  s.split_len = 1;
  s.replicas = d.kv_rep;
  s.replica = tp_rank % d.kv_rep;
  s.sel_dim = 1;
  s.sel_start = int64_t(s.replica) * d.NHl;
  s.sel_len = d.NHl;
  s.tail_start = d.NH / d.NKV;
  s.tail_len = 2;
}
}  // namespace

std::vector<TensorSpec> llama_tensor_specs(const ModelConfig& cfg, const StageLayout& stage, int tp_rank, int tp_size) {
  const ModelDims d(cfg, tp_rank, tp_size);
  const int L = d.L, C = d.C, hd = d.hd, G = d.NH / d.NKV;
  const double std0 = cfg.init_std, std_res = cfg.init_std / std::sqrt(2.0 * L);
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape, int dim, int64_t len, Init init, double sd, int unit) {
    TensorSpec s;
    s.name = std::move(name);
    s.global_shape = std::move(shape);
    if (dim >= 0) {
      s.split_dim = dim;
      s.split_start = tp_rank * len;
      s.split_len = len;
    }
    s.init = init;
    s.std = sd;
    s.decay = init == Init::Normal;  // the matrices; not the norms' gains
    s.unit = unit;
    specs.push_back(s);
  };
  // Storage order = forward order (backward completes gradients from the end of the buffer).
  if (stage.first()) add("wte", {d.V, C}, 0, d.Vl, Init::Normal, std0, 0);
  for (int l = stage.block_begin; l < stage.block_end; ++l) {
    const int u = l + 1;
    const std::string b = "h." + std::to_string(l) + ".";
    add(b + "attn_norm.w", {C}, -1, 0, Init::Ones, 0, u);
    add(b + "attn.qkv.w", {d.NKV, G + 2, hd, C}, 0, d.NKVl, Init::Normal, std0, u);
    if (d.kv_rep > 1) replicate_kv(specs.back(), d, tp_rank);
    add(b + "attn.proj.w", {C, int64_t(d.NH) * hd}, 1, d.Cl, Init::Normal, std_res, u);
    add(b + "mlp_norm.w", {C}, -1, 0, Init::Ones, 0, u);
    add(b + "mlp.gate_up.w", {2, d.F, C}, 1, d.Fl, Init::Normal, std0, u);
    add(b + "mlp.down.w", {C, d.F}, 1, d.Fl, Init::Normal, std_res, u);
  }
  if (stage.last()) {
    add("norm_f.w", {C}, -1, 0, Init::Ones, 0, L + 1);
    add("lm_head.w", {d.V, C}, 0, d.Vl, Init::Normal, std0, L + 1);
  }
  for (TensorSpec& s : specs)  // the attention's weights (as before the flag: not the SwiGLU's) take 2:4 sparsity (src/train/extensions/sparsity.hpp)
    for (const char* t : {".attn.qkv.w", ".attn.proj.w"})
      if (s.name.size() > std::string(t).size() && s.name.compare(s.name.size() - std::string(t).size(), std::string::npos, t) == 0)
        s.sparse24 = true;
  return specs;
}

// in: x (B,T,C)   out: a.res3, the block's activations kept in a (ln1/ln2: the normed inputs, their rstd; qkv after
// RoPE; lse; atty; fch = [gate | up]; fchg = silu(gate) o up)
template <class T>
void GPT<T>::llama_block_forward(int l, const T* x, BlockActs& a) {
  const int B = B_, Tn = d_.T, C = d_.C, BT = B * Tn, Cl = d_.Cl, Fl = d_.Fl, hd = d_.hd, n = int(sp_.local_rows());
  const int G = d_.NHl / d_.NKVl;
  BlockTensors<T> p = block_params(l);
  const A eps = A(norm_eps_);
  // the norms and residual adds on this rank's n rows (all of B*T without sequence parallelism: gather_rows and
  // reduce_rows in gpt.hpp)
  rmsnorm_forward(a.ln1.data(), a.ln1_rstd.data(), x, p.ln1w, n, C, eps);
  const T* ln1 = gather_rows(sp_full_.data(), a.ln1.data());
  linear_forward(a.qkv.data(), ln1, p.qkvw, static_cast<const T*>(nullptr), BT, C, d_.Qw);
  // per key/value group: G query heads and the key head rotated, the value head not
  rope_apply(a.qkv.data(), rope_cos_.data(), rope_sin_.data(), BT, Tn, d_.NKVl, G + 1, long(G + 2) * hd, hd, d_.Qw,
             false);
  attention_fused_forward(a.atty.data(), a.lse.data(), fa_scratch_.data(), a.qkv.data(), B, Tn, d_.NHl, hd, d_.NKVl,
                          true);
  linear_forward(tmp_.data(), a.atty.data(), p.projw, static_cast<const T*>(nullptr), BT, Cl, C);
  residual_forward(a.res2.data(), x, reduce_rows(tmp_.data(), sp_full_.data()), long(n) * C);
  rmsnorm_forward(a.ln2.data(), a.ln2_rstd.data(), a.res2.data(), p.ln2w, n, C, eps);
  const T* ln2 = gather_rows(sp_full_.data(), a.ln2.data());
  linear_forward(a.fch.data(), ln2, p.fcw, static_cast<const T*>(nullptr), BT, C, 2 * Fl);
  swiglu_forward(a.fchg.data(), a.fch.data(), BT, Fl);
  linear_forward(tmp_.data(), a.fchg.data(), p.fcprojw, static_cast<const T*>(nullptr), BT, Fl, C);
  residual_forward(a.res3.data(), a.res2.data(), reduce_rows(tmp_.data(), sp_full_.data()), long(n) * C);
}

// in: dres_ = dL/d(block output)   out: dres_ = dL/dx; parameter gradients accumulate. The residual path carries dres
// through; each RMSNorm backward adds its branch.
template <class T>
void GPT<T>::llama_block_backward(int l, const T* x, BlockActs& a) {
  const int B = B_, Tn = d_.T, C = d_.C, BT = B * Tn, Cl = d_.Cl, Fl = d_.Fl, hd = d_.hd, n = int(sp_.local_rows());
  const int G = d_.NHl / d_.NKVl;
  BlockTensors<T> p = block_params(l);
  BlockTensors<A> g = block_grads(l);
  T* dres = dres_.data();
  A* part = colsum_.data();
  A* no_bias = nullptr;
  const std::vector<A*> rep = sp_grads_begin({&g.ln1w, &g.ln2w});  // sequence parallel: partial per rank
  // MLP half (sequence parallel: dres and the normed input gathered to B*T rows, the input gradient reduce-scattered)
  linear_backward(dfchg_.data(), g.fcprojw, no_bias, part, gather_rows(tmp_.data(), dres), a.fchg.data(), p.fcprojw,
                  BT, Fl, C);
  swiglu_backward(dfch_.data(), dfchg_.data(), a.fch.data(), BT, Fl);
  linear_backward(dln_.data(), g.fcw, no_bias, part, dfch_.data(), gather_rows(sp_full_.data(), a.ln2.data()), p.fcw,
                  BT, C, 2 * Fl);
  rmsnorm_backward(dres, g.ln2w, part, reduce_rows(dln_.data(), sp_full_.data()), a.res2.data(), p.ln2w,
                   a.ln2_rstd.data(), n, C);
  // attention half: dqkv is the gradient of the rotated q and k; rotating back gives that of the GEMM's output
  linear_backward(datty_.data(), g.projw, no_bias, part, gather_rows(tmp_.data(), dres), a.atty.data(), p.projw, BT,
                  Cl, C);
  attention_fused_backward(dqkv_.data(), fa_scratch_.data(), datty_.data(), a.qkv.data(), a.atty.data(), a.lse.data(),
                           B, Tn, d_.NHl, hd, d_.NKVl, true);
  rope_apply(dqkv_.data(), rope_cos_.data(), rope_sin_.data(), BT, Tn, d_.NKVl, G + 1, long(G + 2) * hd, hd, d_.Qw,
             true);
  kv_grads_begin(g.qkvw);  // replicated key/value heads: this rank's partial summed over the replicas at end
  linear_backward(dln_.data(), g.qkvw, no_bias, part, dqkv_.data(), gather_rows(sp_full_.data(), a.ln1.data()), p.qkvw,
                  BT, C, d_.Qw);
  kv_grads_end(g.qkvw);
  rmsnorm_backward(dres, g.ln1w, part, reduce_rows(dln_.data(), sp_full_.data()), x, p.ln1w, a.ln1_rstd.data(), n, C);
  sp_grads_end(rep);
}

#define GT_LLAMA_BLOCK(T)                                                                                         \
  template void GPT<T>::llama_block_forward(int, const T*, GPT<T>::BlockActs&);                                  \
  template void GPT<T>::llama_block_backward(int, const T*, GPT<T>::BlockActs&);
GT_LLAMA_BLOCK(float)
GT_LLAMA_BLOCK(double)
GT_LLAMA_BLOCK(bf16_t)
GT_LLAMA_BLOCK(fp16_t)
#undef GT_LLAMA_BLOCK

}  // namespace gt
