#pragma once
// The one count of a GPT-2 model's FLOPs, used by the run report (MFU of a run), the planner (MFU of a
// candidate layout) and bench_step, so that the three agree. Header-only over sizes, like
// kernels/work_sizes.hpp: the planner uses it without the model or Kokkos.
//
// Per token and forward, counting 2 FLOPs per multiply-add of the matrix products only (element-wise work,
// layer norms, softmax and the optimizer are left out, as PaLM and Megatron leave them out of MFU):
//   each of the L blocks: QKV h x 3h, attention projection h x h, MLP h x 4h and 4h x h: 2 x 12 h^2
//                         attention scores Q K^T and values P V, full T x T (as Megatron and nanoGPT count it,
//                         although the causal mask makes half of it zero): 2 x 2 T h
//   the tied LM head h x V: 2 V h       (the embedding lookups are gathers: no FLOPs)
// Backward is twice forward (the input gradient and the weight gradient), so the total is 3x:
//   72 L h^2 + 12 L T h + 6 V h   =   6 N_matmul + 12 L T h, N_matmul = 12 L h^2 + V h
// which is Narayanan et al. 2021, eq. 3 without recompute, 72 B s L h^2 (1 + s/6h + V/12Lh), divided by the
// B s tokens of a step. Recomputation is not counted: MFU counts model FLOPs, not hardware FLOPs.
// (Until 2026-12-04 the run report and bench_step counted 6 N over all parameters but positions, biases and
// layer-norm gains included, 0.1% above this on `small`; the planner counted this formula.)
#include "src/core/config.hpp"

namespace gt {

// Weights that take part in matrix products: the L blocks' four linear layers and the tied head.
inline double gpt_matmul_params(double L, double h, double V) { return 12.0 * L * h * h + V * h; }

// Model FLOPs per token, forward + backward, of any decoder whose matrix products hold n_matmul weights (the
// planner's Llama shapes count theirs: GQA's narrower K and V, SwiGLU's three MLP matrices, an untied head):
// 6 N_matmul + 12 L T h, Megatron-Core's num_floating_point_operations per token.
inline double flops_per_token(double n_matmul, double L, double T, double h) {
  return 6.0 * n_matmul + 12.0 * L * T * h;
}

// GPT-2's: 6 N_matmul + 12 L T h with N_matmul = 12 L h^2 + V h.
inline double gpt_flops_per_token(double L, double h, double T, double V) {
  return flops_per_token(gpt_matmul_params(L, h, V), L, T, h);
}

inline double gpt_flops_per_token(const ModelConfig& m) {
  return gpt_flops_per_token(m.n_layer, m.d_model, m.seq_len, m.vocab_size);
}

}  // namespace gt
