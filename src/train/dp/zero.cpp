#include "src/train/dp/zero.hpp"

#include <algorithm>

#include "src/core/error.hpp"
#include "src/train/dp/shard_plan.hpp"
#include "src/comm/node_shm.hpp"

namespace gt {

ZeroPlan::ZeroPlan(int requested_stage, const TensorLayout& layout, int dp_rank, int dp)
    : requested(requested_stage), stage(shard_plan::running_stage(requested_stage, dp)), dp_size(dp) {
  if (requested_stage < 0 || requested_stage > 3)
    throw Error("parallel.zero = " + std::to_string(requested_stage) + ": the stages are 0, 1, 2 and 3");
  if (layout.dp_size() != dp) throw Error("zero: the layout is padded for another DP size");
  shard = stage > 0 ? layout.shard_range(dp_rank) : Range{0, layout.size()};
}

std::string ZeroPlan::describe() const {
  if (requested == 0) return "zero 0";
  if (stage == 0) return "zero " + std::to_string(requested) + " (dp=1: nothing to shard, runs as zero 0)";
  return "zero " + std::to_string(stage) + " (" + std::to_string(shard.size()) + " elements per DP shard of " +
         std::to_string(dp_size) + ")";
}

Range intersect(const TensorSpec& s, Range r) {
  const size_t b = std::max(s.offset, r.begin), e = std::min(s.offset + s.size, r.end);
  return b < e ? Range{b, e} : Range{b, b};
}

std::vector<size_t> shard_counts(const TensorLayout& layout, Range bucket) {
  std::vector<size_t> counts(layout.dp_size(), 0);
  for (int r = 0; r < layout.dp_size(); ++r) {
    const Range s = layout.shard_range(r);
    const size_t b = std::max(s.begin, bucket.begin), e = std::min(s.end, bucket.end);
    counts[r] = b < e ? e - b : 0;
  }
  return counts;
}

size_t wte_chunk_rows(const TensorLayout& layout) {
  if (!layout.has("wte")) return 0;
  const TensorSpec& wte = layout.spec("wte");
  size_t largest = 0;
  for (const auto& [id, u] : unit_spans(layout))
    if (id != wte.unit) largest = std::max(largest, u.elems);
  return shard_plan::wte_chunk_rows(largest, size_t(wte.local_shape().back()));
}

RequestPtr ireduce_scatter_range(Comm& dp, const TensorLayout& layout, Range shard, Range r, const float* send,
                                 float* shard_grads) {
  const size_t first = std::min(std::max(r.begin, shard.begin), shard.end);
  return dp.ireduce_scatter_v(send, shard_grads + (first - shard.begin), shard_counts(layout, r), DType::F32,
                              ReduceOp::Sum);
}

StateExtents state_extents(const ZeroPlan& plan, size_t layout_size, bool staged_grads) {
  const Range all{0, layout_size};
  StateExtents e;
  e.optimizer = plan.sharded() ? plan.shard : all;
  e.working = plan.stage >= 3 ? plan.shard : all;
  e.full_grads = !staged_grads;
  return e;
}

void apply_zero_plan(TrainState& state, const ZeroPlan& plan) {
  if (!plan.sharded()) return;
  state.shard_buffer(Buffer::AdamM, plan.shard);
  state.shard_buffer(Buffer::AdamV, plan.shard);
  if (state.has_buffer(Buffer::Master)) state.shard_buffer(Buffer::Master, plan.shard);
  if (plan.stage >= 2) state.add_buffer(Buffer::GradsShard, DType::F32, MemSpace::Device, plan.shard);
  if (plan.stage >= 3) state.shard_buffer(Buffer::Params, plan.shard);  // gathered per unit (zero_gather.hpp)
}

StateBuffer& reduced_grads(TrainState& state) {
  return state.buffer(state.has_buffer(Buffer::GradsShard) ? Buffer::GradsShard : Buffer::Grads);
}

void allgather_params(TrainState& state, const ZeroPlan& plan, Comm& dp, NodeShm* shm) {
  if (!plan.sharded() || plan.stage >= 3) return;  // stage 3 keeps the shard: units are gathered when read
  const size_t n = plan.shard.size();  // equal shards: the padded layout divides by dp
  // A 16-bit working copy: the optimizer rounded this rank's shard from its master shard before
  // (TrainState::refresh_params); the gather moves elements and rounds nothing.
  const StateBuffer& b = state.buffer(Buffer::Params);
  unsigned char* p = static_cast<unsigned char*>(b.data);
  if (shm) {  // the parameters lie in the region (share_buffers)
    shm->allgather_shards(buffer_name(Buffer::Params), n * dtype_size(b.dtype));
    return;
  }
  dp.allgather(p + plan.shard.begin * dtype_size(b.dtype), p, n, b.dtype);
}

std::unique_ptr<NodeShm> share_buffers(Comm& dp, TrainState& state, const std::vector<Buffer>& buffers,
                                      int first_unit, int last_unit) {
  std::vector<SharedBytes> ranges;
  for (Buffer id : buffers) ranges.push_back({buffer_name(id), state.buffer(id).data, state.buffer(id).bytes});
  std::unique_ptr<NodeShm> shm = NodeShm::create(dp, ranges, first_unit, last_unit);
  // The state reads and writes the region's copies from here on. move_buffer_to copies the same bytes once more
  // (start-up only); no peer reads them before this rank sets a flag in a step (a unit done, a publish), and the
  // shm all-reduce of Grads reads a part only inside a collective its owner has entered.
  if (shm)
    for (Buffer id : buffers) state.move_buffer_to(id, shm->mine(buffer_name(id)));
  return shm;
}

StateLedger predicted_state_bytes(size_t psi, int dp, int stage, size_t working_bytes, size_t gather_elems,
                                  size_t staging_elems) {
  const int nd = stage > 0 ? dp : 1;
  StateLedger l;
  // the working copy (stage 3: a shard plus the two gather buffers, gather_elems together), and the fp32 master
  // (sharded with the moments) when the working type is not fp32
  l.params = stage >= 3 && dp > 1 ? working_bytes * (psi / dp + gather_elems) : working_bytes * psi;
  l.params += working_bytes != 4 ? 4 * (psi / nd) : 0;
  // the accumulation buffer (full, or the staging of a unit at a time), and the reduced shard from stage 2
  l.grads = 4 * shard_plan::grad_elems(psi, dp, stage, staging_elems);
  l.optimizer = 8 * (psi / nd);
  return l;
}

StateLedger allocated_state_bytes(const TrainState& state) {
  StateLedger l;
  for (const BufferInfo& info : buffer_table()) {  // the parts are the table's (state_buffers.hpp)
    if (info.ledger == LedgerPart::None || !state.has_buffer(info.id)) continue;
    const size_t b = const_cast<TrainState&>(state).buffer(info.id).bytes;
    if (info.ledger == LedgerPart::Params) l.params += b;
    else if (info.ledger == LedgerPart::Grads) l.grads += b;
    else l.optimizer += b;
  }
  return l;
}

}  // namespace gt
