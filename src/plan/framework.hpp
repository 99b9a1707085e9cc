#pragma once
// What each training system does by default, for `--framework` (docs/planner.md, "Frameworks", has each row's
// source): its activation ledger, attention kernel, which communication it overlaps with which compute, its ZeRO
// flavour and its pipeline rules. One table, so that a system's defaults are stated once.
#include "src/plan/layout.hpp"

namespace gt::plan {

// How data-parallel traffic meets the compute.
enum class DpOverlap {
  Buckets,          // gridtrain: gradient buckets reduced behind the last micro-batch's backward (the last exposed)
  None,             // all-reduce after the backward (Megatron-LM 2021-22)
  ReduceAndGather,  // Megatron-Core: bucketed reduce-scatter behind the last backward (and the pipeline drain),
                    // parameter all-gather behind the next step's first forward (and the warm-up)
  AfterBackward,    // llm.c: each block's reduce-scatter behind the backward of the blocks below it, the embedding's
                    // and the parameter all-gather after the backward, exposed
  PerLayer,         // ZeRO-3 / FSDP: each layer's all-gather prefetched behind the previous layer's compute,
                    // its gradients reduce-scattered behind the next layer's backward
};

struct FrameworkTraits {
  bool gridtrain_ledger;   // GPT<T>'s own activation ledger (gridtrain) or Korthikanti et al.'s, generalised
  bool even_layers;        // the pipeline needs L divisible by pp (Megatron-LM 2021); else a cost-balanced split
  bool pad_vocab;          // vocabulary padded to a multiple of 128 x tp
  Attention attention;     // the attention kernel it runs
  bool sequence_parallel;  // Megatron's SP whenever tp > 1
  bool tp_overlap;         // TP collectives overlapped with their GEMMs (userbuffers, async TP)
  bool pp_overlap;         // pipeline sends overlapped with compute (interleaved schedule)
  DpOverlap dp;
  bool interleaving;       // virtual pipeline stages
  bool context_parallel;
  bool tensor_pipeline;    // has TP and PP at all (llm.c, DeepSpeed ZeRO-3 runs: data parallel only)
  int zero_min, zero_max;  // the ZeRO stages it has
  int default_zero;        // its usual stage (megatron-core: the distributed optimizer)
  double grad_wire_bytes;  // bytes per gradient element reduced over DP; 0: the precision's gradient bytes
  double bucket_params;    // parameters per DP bucket (the last one is never hidden); 0: none
  // Element-wise memory traffic against fused kernels (1): eager PyTorch runs RMSNorm, RoPE and SwiGLU as chains of
  // separate kernels, several in fp32 (torchtitan without torch.compile).
  double elementwise_factor;
  // Selective recompute recomputes every second GEMM of a block as well (torchtitan's "op" policy: it saves the
  // outputs of all compute ops except every second mm); otherwise Korthikanti's (the attention core only).
  bool selective_half_gemms;
  bool fp8;  // fp8 GEMMs (Transformer Engine in Megatron-Core, torchao's float8 in torchtitan)
};

const FrameworkTraits& traits(Framework f);
// The attention a layout runs: the model's if it names one, else the framework's.
Attention attention_of(const ModelShape& m, Framework f);

}  // namespace gt::plan
