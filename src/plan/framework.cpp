#include "src/plan/framework.hpp"

namespace gt::plan {

const FrameworkTraits& traits(Framework f) {
  // gridtrain: model.attention defaults to fused (docs/model.md)
  // ledger, even, pad, attention, SP, tp_ovl, pp_ovl, dp, interleave, cp, tp/pp, zero min/max/default, wire, bucket,
  // element-wise factor, selective recompute of every second GEMM, fp8
  // gridtrain interleaves when asked (parallel.schedule = interleaved; the planner's --virtual-stages), without
  // overlapped p2p
  static const FrameworkTraits kGridtrain{true,  false, false, Attention::Fused, false, false, false,
                                          DpOverlap::Buckets, true, false, true, 0, 3, 0, 0, 0, 1, false, false};
  static const FrameworkTraits kMegatron{false, true, true, Attention::Materialized, true, false, false,
                                         DpOverlap::None, true, false, true, 0, 3, 0, 0, 0, 1, false, false};
  // Megatron-Core r0.8 (2024): TE's fused attention, SP, --tp-comm-overlap, --overlap-grad-reduce and
  // --overlap-param-gather with the distributed optimizer, fp32 gradient reduction (bf16 accumulates in fp32),
  // DDP buckets of max(40M, 1M x dp) parameters (taken as 40M), interleaving with p2p overlap, context parallel.
  static const FrameworkTraits kMcore{false, false, true, Attention::Fused, true, true, true,
                                      DpOverlap::ReduceAndGather, true, true, true, 0, 1, 1, 4, 40e6, 1, false, true};
  // DeepSpeed ZeRO-3 (Megatron-DeepSpeed's GPT, 2021-22): materialized attention, per-module gathers with prefetch,
  // 16-bit gradient reduce-scatter; no pipeline with stage 3.
  static const FrameworkTraits kDeepSpeed{false, false, true, Attention::Materialized, false, false, false,
                                          DpOverlap::PerLayer, false, false, false, 0, 3, 3, 0, 0, 1, false, false};
  // torchtitan (FSDP2, 2024): SDPA flash attention, per-block all-gather in bf16 with implicit prefetch, fp32
  // gradient reduce-scatter (MixedPrecisionPolicy reduce_dtype), TP with SequenceParallel norms, PP schedules
  // including interleaved 1F1B, context parallel; async TP only when asked (--tp-overlap on). Eager mode: RMSNorm,
  // RoPE and SwiGLU as separate kernels, partly in fp32 (about 3x the fused traffic, docs/planner.md); selective
  // ("op") recompute also recomputes every second GEMM.
  static const FrameworkTraits kTitan{false, false, false, Attention::Fused, true, false, false,
                                      DpOverlap::PerLayer, true, true, true, 3, 3, 3, 4, 0, 3, true, true};
  // llm.c (2024): cuDNN flash attention, ZeRO-1 with per-block async reduce-scatter of bf16 gradients on the last
  // micro-step, the embedding's gradients and the parameter all-gather after the backward; vocabulary padded.
  static const FrameworkTraits kLlmc{false, false, true, Attention::Fused, false, false, false,
                                     DpOverlap::AfterBackward, false, false, false, 0, 1, 1, 0, 0, 1, false, false};
  switch (f) {
    case Framework::Gridtrain: return kGridtrain;
    case Framework::Megatron: return kMegatron;
    case Framework::MegatronCore2024: return kMcore;
    case Framework::DeepSpeedZero3: return kDeepSpeed;
    case Framework::TorchtitanFsdp2: return kTitan;
    case Framework::LlmC: return kLlmc;
  }
  return kGridtrain;
}

Attention attention_of(const ModelShape& m, Framework f) {
  return m.attention == Attention::Auto ? traits(f).attention : m.attention;
}

}  // namespace gt::plan
