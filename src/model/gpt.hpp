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
#include <functional>
#include <string>
#include <vector>

#include "kernels/kokkos_compat.hpp"
#include "src/comm/comm.hpp"
#include "src/core/config.hpp"
#include "src/model/param_store.hpp"

namespace gt {

struct StageLayout {
  int stage = 0, stages = 1;
  int block_begin = 0, block_end = 0;  // blocks [begin, end) live on this stage
  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }
};

struct TensorParallel {
  int rank = 0, size = 1;
  Comm* comm = nullptr;  // null when size == 1
};

// Sizes that follow from the config and the TP degree; checked once here.
struct ModelDims {
  int L, C, NH, hd, T, V;   // global
  int NHl, Cl, Fl, Vl, v0;  // per TP rank: heads, attention width, MLP width, vocab shard and its start
  ModelDims(const ModelConfig& m, int tp_rank, int tp_size);
};

// The tensors of one stage on one TP rank, in storage (= forward) order, with global shapes and this rank's
// slice. With the full stage range and tp_size 1 it lists the whole model in global shapes. The head's wte on
// a last stage that is not also the first is declared tied to stage 0's.
std::vector<TensorSpec> model_tensor_specs(const ModelConfig& cfg, const StageLayout& stage, int tp_rank, int tp_size);

template <class T>
class GPT {
 public:
  // With `layout` (the TrainState's, from model_tensor_specs of the same stage and TP rank) the model holds no
  // parameter storage: the caller binds it (store().bind). Without, it allocates and initialises its own.
  GPT(const ModelConfig& cfg, uint64_t seed, int micro_batch_size, StageLayout stage, TensorParallel tp, int slots,
      const TensorLayout* layout = nullptr);

  ParamStore<T>& store() { return store_; }
  const ModelDims& dims() const { return d_; }
  const StageLayout& stage() const { return stage_; }
  int micro_batch_size() const { return B_; }
  int slots() const { return static_cast<int>(acts_.size()); }

  // Host tokens (B*T each) of the micro-batch held in `slot`: inputs (first stage), targets (last stage).
  void set_tokens(int slot, const int32_t* inputs, const int32_t* targets);
  // (B,T,C) residual entering this stage (non-first stages receive into it) and leaving it.
  T* stage_input(int slot) { return acts_[slot].x0.data(); }
  T* stage_output(int slot);
  // (B,T,C) gradient w.r.t. this stage's output (non-last stages receive into it before backward), and
  // after backward the gradient w.r.t. its input (non-first stages send it back).
  T* grad_buffer() { return dres_.data(); }
  size_t activation_elems() const { return size_t(B_) * d_.T * d_.C; }

  // Forward of the micro-batch in `slot`. On the last stage adds the summed token losses to *loss_sum and,
  // when with_grad, computes the head's gradients scaled by loss_scale (1 / tokens of the global batch).
  void forward(int slot, bool with_grad, T loss_scale, double* loss_sum);
  // Backward of the micro-batch in `slot`; grads accumulate into the store. on_unit(u) is called once the
  // gradients of unit u are complete for this micro-batch (units: L+1 head, L..1 blocks, 0 embedding).
  void backward(int slot, const std::function<void(int)>& on_unit = {});

  // Optional probe around each unit's work in forward and backward: timer(u, true) before, timer(u, false)
  // after (units as on_unit's). The trainer times blocks with it to rebalance the pipeline (block_timer.hpp).
  void set_unit_timer(std::function<void(int, bool)> timer) { unit_timer_ = std::move(timer); }

  // Bytes of activations kept per slot and of the shared work buffers (for the memory report).
  size_t activation_bytes_per_slot() const;
  size_t work_bytes() const;

 private:
  struct BlockActs {
    DeviceView<T> ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch, fchg, res3;
  };
  struct Acts {
    DeviceView<T> x0;                        // stage input residual
    std::vector<BlockActs> blocks;
    DeviceView<T> lnf_mean, lnf_rstd, dlnf;  // last stage
    Kokkos::View<int32_t*, mem_space> inputs, targets;
  };
  struct BlockParams {
    T *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
  };
  BlockParams block_params(int l, bool grads);
  void tp_allreduce_sum(T* buf, size_t n);
  void block_forward(int l, const T* x, BlockActs& a);
  void block_backward(int l, const T* x, BlockActs& a);
  void head_forward(Acts& a, bool with_grad, T loss_scale, double* loss_sum);
  void time_unit(int u, bool start) const {
    if (unit_timer_) unit_timer_(u, start);
  }

  ModelDims d_;
  int B_;
  StageLayout stage_;
  TensorParallel tp_;
  ParamStore<T> store_;
  std::vector<Acts> acts_;
  // shared buffers
  DeviceView<T> lnf_, logits_, ce_, loss_, tmp_, dres_, dln_, dqkv_, datty_, dfch_, dfchg_, att_scratch_;
  Kokkos::View<T*, host_space> loss_host_;
  std::function<void(int, bool)> unit_timer_;
};

}  // namespace gt
