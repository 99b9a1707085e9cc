// GPT's vocabulary end: the embedding (vocab-parallel wte lookup, positions) and the head (final norm, logits
// against the tied wte or Llama's lm_head, cross-entropy), whole or with wte in row chunks (units.hpp). The blocks,
// the step's order and the buffers are in gpt.cpp.
#include "kernels/kernels.hpp"
#include "kernels/rmsnorm.hpp"
#include "kernels/tp_epilogue.hpp"
#include "src/core/error.hpp"
#include "src/model/gpt.hpp"

namespace gt {

// in: last block output (B,T,C)   out: token losses summed into loss_acc_ (device); with_grad: a.dlnf, dwte acc
template <class T>
void GPT<T>::head_forward(Acts& a, bool with_grad, A loss_scale) {
  const int C = d_.C, BT = B_ * d_.T, Vl = d_.Vl, v0 = d_.v0, n = int(sp_.local_rows());
  const T* x = a.blocks.empty() ? a.x0.data() : a.blocks.back().res3.data();
  // the final norm on this rank's n rows, into their place in lnf_, then all-gathered there (sequence parallel)
  T* mine = lnf_.data() + sp_.first_row() * C;
  if (d_.llama)
    rmsnorm_forward(mine, a.lnf_rstd.data(), x, store_.param("norm_f.w"), n, C, A(norm_eps_));
  else
    layernorm_forward(mine, a.lnf_mean.data(), a.lnf_rstd.data(), x, store_.param("ln_f.w"), store_.param("ln_f.b"),
                      n, C);
  gather_rows(lnf_.data(), mine);
  const char* head = d_.llama ? "lm_head.w" : "wte";  // Llama's head is its own (untied) matrix
  const T* wte = vocab_chunked() ? nullptr : store_.param(head);
  if (vocab_chunked()) head_logits_chunked();
  else linear_forward(logits_.data(), lnf_.data(), wte, static_cast<const T*>(nullptr), BT, C, Vl);
  A* rowmax = ce_.data();
  A* sumexp = ce_.data() + BT;
  A* tlogit = ce_.data() + 2 * BT;
  ce_row_max(rowmax, logits_.data(), BT, Vl);
  if (tp_.size > 1) tp_.comm->allreduce(rowmax, BT, dtype_of<A>(), ReduceOp::Max);
  ce_row_sumexp(sumexp, tlogit, logits_.data(), rowmax, a.targets.data(), BT, Vl, v0);
  tp_allreduce_sum(sumexp, 2 * size_t(BT));  // sumexp and tlogit are adjacent
  ce_loss_accumulate(loss_acc_.data(), sumexp, rowmax, tlogit, BT);
  if (!with_grad) return;
  ce_backward_inplace(logits_.data(), rowmax, sumexp, a.targets.data(), BT, Vl, v0, loss_scale);
  T* dlnf = sp_.on() ? tmp_.data() : a.dlnf.data();  // sequence parallel: all rows, partial, reduce-scattered below
  if (vocab_chunked()) {  // wte's gradient waits for the embedding's backward (embedding_backward_chunked)
    head_dlnf_chunked(dlnf);
  } else {
    write_grads(store_.spec(head).unit);  // the tied wte's unit is the embedding's on a one-stage model
    linear_backward(dlnf, store_.grad(head), static_cast<A*>(nullptr), static_cast<A*>(nullptr), logits_.data(),
                    lnf_.data(), wte, BT, C, Vl);
  }
  reduce_rows(dlnf, a.dlnf.data());
}

// Sequence parallel: the vocab-parallel lookup of every row into tmp_ (zero where another rank's vocabulary holds the
// token), the positions added once (TP rank 0) and the sum over tp reduce-scattered to this rank's rows of x0. Each
// row's sum is its one non-zero lookup plus its position: the bits of the all-reduce path.
template <class T>
void GPT<T>::embedding_forward_sp(Acts& a) {
  const int BT = B_ * d_.T, C = d_.C;
  time_unit(0, true);
  if (vocab_chunked()) {
    embedding_forward_chunked(a, tmp_.data());
    need_units(0);
  } else {
    need_units(0);
    embedding_forward(tmp_.data(), a.inputs.data(), store_.param("wte"), static_cast<const T*>(nullptr), BT, d_.T, C,
                      d_.v0, d_.Vl);
  }
  if (!d_.llama && tp_.rank == 0) add_positions(tmp_.data(), store_.param("wpe"), BT, d_.T, C);
  reduce_rows(tmp_.data(), a.x0.data());
  time_unit(0, false);
}

// The final norm's backward on this rank's rows: dres_ = its input gradient (the stage's residual stream starts
// here), the norm's parameter gradients (summed over tp when sequence parallel).
template <class T>
void GPT<T>::head_backward(Acts& a) {
  const int C = d_.C, n = int(sp_.local_rows());
  const T* x = a.blocks.empty() ? a.x0.data() : a.blocks.back().res3.data();
  fill(dres_.data(), long(n) * C, T(0));
  need_units(d_.L + 1);
  write_grads(d_.L + 1);
  if (d_.llama) {
    A* gw = store_.grad("norm_f.w");
    const std::vector<A*> rep = sp_grads_begin({&gw});
    rmsnorm_backward(dres_.data(), gw, colsum_.data(), a.dlnf.data(), x, store_.param("norm_f.w"), a.lnf_rstd.data(),
                     n, C);
    sp_grads_end(rep);
  } else {
    A *gw = store_.grad("ln_f.w"), *gb = store_.grad("ln_f.b");
    const std::vector<A*> rep = sp_grads_begin({&gw, &gb});
    layernorm_backward(dres_.data(), gw, gb, colsum_.data(), a.dlnf.data(), x, store_.param("ln_f.w"),
                       a.lnf_mean.data(), a.lnf_rstd.data(), n, C);
    sp_grads_end(rep);
  }
}

// Without a source the chunk is rows of the bound wte; without a sink its gradient is rows of the bound gradient.
template <class T>
const T* GPT<T>::wte_chunk(int c) {
  if (!io_.params) return store_.param("wte") + chunk_span(c).first * size_t(d_.C);
  need_units(row_chunk_unit(c));
  return static_cast<const T*>(io_.params->params(row_chunk_unit(c)));
}

template <class T>
typename GPT<T>::A* GPT<T>::wte_chunk_grad(int c) {
  if constexpr (std::is_same_v<A, float>)
    if (io_.grads) return io_.grads->grads(row_chunk_unit(c));
  return store_.grad("wte") + chunk_span(c).first * size_t(d_.C);
}

// x0 (BT,C) = wte[token] row by row from the chunk holding it; rows of other TP ranks' vocabulary stay 0.
template <class T>
void GPT<T>::embedding_forward_chunked(Acts& a, T* out) {
  const int BT = B_ * d_.T, C = d_.C;
  fill(out, long(BT) * C, T(0));
  for (int c = vocab_chunks() - 1; c >= 0; --c) {  // unit ids ascending, as ZeRO-3 prefetches
    const auto [r0, n] = chunk_span(c);
    embedding_forward(out, a.inputs.data(), wte_chunk(c), static_cast<const T*>(nullptr), BT, d_.T, C, d_.v0 + r0, n,
                      true);
  }
}

// logits (BT,Vl) columns [r0,r1) = lnf (BT,C) x wte rows [r0,r1) ^T, chunk by chunk.
template <class T>
void GPT<T>::head_logits_chunked() {
  const int BT = B_ * d_.T, C = d_.C, Vl = d_.Vl;
  for (int c = vocab_chunks() - 1; c >= 0; --c) {
    const auto [r0, n] = chunk_span(c);
    gemm(Op::N, Op::T, BT, n, C, A(1), lnf_.data(), C, wte_chunk(c), C, A(0), logits_.data() + r0, Vl);
  }
}

// dlnf (BT,C) = dlogits (BT,Vl) x wte (Vl,C), summed over the chunks (in fp32 for a 16-bit T, rounded once).
template <class T>
void GPT<T>::head_dlnf_chunked(T* out) {
  const int BT = B_ * d_.T, C = d_.C, Vl = d_.Vl;
  for (int c = vocab_chunks() - 1; c >= 0; --c) {
    const auto [r0, n] = chunk_span(c);
    const A beta = c == vocab_chunks() - 1 ? A(0) : A(1);
    if constexpr (std::is_same_v<T, A>)
      gemm(Op::N, Op::N, BT, C, n, A(1), logits_.data() + r0, Vl, wte_chunk(c), C, beta, out, C);
    else
      gemm(Op::N, Op::N, BT, C, n, 1.0f, logits_.data() + r0, Vl, wte_chunk(c), C, float(beta), dlnf_acc_.data(), C);
  }
  if constexpr (!std::is_same_v<T, A>) convert(out, dlnf_acc_.data(), long(BT) * C);
}

// wpe's gradient (unit 0), then wte's chunk by chunk (units row_chunk_unit(0), (1), ...): the head's part,
// dlogits^T x lnf (kept since the head's forward: one micro-batch, one stage), plus the embedding's rows, in the
// chunk's fresh buffer.
template <class T>
void GPT<T>::embedding_backward_chunked(Acts& a, const T* dres, const std::function<void(int)>& on_unit) {
  const int BT = B_ * d_.T, C = d_.C, Vl = d_.Vl;
  time_unit(0, true);
  write_grads(0);
  embedding_backward(static_cast<A*>(nullptr), store_.grad("wpe"), dres, a.inputs.data(), BT, d_.T, C, d_.v0, d_.Vl,
                     token_groups(a));
  time_unit(0, false);
  if (on_unit) on_unit(0);
  grads_done(0);
  for (int c = 0; c < vocab_chunks(); ++c) {
    const auto [r0, n] = chunk_span(c);
    A* g = wte_chunk_grad(c);
    gemm(Op::T, Op::N, n, C, BT, A(1), logits_.data() + r0, Vl, lnf_.data(), C, A(1), g, C);
    embedding_backward(g, static_cast<A*>(nullptr), dres, a.inputs.data(), BT, d_.T, C, d_.v0 + r0, n,
                       token_groups(a));
    if (on_unit) on_unit(row_chunk_unit(c));
  }
}

#define GT_GPT_VOCAB(T)                                                                                           \
  template void GPT<T>::head_forward(GPT<T>::Acts&, bool, GPT<T>::A);                                          \
  template void GPT<T>::embedding_forward_sp(GPT<T>::Acts&);                                                   \
  template void GPT<T>::head_backward(GPT<T>::Acts&);                                                          \
  template const T* GPT<T>::wte_chunk(int);                                                                    \
  template GPT<T>::A* GPT<T>::wte_chunk_grad(int);                                                             \
  template void GPT<T>::embedding_forward_chunked(GPT<T>::Acts&, T*);                                          \
  template void GPT<T>::head_logits_chunked();                                                                 \
  template void GPT<T>::head_dlnf_chunked(T*);                                                                 \
  template void GPT<T>::embedding_backward_chunked(GPT<T>::Acts&, const T*, const std::function<void(int)>&);
GT_GPT_VOCAB(float)
GT_GPT_VOCAB(double)
GT_GPT_VOCAB(bf16_t)
GT_GPT_VOCAB(fp16_t)
#undef GT_GPT_VOCAB

}  // namespace gt
