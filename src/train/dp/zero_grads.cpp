#include "src/train/dp/zero_grads.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "kernels/half.hpp"
#include "src/core/error.hpp"
#include "src/train/dp/half_wire.hpp"
#include "src/train/dp/shard_plan.hpp"

namespace gt {

bool ZeroGradStaging::applies(const ZeroPlan& plan, int micro_batches, int pp) {
  return shard_plan::stages_grads(plan.stage, micro_batches, pp);
}

ZeroGradStaging::ZeroGradStaging(TrainState& state, const ZeroPlan& plan, size_t chunk_rows)
    : state_(state), plan_(plan), units_(unit_spans(state.layout(), chunk_rows)) {
  const TensorLayout& layout = state.layout();
  // The tied wte (GPT-2, one stage) is written by the head first and the embedding last, so its unit stays staged
  // through the whole backward; Llama's wte (its head is lm_head.w) only by the embedding: an ordinary unit.
  if (layout.has("wte") && !layout.has("lm_head.w") && chunk_rows == 0) tied_unit_ = layout.spec("wte").unit;
  for (const auto& [id, u] : units_)
    if (id != tied_unit_) slots_[0].cap = slots_[1].cap = std::max(slots_[0].cap, u.elems);
  tied_.cap = tied_unit_ >= 0 ? units_.at(tied_unit_).elems : 0;
  auto add = [&](Buffer id, size_t n) {
    return static_cast<float*>(state.add_buffer(id, DType::F32, MemSpace::Device, {0, n}).data);
  };
  slots_[0].id = Buffer::GradsStage0;
  slots_[0].wire_id = Buffer::GradWireStage0;
  slots_[1].id = Buffer::GradsStage1;
  slots_[1].wire_id = Buffer::GradWireStage1;
  for (Slot* t : {&tied_, &slots_[0], &slots_[1]}) t->data = add(t->id, t->cap);
  // The model writes only where a unit is staged from now on.
  if (state.has_buffer(Buffer::Grads)) state.remove_buffer(Buffer::Grads);  // the trainer never allocates it
}

ZeroGradStaging::~ZeroGradStaging() {
  if (shm_) return;  // the region outlives this (the DP communicator owns it) and nothing is in flight
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) wait(*s);  // MPI must not read freed buffers
}

float* ZeroGradStaging::grads(int unit) {
  for (Slot* t : {&tied_, &slots_[0], &slots_[1]})
    if (t->unit == unit) return t->data;
  throw Error("zero: the gradients of unit " + std::to_string(unit) + " are written but not staged");
}

void ZeroGradStaging::attach(NodeShm* shm) {
  shm_ = shm;
  for (Slot* t : {&tied_, &slots_[0], &slots_[1]}) t->data = state_.data<float>(t->id);  // moved by share_buffers
}

void ZeroGradStaging::set_wire(DType t) {
  wire_ = t;
  if (shm_) return;  // summed from the peers' fp32 staging, rounded as read
  auto add = [&](Buffer id, Range extent) {
    return static_cast<uint16_t*>(state_.add_buffer(id, t, MemSpace::Device, extent).data);
  };
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) s->wire = add(s->wire_id, Range{0, s->cap});
  wire_shard_ = add(Buffer::GradWireShard, plan_.shard);
}

void ZeroGradStaging::launch(int unit, Slot& s, Comm& dp) {
  const UnitSpan& u = units_.at(unit);
  if (wire_ == DType::F32) {
    float* shard = state_.data<float>(Buffer::GradsShard);
    const float* at = s.data;
    for (const Range& r : u.ranges) {
      s.pending.push_back(ireduce_scatter_range(dp, state_.layout(), plan_.shard, r, at, shard));
      at += r.size();
    }
    return;
  }
  to_wire(s.data, s.wire, u.elems, wire_);
  const uint16_t* at = s.wire;
  for (const Range& r : u.ranges) {
    const size_t first = std::min(std::max(r.begin, plan_.shard.begin), plan_.shard.end);
    s.pending.push_back(dp.ireduce_scatter_v(at, wire_shard_ + (first - plan_.shard.begin),
                                             shard_counts(state_.layout(), r), wire_, ReduceOp::Sum));
    at += r.size();
  }
}

void ZeroGradStaging::wait(Slot& s) {
  if (shm_) {
    if (s.unit != -1)  // -1: empty (wte chunks have negative ids)
      shm_->wait_until(
          "zero reduce-scatter (shm)", [&] { return shm_->all_reached(NodeShm::Consumed, s.unit, s.step); },
          [this] { reduce_ready(); });
    return;
  }
  for (RequestPtr& r : s.pending) r->wait();
  s.pending.clear();
}

void ZeroGradStaging::reduce_ready() {
  for (size_t i = 0; i < to_reduce_.size();) {
    const auto [unit, slot] = to_reduce_[i];
    if (!shm_->all_reached(NodeShm::Done, unit, step_)) {
      ++i;
      continue;
    }
    reduce(unit, *slot);
    shm_->set(NodeShm::Consumed, unit, step_);  // the peers may zero and reuse their buffer of this unit
    to_reduce_.erase(to_reduce_.begin() + long(i));
  }
}

namespace {
template <class H>
void sum_rounded_as(const std::vector<const float*>& in, size_t at, size_t len, float* o) {
  for (size_t i = 0; i < len; ++i) {
    H acc(in[0][at + i]);
    for (size_t k = 1; k < in.size(); ++k) acc = H(float(acc) + float(H(in[k][at + i])));
    o[i] = float(acc);
  }
}
}  // namespace

// The 16-bit wire's sum through shared memory: each rank's value rounded to the wire type, the partial sums
// rounded after every addition in rank order (half_sum.hpp's arithmetic, the MPI reduce-scatter's values at dp 2).
void ZeroGradStaging::sum_rounded(const std::vector<const float*>& in, size_t at, size_t len, float* o) const {
  if (wire_ == DType::BF16) sum_rounded_as<bf16_t>(in, at, len, o);
  else sum_rounded_as<fp16_t>(in, at, len, o);
}

// Every rank's staged unit at the same place in its region: this rank's piece summed in rank order 0..p-1
// (the order of the shm all-reduce, so the bits of zero 0 with parallel.allreduce=shm) into its shard.
void ZeroGradStaging::reduce(int unit, const Slot& s) {
  const Range shard = plan_.shard;
  float* out = state_.data<float>(Buffer::GradsShard);
  const int p = shm_->size();
  std::vector<const float*> in;  // every rank's staging buffer of this slot
  for (int k = 0; k < p; ++k) in.push_back(reinterpret_cast<const float*>(shm_->peer(k, buffer_name(s.id))));
  size_t packed = 0;
  for (const Range& r : units_.at(unit).ranges) {
    const size_t lo = std::max(r.begin, shard.begin), hi = std::min(r.end, shard.end);
    for (size_t t = lo; t < hi; t += 4096) {  // tiles that stay in cache while the p inputs are added
      const size_t len = std::min<size_t>(4096, hi - t);
      float* o = out + (t - shard.begin);
      const size_t at = packed + (t - r.begin);
      if (wire_ == DType::F32) {
        for (size_t i = 0; i < len; ++i) o[i] = in[0][at + i];
        for (int k = 1; k < p; ++k)
          for (size_t i = 0; i < len; ++i) o[i] += in[size_t(k)][at + i];
      } else {
        sum_rounded(in, at, len, o);
      }
    }
    packed += r.size();
  }
}

void ZeroGradStaging::prepare(Slot& s, int unit) {
  wait(s);  // its last unit's reduce-scatter still reads it
  s.unit = unit;
  s.step = step_;
  // zeroed: the kernels accumulate into gradients, as into the zeroed full buffer
  Kokkos::deep_copy(DeviceView<float>(s.data, units_.at(unit).elems), 0.0f);
}

void ZeroGradStaging::begin_step() {
  ++step_;
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) {
    wait(*s);
    s->unit = -1;
  }
  if (tied_unit_ >= 0) prepare(tied_, tied_unit_);
  turn_ = 0;
  for (auto it = units_.rbegin(); it != units_.rend(); ++it)  // the first unit of backward: the highest
    if (it->first != tied_unit_) {
      prepare(slots_[turn_], it->first);
      turn_ ^= 1;
      break;
    }
}

void ZeroGradStaging::unit_done(int unit, Comm& dp) {
  Slot* s = unit == tied_unit_ ? &tied_ : slots_[0].unit == unit ? &slots_[0] : slots_[1].unit == unit ? &slots_[1]
                                                                                                      : nullptr;
  if (!s) throw Error("zero: the gradients of unit " + std::to_string(unit) + " were computed but never staged");
  if (shm_) {
    shm_->set(NodeShm::Done, unit, step_);  // the peers may sum it from here on
    to_reduce_.emplace_back(unit, s);
  } else {
    launch(unit, *s, dp);
  }
  if (unit != tied_unit_) {  // the next unit down (the tied one is staged for the whole step)
    auto it = units_.find(unit);
    while (it != units_.begin() && std::prev(it)->first == tied_unit_) --it;
    if (it != units_.begin()) {
      prepare(slots_[turn_], std::prev(it)->first);
      turn_ ^= 1;
    }
  }
  if (shm_) {
    reduce_ready();  // what the peers have staged too: summed while they compute the next unit
    return;
  }
  for (Slot* t : {&tied_, &slots_[0], &slots_[1]})  // a chance to progress
    for (RequestPtr& r : t->pending) r->test();
}

void ZeroGradStaging::finish() {
  if (shm_) {  // this rank's pieces summed; the peers may still read its buffers (begin_step waits for them)
    shm_->wait_until(
        "zero reduce-scatter (shm)", [this] { return to_reduce_.empty(); }, [this] { reduce_ready(); });
    return;
  }
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) wait(*s);
  if (wire_shard_) from_wire(wire_shard_, state_.data<float>(Buffer::GradsShard), plan_.shard.size(), wire_);
}

}  // namespace gt
