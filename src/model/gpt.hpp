#pragma once
// GPT-2 style decoder, one pipeline stage of it, tensor-parallel (Megatron split) inside each block.
//
//   tokens -> [first stage] embedding (vocab-parallel wte + wpe)
//          -> blocks [block_begin, block_end): x += proj(attn(ln1(x))); x += proj(gelu(fc(ln2(x))))
//          -> [last stage] ln_f -> logits = ln_f(x) @ wte^T (tied, vocab-parallel) -> cross-entropy
//
// With tp = pp = 1 this is the whole model on one rank: there is one code path for every layout.
// Activations are kept per *slot* (one per micro-batch in flight in the pipeline schedule); the gradient
// work buffers are shared. The head is fused into forward: loss, dlogits and d(ln_f output) are computed as
// soon as the logits exist, so the large logits buffer is never kept per micro-batch.
//
// T is the storage type of the working weights and of every activation (float, double for gradient checks,
// bf16_t or fp16_t: train.precision). The kernels compute in A = acc_t<T> (fp32 for the 16-bit types):
// LayerNorm statistics, the cross-entropy row statistics and the loss are kept in A, every GEMM takes T
// inputs and accumulates in fp32, parameter gradients go to the A (fp32) gradient buffer, and the
// tensor-parallel all-reduces of 16-bit activations sum in fp32.
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/kokkos_compat.hpp"
#include "kernels/token_groups.hpp"
#include "src/comm/comm.hpp"
#include "src/core/config.hpp"
#include "src/model/param_store.hpp"
#include "src/model/seq_split.hpp"
#include "src/model/stage_model.hpp"
#include "src/model/units.hpp"

namespace gt {

struct TensorParallel {
  int rank = 0, size = 1;
  Comm* comm = nullptr;  // null when size == 1
  // parallel.sequence_parallel with size > 1: activations outside the TP regions split along the token rows
  // (src/model/seq_split.hpp); ignored when size == 1
  bool sequence = false;
};

// Sizes that follow from the config and the TP degree; checked once here.
struct ModelDims {
  int L, C, NH, hd, T, V;   // global
  int NHl, Cl, Fl, Vl, v0;  // per TP rank: heads, attention width, MLP width, vocab shard and its start
  bool llama;               // model.arch = llama (docs/model.md)
  int NKV = 0, NKVl = 0;    // key/value heads, global and per TP rank (GPT-2: NH, NHl)
  // tp > NKV (llama): each key/value head replicated on kv_rep = tp / NKV consecutive TP ranks (NKVl = 1); kv0:
  // this rank's (first) key/value head. kv_rep = 1: the heads split over the ranks.
  int kv_rep = 1, kv0 = 0;
  int F = 0;                // MLP width (GPT-2: 4C; Llama: model.ffn_hidden or its default)
  int Qw = 0;               // width of a local qkv row: (NHl + 2 NKVl) hd
  ModelDims(const ModelConfig& m, int tp_rank, int tp_size);

 private:
  void check_llama(const ModelConfig& m, int tp_size) const;
};

// The tensors of one stage on one TP rank, in storage (= forward) order, with global shapes and this rank's
// slice. With the full stage range and tp_size 1 it lists the whole model in global shapes. The head's wte on
// a last stage that is not also the first is declared tied to stage 0's.
std::vector<TensorSpec> model_tensor_specs(const ModelConfig& cfg, const StageLayout& stage, int tp_rank, int tp_size);
// model.arch = llama (src/model/llama_block.cpp): wte (first stage), per block attn_norm.w, attn.qkv.w
// (NKV, G+2, hd, C: per key/value head its G query heads, key and value), attn.proj.w (C, NH hd), mlp_norm.w,
// mlp.gate_up.w (2, F, C), mlp.down.w (C, F); norm_f.w and the untied lm_head.w (V, C) on the last stage.
std::vector<TensorSpec> llama_tensor_specs(const ModelConfig& cfg, const StageLayout& stage, int tp_rank, int tp_size);

template <class T>
class GPT final : public StageModel {
 public:
  using A = acc_t<T>;
  // With `layout` (the TrainState's, from model_tensor_specs of the same stage and TP rank) the model holds no
  // parameter storage: the caller binds it (store().bind). Without, it allocates and initialises its own.
  // recompute (train.recompute): which activations backward recomputes instead of keeping per slot and block:
  //   Selective  the attention probabilities (B, NHl, T, T): one buffer shared by every block and slot, refilled
  //              from the kept qkv just before attention_backward;
  //   Full       everything but the block output res3 (the next block's input): one set of block buffers shared
  //              by every block and slot; backward reruns block_forward from the kept input first.
  // The same kernels on the same inputs in the same order: the gradients equal those of None bitwise.
  GPT(const ModelConfig& cfg, uint64_t seed, int micro_batch_size, StageLayout stage, TensorParallel tp, int slots,
      const TensorLayout* layout = nullptr, Recompute recompute = Recompute::None);

  ParamStore<T>& store() { return store_; }
  const ModelDims& dims() const { return d_; }
  const StageLayout& stage() const override { return stage_; }
  int micro_batch_size() const { return B_; }
  int slots() const override { return static_cast<int>(acts_.size()); }
  void bind(void* params, void* grads) override { store_.bind(static_cast<T*>(params), static_cast<A*>(grads)); }

  // Host tokens (B*T each) of the micro-batch held in `slot`: inputs (first stage), targets (last stage).
  void set_tokens(int slot, const int32_t* inputs, const int32_t* targets) override;
  // Rows of seq_len + 1 tokens: inputs [0, T), targets [1, T + 1).
  void set_samples(int slot, const int32_t* rows) override;
  // (B,T,C) residual entering this stage (non-first stages receive into it) and leaving it.
  T* stage_input(int slot) { return acts_[slot].x0.data(); }
  T* stage_output(int slot);
  // (B,T,C) gradient w.r.t. this stage's output (non-last stages receive into it before backward), and
  // after backward the gradient w.r.t. its input (non-first stages send it back).
  T* grad_buffer() { return dres_.data(); }
  // Sequence parallel: this rank's B*T/tp rows (src/model/seq_split.hpp); else B*T rows.
  size_t activation_elems() const override { return size_t(sp_.local_rows()) * d_.C; }
  DType activation_dtype() const override {
    if constexpr (std::is_same_v<T, bf16_t>) return DType::BF16;
    else if constexpr (std::is_same_v<T, fp16_t>) return DType::F16;
    else return dtype_of<T>();
  }
  void* stage_input_data(int slot) override { return stage_input(slot); }
  void* stage_output_data(int slot) override { return stage_output(slot); }
  void* grad_buffer_data() override { return grad_buffer(); }

  // Forward of the micro-batch in `slot`. On the last stage adds the summed token losses to a device
  // accumulator (take_loss_sum) and, when with_grad, computes the head's gradients scaled by loss_scale
  // (1 / tokens of the global batch, times the loss scale; rounded to A).
  void forward(int slot, bool with_grad, double loss_scale) override;
  // The token losses summed since the last call (0 off the last stage): one copy to the host per call.
  double take_loss_sum() override;
  // Backward of the micro-batch in `slot`; grads accumulate into the store. on_unit(u) is called once the
  // gradients of unit u are complete for this micro-batch (units: L+1 head, L..1 blocks, 0 embedding).
  void backward(int slot, const std::function<void(int)>& on_unit = {}) override;

  // Optional probe around each unit's work in forward and backward: timer(u, true) before, timer(u, false)
  // after (units as on_unit's). The trainer times blocks with it to rebalance the pipeline (block_timer.hpp).
  void set_unit_timer(std::function<void(int, bool)> timer) override { unit_timer_ = std::move(timer); }
  // ZeRO (unit_io.hpp): a ParamSource is asked for a unit's parameters before a computation reads them (forward:
  // every unit; backward: the head and the blocks), a GradSink for a unit's gradient buffer before a computation
  // writes it. wte_chunk_rows > 0 (the tied wte of a one-stage GPT-2; staged gradients): the embedding's lookup, the
  // head's logits and dlnf and wte's gradient go row chunk by row chunk (units.hpp), so no buffer holds all of wte.
  void set_unit_io(const UnitIO& io) override;

  // Bytes of activations kept per slot and of the shared work buffers (for the memory report).
  size_t activation_bytes_per_slot() const override;
  size_t work_bytes() const override;

 private:
  struct BlockActs {
    DeviceView<T> ln1, qkv, att, atty, res2, ln2, fch, fchg, res3;  // att: materialized attention only
    DeviceView<A> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
    DeviceView<A> lse;  // fused attention only: (B, NHl, T) log-sum-exp of each query's scores
  };
  struct Acts {
    DeviceView<T> x0;                        // stage input residual
    std::vector<BlockActs> blocks;
    DeviceView<A> lnf_mean, lnf_rstd;        // last stage
    DeviceView<T> dlnf;
    Kokkos::View<int32_t*, mem_space> inputs, targets;
    // device split, first stage: the inputs grouped by token id (token_groups.hpp), token_group_count groups
    Kokkos::View<int32_t*, mem_space> token_groups;
    int token_group_count = -1;
  };
  template <class P>
  struct BlockTensors {
    P *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
  };
  BlockTensors<T> block_params(int l);
  BlockTensors<A> block_grads(int l);
  template <class U>
  void tp_allreduce_sum(U* buf, size_t n);
  // The collectives on (rows, C) activations at the edges of the TP regions (src/model/seq_split.hpp). gather_rows:
  // every rank's local rows into full (sequence parallel; returns full), else local itself. reduce_rows: the sum
  // over tp of the partial full rows, this rank's block into local (sequence parallel; returns local), else
  // all-reduced in place (returns full).
  const T* gather_rows(T* full, const T* local) const { return sp_.gather(full, local, d_.C); }
  T* reduce_rows(T* full, T* local);
  // Sequence parallel: the gradients of replicated parameters computed on this rank's rows are partial. begin
  // points each non-null gradient pointer at a zeroed C-wide slice of sp_grads_ and returns the real ones; end sums
  // the slices over tp and adds them there. Both do nothing without sequence parallelism.
  std::vector<A*> sp_grads_begin(std::initializer_list<A**> grads);
  void sp_grads_end(const std::vector<A*>& real);
  // Replicated key/value heads (d_.kv_rep > 1): each replica's key/value gradient covers its own query heads only.
  // begin sets the accumulated key/value rows of the qkv weight's gradient gq aside and zeroes them; end sums the
  // micro-batch's partials over the kv_rep ranks sharing the head and adds the set-aside rows back. Both do nothing
  // when the heads are split.
  void kv_grads_begin(A* gq);
  void kv_grads_end(A* gq);
  void block_forward(int l, const T* x, BlockActs& a);
  // model.arch = llama: RMSNorm, qkv (grouped layout) + RoPE, fused GQA attention, SwiGLU (src/model/llama_block.cpp)
  void llama_block_forward(int l, const T* x, BlockActs& a);
  void llama_block_backward(int l, const T* x, BlockActs& a);
  // The attention core on a.qkv, fused or materialized (model.attention): a.atty (and a.att or a.lse) set;
  // backward: dqkv_ from datty_.
  void attention_core_forward(BlockActs& a);
  void attention_core_backward(BlockActs& a);
  void block_backward(int l, const T* x, BlockActs& a);
  BlockActs make_block_acts(bool with_res3) const;
  size_t block_acts_bytes(const BlockActs& b) const;
  void head_forward(Acts& a, bool with_grad, A loss_scale);
  TokenGroups token_groups(const Acts& a) const;
  void time_unit(int u, bool start) const {
    if (unit_timer_) unit_timer_(u, start);
  }
  // Units a and b (b = -1: one) readable through the store: asked of the ParamSource, if any (only they stay
  // readable, so a stray read of another unit throws instead of reading a reused buffer).
  void need_units(int a, int b = -1);
  // Unit u's gradients written through the store from here on: into the GradSink's buffer, if any.
  void write_grads(int u);
  // After on_unit(u): unit u's gradients are not written again this step (a stray write throws).
  void grads_done(int u);
  // wte in row chunks (set_unit_io): chunk c (units.hpp) is unit row_chunk_unit(c).
  bool vocab_chunked() const { return !chunk_units_.empty(); }
  int vocab_chunks() const { return static_cast<int>(chunk_units_.size()); }
  // Chunk c's first local row and its number of rows.
  std::pair<int, int> chunk_span(int c) const {
    const UnitSpan& u = *chunk_units_[size_t(c)];
    return {int(u.row_begin), int(u.row_end - u.row_begin)};
  }
  // Chunk c's rows of wte (c_rows x C), readable until the next request for parameters; its fp32 gradient rows.
  const T* wte_chunk(int c);
  A* wte_chunk_grad(int c);
  void embedding_forward_chunked(Acts& a, T* out);
  void head_logits_chunked();
  void head_dlnf_chunked(T* out);
  void embedding_backward_chunked(Acts& a, const T* dres, const std::function<void(int)>& on_unit);
  void embedding_forward_sp(Acts& a);
  void head_backward(Acts& a);

  ModelDims d_;
  int B_;
  StageLayout stage_;
  TensorParallel tp_;
  ParamStore<T> store_;
  std::vector<Acts> acts_;
  Recompute recompute_;
  bool fused_;  // model.attention = fused
  double norm_eps_;  // model.norm_eps (Llama's RMSNorm)
  BlockActs shared_;  // the buffers every block's BlockActs aliases under recompute (empty views otherwise)
  // shared buffers
  DeviceView<T> lnf_, logits_, tmp_, dres_, dln_, dqkv_, datty_, dfch_, dfchg_, att_scratch_;
  DeviceView<A> ce_;
  DeviceView<A> fa_scratch_;  // the fused attention's scratch (linear in T); empty when materialized
  DeviceView<A> rope_cos_, rope_sin_;  // Llama: RoPE's (T, hd/2) tables
  DeviceView<A> colsum_;  // the device split's column-sum partials (parameter gradients of LN and biases); empty on the host
  DeviceView<double> loss_acc_;  // last stage: summed token losses (double) since the last take_loss_sum
  DeviceView<float> tp_sum_;  // 16-bit T with tp > 1: the fp32 staging of the all-reduced activations
  SeqSplit<T> sp_;            // sequence parallelism's split of the token rows (off: one split, every row)
  DeviceView<T> sp_full_;     // sequence parallel: gathered normed inputs and reduced rows (B*T, C)
  DeviceView<A> sp_grads_;    // sequence parallel: partial gradients of the replicated parameters (6 or 2 x C)
  DeviceView<A> kv_grads_;    // kv_rep > 1: one key/value gradient slot per key/value head, and the set-aside rows
  std::function<void(int, bool)> unit_timer_;
  UnitIO io_;                                // set_unit_io (null source and sink: the bound buffers)
  std::map<int, UnitSpan> units_;            // the store's units under io_ (empty without a source or sink)
  std::vector<const UnitSpan*> chunk_units_;  // wte's row chunks, chunk c at c
  std::vector<int> readable_;                // the units of the last need_units (with a source)
  DeviceView<A> dlnf_acc_;  // chunked wte with 16-bit T: dlnf summed over the chunks in fp32, rounded once
  std::vector<int32_t> sample_inputs_, sample_targets_;  // set_samples' split of the rows (host)
  std::vector<int32_t> token_groups_host_;  // set_tokens' host staging of the grouped tokens (device split)
};

}  // namespace gt
