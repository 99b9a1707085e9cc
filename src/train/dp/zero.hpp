#pragma once
// ZeRO over the data-parallel group (stages 1, 2 and 3 of Rajbhandari et al., arXiv 1910.02054). Every DP rank
// owns one equal shard of the padded flat layout (TensorLayout::shard_range) and keeps the optimizer state
// of that shard only:
//   stage 1  AdamW moments of the shard; gradients all-reduced as at stage 0; each rank updates its shard of
//            the parameters, which are then all-gathered.
//   stage 2  as 1, and the gradients are reduce-scattered into a shard-sized buffer (GradsShard) during
//            backward; no rank holds the full reduced gradient. With one micro-batch and one pipeline stage
//            each unit's gradients are staged and reduce-scattered unit by unit (zero_grads.hpp); otherwise
//            the full fp32 buffer Grads stays (micro-batches accumulate into it) and goes out in buckets.
//   stage 3  as 2, and the parameters are sharded too: each unit's are all-gathered just before a computation
//            reads them (src/train/dp/zero_gather.hpp); the optimizer updates the shard in place, no gather after.
// With dp = 1 every stage is stage 0 (nothing to shard).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/comm/node_shm.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/model/units.hpp"
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

// The units ZeRO-3 gathers and ZeRO-2/3 stage are the model's (src/model/units.hpp: unit_spans, UnitSpan), wte
// cut into row chunks when the gradients are staged.
// Rows per wte chunk such that a chunk holds no more elements than the largest block (so no buffer is larger
// than a block's), at least one row; 0 when the layout has no wte.
size_t wte_chunk_rows(const TensorLayout& layout);

// A reduce-scatter over dp of the layout's range r, whose elements are at `send`, into this rank's shard
// buffer (element i of the layout at shard_grads[i - shard.begin]): each rank receives the sum of the piece of
// r that lies in its shard (an empty piece still takes part).
RequestPtr ireduce_scatter_range(Comm& dp, const TensorLayout& layout, Range shard, Range r, const float* send,
                                 float* shard_grads);

// The extents a TrainState is built with under the plan (allocated as shards from the start, the initial values
// computed for the shard only): moments and the fp32 master sharded from stage 1, the working copy at stage 3,
// no full gradient buffer when the gradients are staged (staged_grads: ZeroGradStaging::applies).
StateExtents state_extents(const ZeroPlan& plan, size_t layout_size, bool staged_grads);

// Shards the TrainState for the plan: moments to the shard (stage >= 1), a shard-sized reduced-gradient
// buffer GradsShard (stage >= 2), the parameters to the shard keeping their values (stage 3). Stage 0:
// nothing changes.
void apply_zero_plan(TrainState& state, const ZeroPlan& plan);

// The buffer holding the DP-reduced gradients the optimizer reads: GradsShard at stage 2, else Grads.
StateBuffer& reduced_grads(TrainState& state);

// After the sharded step: every rank's shard of the parameters to every rank (in place). Collective over dp.
// Nothing at stage 3. shm: the parameters lie in the DP group's shared region (src/comm/node_shm.hpp): copied from there.
void allgather_params(TrainState& state, const ZeroPlan& plan, Comm& dp, NodeShm* shm = nullptr);

// On one node (parallel.allreduce = shm, CPU builds): the named buffers of the state moved into the DP group's
// shared region (src/comm/node_shm.hpp, which knows byte ranges, not the TrainState), with flags for the units
// first_unit..last_unit. Collective over dp; nullptr (nothing moved) where the group has no region.
std::unique_ptr<NodeShm> share_buffers(Comm& dp, TrainState& state, const std::vector<Buffer>& buffers,
                                      int first_unit, int last_unit);

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
// master, sharded like the moments). Stage 3: the working copy is a shard plus the two gather buffers,
// gather_elems elements together (the largest unit and the second largest: ZeroGather::buffer_elems).
// staging_elems: the gradient staging buffers of ZeroGradStaging (src/train/dp/zero_grads.hpp), which replace the
// full accumulation buffer at stages 2 and 3 when it applies (0: the full buffer is kept).
StateLedger predicted_state_bytes(size_t psi, int dp, int stage, size_t working_bytes = 4, size_t gather_elems = 0,
                                  size_t staging_elems = 0);
// The bytes the TrainState's buffers hold, by category (params/master; grads*; adam_*).
StateLedger allocated_state_bytes(const TrainState& state);

}  // namespace gt
