#pragma once
// The ZeRO shard plan as rules over sizes (no buffers, no communicators): which stage runs, whether the gradients
// are staged unit by unit, how the tied wte is cut into chunks, and what the gradient and gather buffers hold.
// The trainer's data-parallel package (src/train/dp, src/train/zero*.cpp) and the planner's memory model
// (src/plan/memory.cpp) both call these, so the two cannot drift apart. Header-only, templated over the number
// type: the trainer counts elements in size_t, the planner in double.
#include <algorithm>
#include <cstddef>

namespace gt::shard_plan {

// The stage that runs: with one DP rank there is nothing to shard, every stage runs as stage 0.
inline int running_stage(int requested, int dp) { return dp > 1 ? requested : 0; }

// Whether the gradients are staged unit by unit into two rotating buffers (src/train/dp/zero_grads.hpp) instead of
// one full accumulation buffer: stage 2 or 3 with one micro-batch per step and one pipeline stage. Several
// micro-batches would need one reduce-scatter per micro-batch; several stages sum the tied wte over the
// embedding group before its reduction (docs/zero.md).
inline bool stages_grads(int stage, int micro_batches, int pp) { return stage >= 2 && micro_batches == 1 && pp == 1; }

// Rows per chunk of a chunked (tied, staged) wte: as many as fit in the largest other unit, at least one, so no
// staging or gather buffer is larger than a block's.
template <class T>
T wte_chunk_rows(T largest_other_unit, T cols) {
  return std::max<T>(T(1), largest_other_unit / cols);
}

// Elements of the staging buffers: two rotating buffers of the largest unit, plus the tied unit's own buffer
// (0 when wte is chunked or untied).
template <class T>
T staging_elems(T largest_unit, T tied_unit = T(0)) {
  return T(2) * largest_unit + tied_unit;
}

// Elements of ZeRO-3's two gather buffers: the largest unit and the second largest (the unit computing and the
// one prefetched; src/train/dp/zero_gather.hpp).
template <class T>
T gather_elems(T largest_unit, T second_unit) {
  return largest_unit + second_unit;
}

// Elements of the gradient buffers per rank: the accumulation (the full buffer of psi elements, or the staging
// when staging > 0) plus, from stage 2 with dp > 1, the reduced shard of psi / dp elements.
template <class T>
T grad_elems(T psi, int dp, int stage, T staging = T(0)) {
  return (staging > T(0) ? staging : psi) + (stage >= 2 && dp > 1 ? psi / T(dp) : T(0));
}

}  // namespace gt::shard_plan
