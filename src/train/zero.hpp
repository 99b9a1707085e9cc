#pragma once
// ZeRO over the data-parallel group (stages 1, 2 and 3 of Rajbhandari et al., arXiv 1910.02054). Every DP rank
// owns one equal shard of the padded flat layout (TensorLayout::shard_range) and keeps the optimizer state
// of that shard only:
//   stage 1  AdamW moments of the shard; gradients all-reduced as at stage 0; each rank updates its shard of
//            the parameters, which are then all-gathered.
//   stage 2  as 1, and the gradients are reduce-scattered bucket by bucket into a shard-sized buffer
//            ("grads_shard") during backward; no rank holds the full reduced gradient. The full fp32 buffer
//            "grads" stays: micro-batches accumulate into it before the one reduction per step.
//   stage 3  as 2, and the parameters are sharded too: each unit's are all-gathered just before a computation
//            reads them (src/train/zero_gather.hpp); the optimizer updates the shard in place, no gather after.
// With dp = 1 every stage is stage 0 (nothing to shard).
#include <string>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/train/train_state.hpp"

namespace gt {

struct ZeroPlan {
  int requested = 0;  // parallel.zero
  int stage = 0;      // what runs: requested, or 0 when dp = 1
  Range shard;        // this rank's elements of the flat buffers (all of them at stage 0)
  int dp_size = 1;

  ZeroPlan() = default;
  ZeroPlan(int requested_stage, const TensorLayout& layout, int dp_rank, int dp_size);
  bool sharded() const { return stage > 0; }
  std::string describe() const;  // for the start line, e.g. "zero 2 (shard 1/4 of 12800 elements)"
};

// The part of tensor s's flat range that lies in r (empty: begin == end).
Range intersect(const TensorSpec& s, Range r);

// How many elements of the flat range `bucket` lie in each DP rank's shard (the counts of its reduce-scatter).
std::vector<size_t> shard_counts(const TensorLayout& layout, Range bucket);

// Shards the TrainState for the plan: moments to the shard (stage >= 1), a shard-sized reduced-gradient
// buffer "grads_shard" (stage >= 2), the parameters to the shard keeping their values (stage 3). Stage 0:
// nothing changes.
void apply_zero_plan(TrainState& state, const ZeroPlan& plan);

// The buffer holding the DP-reduced gradients the optimizer reads: "grads_shard" at stage 2, else "grads".
StateBuffer& reduced_grads(TrainState& state);

// After the sharded step: every rank's shard of the parameters to every rank (in place). Collective over dp.
// Nothing at stage 3.
void allgather_params(TrainState& state, const ZeroPlan& plan, Comm& dp);

// Per-rank bytes of the model states (the ZeRO paper's ledger with this project's fp32 dtypes: parameters 4,
// gradients 4, AdamW moments 8 bytes per element; psi = the padded layout).
struct StateLedger {
  size_t params = 0, grads = 0, optimizer = 0;
  size_t total() const { return params + grads + optimizer; }
};
// What this implementation allocates: the paper's formula plus the full-size fp32 accumulation buffer that
// stage 2 keeps for micro-batches (so stage 2's gradients are 4 psi + 4 psi / dp, the paper's 4 psi / dp
// being the part that persists reduced).
// working_bytes: 4 (fp32: the params are the master), 2 (bf16/fp16: a 16-bit copy of everything plus the fp32
// master, sharded like the moments). Stage 3: the working copy is a shard plus the two gather buffers of
// gather_elems elements each (the largest unit).
StateLedger predicted_state_bytes(size_t psi, int dp, int stage, size_t working_bytes = 4, size_t gather_elems = 0);
// The bytes the TrainState's buffers hold, by category (params/master; grads*; adam_*).
StateLedger allocated_state_bytes(const TrainState& state);

}  // namespace gt
