// GPT<T>: the buffers of a stage, the blocks (forward and backward), the step's order over the units and where a unit's
// parameters and gradients are (unit_io.hpp). The sizes and tensor specs are in gpt_specs.cpp, the embedding and
// the head in gpt_vocab.cpp, the Llama block in llama_block.cpp.
#include "src/model/gpt.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/attention_fused.hpp"
#include "kernels/kernels.hpp"
#include "kernels/rmsnorm.hpp"
#include "kernels/rope.hpp"
#include "kernels/tp_epilogue.hpp"
#include "src/core/error.hpp"

namespace gt {

template <class T>
GPT<T>::GPT(const ModelConfig& cfg, uint64_t seed, int micro_batch_size, StageLayout stage, TensorParallel tp,
            int slots, const TensorLayout* layout, Recompute recompute)
    : d_(cfg, tp.rank, tp.size),
      B_(micro_batch_size),
      stage_(stage),
      tp_(tp),
      store_(layout ? *layout : TensorLayout(model_tensor_specs(cfg, stage, tp.rank, tp.size), 1)),
      recompute_(recompute),
      fused_(cfg.fused_attention()),
      norm_eps_(cfg.norm_eps),
      sp_(tp.sequence, tp.rank, tp.size, tp.comm, long(micro_batch_size) * cfg.seq_len, cfg.d_model) {
  const int C = d_.C;
  if (tp.sequence) check_sequence_split(d_.T, tp.size);
  if (!layout) store_.allocate(seed);

  const long BT = long(B_) * d_.T, n = sp_.local_rows();  // n: the rows outside the TP regions
  const int nb = stage.block_end - stage.block_begin;
  acts_.resize(slots);
  if (recompute_ == Recompute::Full && nb > 0) shared_ = make_block_acts(false);
  if (recompute_ == Recompute::Selective && nb > 0 && !fused_) shared_.att = DeviceView<T>("att", long(B_) * d_.NHl * d_.T * d_.T);
  for (auto& a : acts_) {
    a.x0 = DeviceView<T>("x0", n * C);
    a.blocks.resize(nb);
    for (auto& b : a.blocks) {
      if (recompute_ == Recompute::Full) {  // only the output is this block's; the rest is rebuilt in backward
        b = shared_;
        b.res3 = DeviceView<T>("res3", n * C);
      } else {
        b = make_block_acts(true);
        if (recompute_ == Recompute::Selective && !fused_) b.att = shared_.att;
      }
    }
    if (stage.first()) a.inputs = Kokkos::View<int32_t*, mem_space>("inputs", BT);
    if (stage.first() && !kHostBlocking)  // the tokens grouped by id for wte's gradient (set_tokens)
      a.token_groups = Kokkos::View<int32_t*, mem_space>("token_groups", token_groups_elems(BT));
    if (stage.last()) {
      a.targets = Kokkos::View<int32_t*, mem_space>("targets", BT);
      if (!d_.llama) a.lnf_mean = DeviceView<A>("lnf_mean", n);
      a.lnf_rstd = DeviceView<A>("lnf_rstd", n);
      a.dlnf = DeviceView<T>("dlnf", n * C);
    }
  }
  if (stage.last()) {
    lnf_ = DeviceView<T>("lnf", BT * C);
    logits_ = DeviceView<T>("logits", BT * d_.Vl);
    ce_ = DeviceView<A>("ce", 3 * BT);
    loss_acc_ = DeviceView<double>("loss_acc", 1);
  }
  if (is_half_v<T> && tp.size > 1 && !sp_.on()) tp_sum_ = DeviceView<float>("tp_sum", BT * C);
  if (sp_.on() && (nb > 0 || stage.last())) {
    sp_full_ = DeviceView<T>("sp_full", BT * C);
    sp_grads_ = DeviceView<A>("sp_grads", (d_.llama ? 2L : 6L) * C);
  }
  if (d_.kv_rep > 1 && nb > 0) kv_grads_ = DeviceView<A>("kv_grads", (d_.NKV + 1L) * 2 * d_.hd * C);
  tmp_ = DeviceView<T>("tmp", BT * C);
  dres_ = DeviceView<T>("dres", n * C);
  dln_ = DeviceView<T>("dln", BT * C);
  if (nb > 0) {
    dqkv_ = DeviceView<T>("dqkv", BT * d_.Qw);
    datty_ = DeviceView<T>("datty", BT * d_.Cl);
    dfch_ = DeviceView<T>("dfch", BT * (d_.llama ? 2 : 1) * d_.Fl);  // Llama: [gate | up]
    dfchg_ = DeviceView<T>("dfchg", BT * d_.Fl);
    if (fused_) fa_scratch_ = DeviceView<A>("fa_scratch", attention_fused_scratch_elems(B_, d_.NHl, d_.T, d_.hd));
    else att_scratch_ = DeviceView<T>("att_scratch", attention_scratch_elems(d_.NHl, d_.T));
    if (d_.llama) {
      rope_cos_ = DeviceView<A>("rope_cos", long(d_.T) * d_.hd / 2);
      rope_sin_ = DeviceView<A>("rope_sin", long(d_.T) * d_.hd / 2);
      rope_tables(rope_cos_.data(), rope_sin_.data(), d_.T, d_.hd, cfg.rope_theta);
    }
  }
  // Widest column sum over the B*T rows: LayerNorm's two C-wide gradients, the qkv and fc biases (3Cl, Fl).
  // Llama: RMSNorm's one C-wide gradient, no biases.
  const long norm_cols = d_.llama ? C : 2L * C;
  const long colsum_cols = nb > 0 ? (d_.llama ? norm_cols : std::max({norm_cols, 3L * d_.Cl, long(d_.Fl)}))
                           : stage.last() ? norm_cols : 0L;
  colsum_ = DeviceView<A>("colsum_partials", colsum_partials_elems(BT, colsum_cols));
}

// One block's activation buffers (shapes: B*T rows of Qw (3Cl for GPT-2), Cl, Fl (2Fl for Llama's [gate | up]);
// att (B, NHl, T, T) or lse (B, NHl, T); the norms' inputs and outputs, their statistics and the residuals: n rows
// of C, n = B*T or, sequence parallel, B*T/tp); res3 only with_res3.
template <class T>
typename GPT<T>::BlockActs GPT<T>::make_block_acts(bool with_res3) const {
  const long BT = long(B_) * d_.T, C = d_.C, n = sp_.local_rows();
  BlockActs b;
  b.ln1 = DeviceView<T>("ln1", n * C);
  if (!d_.llama) b.ln1_mean = DeviceView<A>("ln1_mean", n);  // RMSNorm keeps rstd only
  b.ln1_rstd = DeviceView<A>("ln1_rstd", n);
  b.qkv = DeviceView<T>("qkv", BT * d_.Qw);
  if (fused_) b.lse = DeviceView<A>("lse", long(B_) * d_.NHl * d_.T);
  else b.att = DeviceView<T>("att", long(B_) * d_.NHl * d_.T * d_.T);
  b.atty = DeviceView<T>("atty", BT * d_.Cl);
  b.res2 = DeviceView<T>("res2", n * C);
  b.ln2 = DeviceView<T>("ln2", n * C);
  if (!d_.llama) b.ln2_mean = DeviceView<A>("ln2_mean", n);
  b.ln2_rstd = DeviceView<A>("ln2_rstd", n);
  b.fch = DeviceView<T>("fch", BT * (d_.llama ? 2 : 1) * d_.Fl);  // Llama: [gate | up]
  b.fchg = DeviceView<T>("fchg", BT * d_.Fl);
  if (with_res3) b.res3 = DeviceView<T>("res3", n * C);
  return b;
}

template <class T>
size_t GPT<T>::block_acts_bytes(const BlockActs& b) const {
  const size_t n = b.ln1.size() + b.qkv.size() + b.att.size() + b.atty.size() + b.res2.size() + b.ln2.size() +
                   b.fch.size() + b.fchg.size() + b.res3.size();
  return n * sizeof(T) +
         (b.ln1_mean.size() + b.ln1_rstd.size() + b.ln2_mean.size() + b.ln2_rstd.size() + b.lse.size()) * sizeof(A);
}

namespace {
std::string bname(int l, const char* leaf) { return "h." + std::to_string(l) + "." + leaf; }

// The twelve tensors of block l, in declaration order, from a name -> pointer lookup.
// Llama's six (llama_tensor_specs) in the same slots: the norms' weights, qkv, proj, gate_up (fc) and down
// (fc proj); no biases (null).
template <class Tensors, class Get>
Tensors block_tensors(int l, bool llama, Get get) {
  auto p = [&](const char* leaf) { return get(bname(l, leaf)); };
  if (llama)
    return {p("attn_norm.w"), nullptr, p("attn.qkv.w"), nullptr, p("attn.proj.w"), nullptr,
            p("mlp_norm.w"), nullptr, p("mlp.gate_up.w"), nullptr, p("mlp.down.w"), nullptr};
  return {p("ln_1.w"), p("ln_1.b"), p("attn.qkv.w"), p("attn.qkv.b"), p("attn.proj.w"), p("attn.proj.b"),
          p("ln_2.w"), p("ln_2.b"), p("mlp.fc.w"), p("mlp.fc.b"), p("mlp.proj.w"), p("mlp.proj.b")};
}
}  // namespace

template <class T>
typename GPT<T>::template BlockTensors<T> GPT<T>::block_params(int l) {
  return block_tensors<BlockTensors<T>>(l, d_.llama, [&](const std::string& n) { return store_.param(n); });
}

template <class T>
typename GPT<T>::template BlockTensors<typename GPT<T>::A> GPT<T>::block_grads(int l) {
  return block_tensors<BlockTensors<A>>(l, d_.llama, [&](const std::string& n) { return store_.grad(n); });
}

// Sum over the TP group. 16-bit activations are summed in fp32: widened into tp_sum_, reduced, rounded once.
template <class T>
template <class U>
void GPT<T>::tp_allreduce_sum(U* buf, size_t n) {
  if (tp_.size == 1) return;
  if constexpr (is_half_v<U>) {
    convert(tp_sum_.data(), buf, long(n));
    tp_.comm->allreduce(tp_sum_.data(), n, DType::F32, ReduceOp::Sum);
    convert(buf, tp_sum_.data(), long(n));
  } else {
    tp_.comm->allreduce(buf, n, dtype_of<U>(), ReduceOp::Sum);
  }
}

template <class T>
T* GPT<T>::reduce_rows(T* full, T* local) {
  if (sp_.on()) return sp_.reduce(full, local, d_.C);
  tp_allreduce_sum(full, size_t(sp_.rows()) * d_.C);
  return full;
}

template <class T>
std::vector<typename GPT<T>::A*> GPT<T>::sp_grads_begin(std::initializer_list<A**> grads) {
  std::vector<A*> real;
  if (!sp_.on()) return real;
  for (A** g : grads) {
    if (!*g) continue;
    real.push_back(*g);
    *g = sp_grads_.data() + (real.size() - 1) * size_t(d_.C);
  }
  fill(sp_grads_.data(), long(real.size()) * d_.C, A(0));
  return real;
}

template <class T>
void GPT<T>::sp_grads_end(const std::vector<A*>& real) {
  if (real.empty()) return;
  tp_.comm->allreduce(sp_grads_.data(), real.size() * size_t(d_.C), dtype_of<A>(), ReduceOp::Sum);
  for (size_t i = 0; i < real.size(); ++i) add_inplace(real[i], sp_grads_.data() + i * size_t(d_.C), long(d_.C));
}

// The key/value rows of the local qkv weight are its last 2 hd (times C) elements: [NHl query heads | key | value].
// The sum over a head's replicas is one all-reduce over the TP group with a slot per key/value head, each rank adding
// into its head's slot (as fast as a sub-communicator for the small kv_rep = tp / n_kv_head of today's models, and no
// extra communicator to create and keep).
template <class T>
void GPT<T>::kv_grads_begin(A* gq) {
  if (d_.kv_rep == 1) return;
  const long n = 2L * d_.hd * d_.C, at = long(d_.NHl) * d_.hd * d_.C;
  A* aside = kv_grads_.data() + long(d_.NKV) * n;
  fill(aside, n, A(0));
  add_inplace(aside, gq + at, n);
  fill(gq + at, n, A(0));
}

template <class T>
void GPT<T>::kv_grads_end(A* gq) {
  if (d_.kv_rep == 1) return;
  const long n = 2L * d_.hd * d_.C, at = long(d_.NHl) * d_.hd * d_.C;
  A* slots = kv_grads_.data();
  A* mine = slots + long(d_.kv0) * n;
  A* aside = slots + long(d_.NKV) * n;
  fill(slots, long(d_.NKV) * n, A(0));
  add_inplace(mine, gq + at, n);
  tp_.comm->allreduce(slots, size_t(d_.NKV) * size_t(n), dtype_of<A>(), ReduceOp::Sum);
  add_inplace(aside, mine, n);
  fill(gq + at, n, A(0));
  add_inplace(gq + at, aside, n);
}

template <class T>
void GPT<T>::set_tokens(int slot, const int32_t* inputs, const int32_t* targets) {
  Acts& a = acts_[slot];
  const size_t BT = size_t(B_) * d_.T;
  if (stage_.first()) {
    Kokkos::View<const int32_t*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(inputs, BT);
    Kokkos::deep_copy(a.inputs, h);
    if constexpr (!kHostBlocking) {  // grouped here, where the tokens are, once per micro-batch (token_groups.hpp)
      a.token_group_count = group_tokens(inputs, long(BT), token_groups_host_);
      Kokkos::View<const int32_t*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> g(token_groups_host_.data(),
                                                                                          token_groups_host_.size());
      Kokkos::deep_copy(Kokkos::subview(a.token_groups, std::make_pair(size_t(0), g.size())), g);
    }
  }
  if (stage_.last()) {
    Kokkos::View<const int32_t*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(targets, BT);
    Kokkos::deep_copy(a.targets, h);
  }
}

template <class T>
void GPT<T>::set_samples(int slot, const int32_t* rows) {
  const int Tn = d_.T;
  sample_inputs_.resize(size_t(B_) * Tn);
  sample_targets_.resize(size_t(B_) * Tn);
  for (int b = 0; b < B_; ++b) {
    const int32_t* row = rows + size_t(b) * (Tn + 1);
    std::copy(row, row + Tn, sample_inputs_.begin() + long(b) * Tn);
    std::copy(row + 1, row + Tn + 1, sample_targets_.begin() + long(b) * Tn);
  }
  set_tokens(slot, sample_inputs_.data(), sample_targets_.data());
}

// The grouped tokens of the micro-batch in `a` on the device split (set_tokens); none on the host split.
template <class T>
TokenGroups GPT<T>::token_groups(const Acts& a) const {
  if (a.token_group_count < 0) return TokenGroups{};
  return token_groups_at(a.token_groups.data(), long(B_) * d_.T, a.token_group_count);
}

template <class T>
T* GPT<T>::stage_output(int slot) {
  Acts& a = acts_[slot];
  return a.blocks.empty() ? a.x0.data() : a.blocks.back().res3.data();
}

// in: x (B,T,C)   out: a.res3 (B,T,C), activations of the block kept in a
template <class T>
void GPT<T>::block_forward(int l, const T* x, BlockActs& a) {
  if (d_.llama) return llama_block_forward(l, x, a);  // src/model/llama_block.cpp
  const int B = B_, Tn = d_.T, C = d_.C, BT = B * Tn, Cl = d_.Cl, Fl = d_.Fl, n = int(sp_.local_rows());
  BlockTensors<T> p = block_params(l);
  // attention half: column-parallel qkv, local heads, row-parallel proj + one all-reduce (sequence parallel: the
  // norm on this rank's n rows, all-gathered before qkv, the projection reduce-scattered back to n rows)
  layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, p.ln1w, p.ln1b, n, C);
  linear_forward(a.qkv.data(), gather_rows(sp_full_.data(), a.ln1.data()), p.qkvw, p.qkvb, BT, C, 3 * Cl);
  attention_core_forward(a);
  linear_forward(tmp_.data(), a.atty.data(), p.projw, static_cast<const T*>(nullptr), BT, Cl, C);
  residual_bias_forward(a.res2.data(), x, reduce_rows(tmp_.data(), sp_full_.data()), p.projb, n, C);
  // MLP half: column-parallel fc, GELU, row-parallel proj + one all-reduce
  layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), p.ln2w, p.ln2b, n, C);
  const T* ln2 = gather_rows(sp_full_.data(), a.ln2.data());
  linear_gelu_forward(a.fch.data(), a.fchg.data(), ln2, p.fcw, p.fcb, BT, C, Fl);  // fch: for the backward
  linear_forward(tmp_.data(), a.fchg.data(), p.fcprojw, static_cast<const T*>(nullptr), BT, Fl, C);
  residual_bias_forward(a.res3.data(), a.res2.data(), reduce_rows(tmp_.data(), sp_full_.data()), p.fcprojb, n, C);
}

template <class T>
void GPT<T>::attention_core_forward(BlockActs& a) {
  if (fused_)
    attention_fused_forward(a.atty.data(), a.lse.data(), fa_scratch_.data(), a.qkv.data(), B_, d_.T, d_.NHl, d_.hd);
  else
    attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), B_, d_.T, d_.NHl, d_.hd);
}

template <class T>
void GPT<T>::attention_core_backward(BlockActs& a) {
  const int B = B_, Tn = d_.T;
  if (fused_) {  // the probabilities are recomputed tile by tile from qkv and lse: nothing for Selective to redo
    attention_fused_backward(dqkv_.data(), fa_scratch_.data(), datty_.data(), a.qkv.data(), a.atty.data(),
                             a.lse.data(), B, Tn, d_.NHl, d_.hd);
    return;
  }
  // Selective: the probabilities again from the kept qkv (the shared att buffer holds another block's); the
  // attention output they also give lands in tmp_, unused in backward (the kept atty is the same bits).
  if (recompute_ == Recompute::Selective) attention_forward(tmp_.data(), a.att.data(), a.qkv.data(), B, Tn, d_.NHl, d_.hd);
  attention_backward(dqkv_.data(), att_scratch_.data(), datty_.data(), a.qkv.data(), a.att.data(), B, Tn, d_.NHl, d_.hd);
}

// in: dres_ = dL/d(block output) (B,T,C)   out: dres_ = dL/dx; parameter grads accumulate
template <class T>
void GPT<T>::block_backward(int l, const T* x, BlockActs& a) {
  const int B = B_, Tn = d_.T, C = d_.C, BT = B * Tn, Cl = d_.Cl, Fl = d_.Fl;
  BlockTensors<T> p = block_params(l);
  BlockTensors<A> g = block_grads(l);
  T* dres = dres_.data();
  A* part = colsum_.data();  // the column sums' partials (device split; unused on the host)
  if (recompute_ == Recompute::Full) {
    // Rebuild the block's activations from its kept input x into the shared buffers. Its output goes to dln_,
    // free until the MLP's input gradient below: the kept res3 may still be the source of a pipeline send.
    BlockActs redo = a;
    redo.res3 = DeviceView<T>(dln_.data(), dln_.size());
    block_forward(l, x, redo);
  }
  if (d_.llama) return llama_block_backward(l, x, a);  // src/model/llama_block.cpp
  const int n = int(sp_.local_rows());
  const std::vector<A*> rep = sp_grads_begin({&g.ln1w, &g.ln1b, &g.projb, &g.ln2w, &g.ln2b, &g.fcprojb});
  // MLP half (the residual path carries dres through unchanged; layernorm_backward adds the branch). Sequence
  // parallel: dres (n rows) all-gathered into tmp_ for the row-parallel GEMM, the normed input again into sp_full_
  // for fc's weight gradient, fc's input gradient reduce-scattered to n rows.
  bias_backward(g.fcprojb, part, dres, n, C);
  const T* dfull = gather_rows(tmp_.data(), dres);
  linear_backward(dfchg_.data(), g.fcprojw, static_cast<A*>(nullptr), part, dfull, a.fchg.data(), p.fcprojw, BT, Fl, C);
  gelu_bias_backward(dfch_.data(), a.fch.data(), p.fcb, dfchg_.data(), BT, Fl);
  const T* ln2 = gather_rows(sp_full_.data(), a.ln2.data());
  linear_backward(dln_.data(), g.fcw, g.fcb, part, dfch_.data(), ln2, p.fcw, BT, C, Fl);
  layernorm_backward(dres, g.ln2w, g.ln2b, part, reduce_rows(dln_.data(), sp_full_.data()), a.res2.data(), p.ln2w,
                     a.ln2_mean.data(), a.ln2_rstd.data(), n, C);
  // attention half
  bias_backward(g.projb, part, dres, n, C);
  dfull = gather_rows(tmp_.data(), dres);
  linear_backward(datty_.data(), g.projw, static_cast<A*>(nullptr), part, dfull, a.atty.data(), p.projw, BT, Cl, C);
  attention_core_backward(a);
  const T* ln1 = gather_rows(sp_full_.data(), a.ln1.data());
  linear_backward(dln_.data(), g.qkvw, g.qkvb, part, dqkv_.data(), ln1, p.qkvw, BT, C, 3 * Cl);
  layernorm_backward(dres, g.ln1w, g.ln1b, part, reduce_rows(dln_.data(), sp_full_.data()), x, p.ln1w,
                     a.ln1_mean.data(), a.ln1_rstd.data(), n, C);
  sp_grads_end(rep);
}

template <class T>
void GPT<T>::forward(int slot, bool with_grad, double loss_scale) {
  Acts& a = acts_[slot];
  const int BT = B_ * d_.T, C = d_.C;
  if (stage_.first() && sp_.on()) {
    embedding_forward_sp(a);
  } else if (stage_.first()) {
    time_unit(0, true);
    if (vocab_chunked()) {
      embedding_forward_chunked(a, a.x0.data());
      need_units(0);  // wpe (wte is in chunk units of its own)
    } else {
      need_units(0);
      embedding_forward(a.x0.data(), a.inputs.data(), store_.param("wte"), static_cast<const T*>(nullptr), BT, d_.T,
                        C, d_.v0, d_.Vl);
    }
    tp_allreduce_sum(a.x0.data(), size_t(BT) * C);  // each TP rank looked up only its vocab shard
    if (!d_.llama) add_positions(a.x0.data(), store_.param("wpe"), BT, d_.T, C);  // Llama: RoPE in the blocks
    time_unit(0, false);
  }
  const T* x = a.x0.data();
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    const int l = stage_.block_begin + static_cast<int>(i);
    time_unit(l + 1, true);
    need_units(l + 1);
    block_forward(l, x, a.blocks[i]);
    time_unit(l + 1, false);
    x = a.blocks[i].res3.data();
  }
  if (stage_.last()) {
    time_unit(d_.L + 1, true);
    if (vocab_chunked()) need_units(d_.L + 1);  // the chunks of wte are requested one by one
    else if (d_.llama) need_units(d_.L + 1);  // lm_head.w is the head's own
    else need_units(d_.L + 1, store_.spec("wte").unit);
    head_forward(a, with_grad, A(loss_scale));
    time_unit(d_.L + 1, false);
  }
}

// One device-to-host copy of the sum accumulated since the last call, then the accumulator restarts at 0.
template <class T>
double GPT<T>::take_loss_sum() {
  if (!stage_.last()) return 0.0;
  double s = 0;
  Kokkos::deep_copy(Kokkos::View<double, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&s),
                    Kokkos::subview(loss_acc_, 0));
  Kokkos::deep_copy(loss_acc_, 0.0);
  return s;
}

template <class T>
void GPT<T>::backward(int slot, const std::function<void(int)>& on_unit) {
  Acts& a = acts_[slot];
  const int BT = B_ * d_.T, C = d_.C;
  if (stage_.last()) {
    time_unit(d_.L + 1, true);
    head_backward(a);
    time_unit(d_.L + 1, false);
    if (on_unit) on_unit(d_.L + 1);
    grads_done(d_.L + 1);
  }
  for (int i = static_cast<int>(a.blocks.size()) - 1; i >= 0; --i) {
    const T* x = i == 0 ? a.x0.data() : a.blocks[i - 1].res3.data();
    const int l = stage_.block_begin + i;
    time_unit(l + 1, true);
    need_units(l + 1);
    write_grads(l + 1);
    block_backward(l, x, a.blocks[i]);
    time_unit(l + 1, false);
    if (on_unit) on_unit(l + 1);
    grads_done(l + 1);
  }
  // sequence parallel: every rank's rows of the gradient, for this rank's vocabulary shard (and all of wpe)
  const T* dres = stage_.first() ? gather_rows(tmp_.data(), dres_.data()) : nullptr;
  if (stage_.first() && vocab_chunked()) {
    embedding_backward_chunked(a, dres, on_unit);
  } else if (stage_.first()) {
    time_unit(0, true);
    write_grads(0);
    A* dwpe = d_.llama ? nullptr : store_.grad("wpe");  // Llama: no learned positions
    embedding_backward(store_.grad("wte"), dwpe, dres, a.inputs.data(), BT, d_.T, C, d_.v0, d_.Vl, token_groups(a));
    time_unit(0, false);
    if (on_unit) on_unit(0);
    grads_done(0);
  }
}

// Nothing is readable (a source) or writable (a sink) until asked for: a computation that reads or writes a unit
// without asking throws instead of using another unit's buffer.
template <class T>
void GPT<T>::set_unit_io(const UnitIO& io) {
  if (d_.llama && io.wte_chunk_rows > 0)
    throw Error("wte in row chunks is the tied GPT-2 embedding's; a Llama model's wte and lm_head are separate");
  if (io.wte_chunk_rows > 0 && (!stage_.first() || !stage_.last()))
    throw Error("wte in row chunks needs a one-stage model");
  if (!std::is_same_v<A, float> && io.grads)
    throw Error("ZeRO gradient staging holds fp32 gradients, not those of a float64 model");
  io_ = io;
  units_.clear();
  chunk_units_.clear();
  readable_.clear();
  if (!io.params && !io.grads) return;
  units_ = unit_spans(store_.layout(), io.wte_chunk_rows);
  for (int c = 0; units_.count(row_chunk_unit(c)); ++c) chunk_units_.push_back(&units_.at(row_chunk_unit(c)));
  for (size_t k = 0; k < store_.tensors().size(); ++k) {
    if (io.params) store_.redirect(k, nullptr);
    if constexpr (std::is_same_v<A, float>)
      if (io.grads) store_.redirect_grad(k, nullptr);
  }
  if constexpr (!std::is_same_v<T, A>)
    if (vocab_chunked() && dlnf_acc_.size() == 0) dlnf_acc_ = DeviceView<A>("dlnf_acc", size_t(B_) * d_.T * d_.C);
}

// The source's buffer is const; the store's table holds T* for the bound buffer, which the optimizer writes. The
// model itself never writes parameters.
template <class T>
void GPT<T>::need_units(int a, int b) {
  if (!io_.params) return;
  if (b == a) b = -1;
  io_.params->use(a, b);
  for (int u : readable_)
    for (size_t k : units_.at(u).tensors) store_.redirect(k, nullptr);
  readable_.clear();
  for (int u : {a, b}) {
    if (u == -1) continue;
    const UnitSpan& s = units_.at(u);
    T* at = const_cast<T*>(static_cast<const T*>(io_.params->params(u)));
    for (size_t i = 0; i < s.tensors.size(); ++i) store_.redirect(s.tensors[i], at + s.packed[i]);
    readable_.push_back(u);
  }
}

template <class T>
void GPT<T>::write_grads(int u) {
  if constexpr (std::is_same_v<A, float>) {
    if (!io_.grads) return;
    const UnitSpan& s = units_.at(u);
    float* at = io_.grads->grads(u);
    for (size_t i = 0; i < s.tensors.size(); ++i) store_.redirect_grad(s.tensors[i], at + s.packed[i]);
  }
}

template <class T>
void GPT<T>::grads_done(int u) {
  if constexpr (std::is_same_v<A, float>)
    if (io_.grads)
      for (size_t k : units_.at(u).tensors) store_.redirect_grad(k, nullptr);
}

// What each slot keeps: its own buffers (a view shared under recompute is counted once, in work_bytes).
template <class T>
size_t GPT<T>::activation_bytes_per_slot() const {
  const size_t BT = size_t(B_) * d_.T, C = d_.C;
  const size_t blocks = stage_.block_end - stage_.block_begin;
  size_t per_block = 0;
  if (blocks > 0) {
    const BlockActs& b = acts_.front().blocks.front();
    per_block = recompute_ == Recompute::Full ? b.res3.size() * sizeof(T)
                                              : block_acts_bytes(b) - shared_.att.size() * sizeof(T);
  }
  const size_t rows = size_t(sp_.local_rows());  // x0, dlnf and ln_f's statistics: this rank's rows
  size_t n = rows * C, stats = 0;
  if (stage_.last()) {
    n += rows * C;
    stats += (d_.llama ? 1 : 2) * rows;  // ln_f's mean (GPT-2) and rstd
  }
  return n * sizeof(T) + per_block * blocks + stats * sizeof(A) + BT * 2 * sizeof(int32_t);
}

template <class T>
size_t GPT<T>::work_bytes() const {
  size_t n = tmp_.size() + dres_.size() + dln_.size() + dqkv_.size() + datty_.size() + dfch_.size() + dfchg_.size() +
             att_scratch_.size() + lnf_.size() + logits_.size() + sp_full_.size();
  const size_t na = ce_.size() + colsum_.size() + fa_scratch_.size() + rope_cos_.size() + rope_sin_.size() +
                    sp_grads_.size() + kv_grads_.size();
  return n * sizeof(T) + na * sizeof(A) + loss_acc_.size() * sizeof(double) + tp_sum_.size() * sizeof(float) +
         sp_.staging_bytes() + block_acts_bytes(shared_);
}

template class GPT<float>;
template class GPT<double>;
template class GPT<bf16_t>;
template class GPT<fp16_t>;
// used by the Llama block (src/model/llama_block.cpp) and the head (gpt_vocab.cpp: the fp32 statistics) too
template void GPT<float>::tp_allreduce_sum<float>(float*, size_t);
template void GPT<double>::tp_allreduce_sum<double>(double*, size_t);
template void GPT<bf16_t>::tp_allreduce_sum<bf16_t>(bf16_t*, size_t);
template void GPT<fp16_t>::tp_allreduce_sum<fp16_t>(fp16_t*, size_t);
template void GPT<bf16_t>::tp_allreduce_sum<float>(float*, size_t);
template void GPT<fp16_t>::tp_allreduce_sum<float>(float*, size_t);

}  // namespace gt
