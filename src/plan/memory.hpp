#pragma once
// Memory per device of a layout: model states (parameters, gradients, optimizer state by ZeRO stage and
// dtype), activations (gridtrain's own ledger or Korthikanti et al.'s per-layer formulas, with recompute and
// sequence parallel), work buffers and communication buffers. Formulas and sources: docs/planner.md.
#include <vector>

#include "src/plan/layout.hpp"

namespace gt::plan {

struct MemoryBreakdown {
  int stage = 0;  // the pipeline stage these figures belong to
  double params = 0, grads = 0, optimizer = 0;  // bytes
  double activations = 0;  // kept for backward, all micro-batches in flight
  double workspace = 0;    // shared work buffers (gradients of activations, logits)
  double comm_buffers = 0; // ZeRO-3 gathered layers, pipeline send/receive buffers
  double states() const { return params + grads + optimizer; }
  double total() const { return states() + activations + workspace + comm_buffers; }
};

// Bytes per parameter of weights, gradients and optimizer state (Adam) in a precision, before sharding:
// fp32 4 + 4 + 8; bf16 2 + 4 (fp32 gradient accumulation) + 12 (fp32 master, m, v); fp16 2 + 2 + 12.
struct StateBytes {
  double w, g, o;
};
StateBytes state_bytes(Precision p);

// Model states per device for `psi` parameters on this device, sharded over dp by the ZeRO stage
// (Rajbhandari et al. 2020, section 5): 0 none, 1 optimizer, 2 + gradients, 3 + parameters.
MemoryBreakdown zero_states(double psi, StateBytes sb, int zero, int dp);

// First block of each pipeline stage (size pp + 1, last = L). gridtrain: the trainer's cost-balanced split
// (src/train/schedule.hpp partition_stages with the trainer's costs); Megatron: L / pp blocks each.
std::vector<int> stage_blocks(const ModelShape& m, int pp, Framework f);

// Parameters held by one TP rank of a stage with `blocks` blocks (first: embeddings and positions; last:
// the tied head's copy and the final layer norm). Megatron pads the vocabulary to a multiple of 128 tp.
double stage_params(const ModelShape& m, int tp, int blocks, bool first, bool last, Framework f);

// Micro-batches whose activations a stage holds at once: 1F1B min(m, pp - stage), GPipe m (gridtrain's schedules).
int in_flight(const Layout& l, int stage);
// The same in units of the stage's whole activations, interleaving included: a stage of v chunks holds
// 2 (p - s - 1) + (v - 1) p + 1 chunk-micro-batches at once (Megatron's interleaved 1F1B), at most m.
double in_flight_stages(const Layout& l, int stage);

// gridtrain's ledger (GPT<T>::activation_bytes_per_slot and work_bytes), element size of the precision.
double gridtrain_activation_bytes_per_slot(const ModelShape& m, const Layout& l, int blocks, bool last);
double gridtrain_work_bytes(const ModelShape& m, const Layout& l, int blocks, bool last);

// Korthikanti et al. 2022 (section 4): bytes of activations one transformer layer keeps per micro-batch,
// 16-bit: sbh(34 + 5as/h) without TP, sbh(10 + 24/t + 5as/(ht)) with TP, sbh/t(34 + 5as/h) with TP and SP;
// selective recompute drops the 5as/h term, full recompute keeps the layer input only (2sbh, /t with SP).
// Generalised to GQA, SwiGLU widths, Llama's lack of dropout, fused attention (no s x s) and context parallelism.
// op_selective: selective recompute as torchtitan's op policy (every second GEMM and the element-wise ops again).
double megatron_layer_activation_bytes(const ModelShape& m, const Layout& l, Attention att = Attention::Materialized,
                                       bool op_selective = false);

// Bytes per gradient element a framework reduces over DP (fp32 in Megatron-Core and FSDP2, else the precision's).
double grad_wire_bytes(const Layout& l, Framework f);

// The breakdown of one stage and of the stage that needs the most (the device that decides whether it fits).
MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage);
MemoryBreakdown stage_memory(const ModelShape& m, const Layout& l, Framework f, int stage, const std::vector<int>& begin);
MemoryBreakdown peak_memory(const ModelShape& m, const Layout& l, Framework f);
MemoryBreakdown peak_memory(const ModelShape& m, const Layout& l, Framework f, const std::vector<int>& begin);

}  // namespace gt::plan
