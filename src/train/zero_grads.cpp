#include "src/train/zero_grads.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "src/core/error.hpp"

namespace gt {

bool ZeroGradStaging::applies(const ZeroPlan& plan, int micro_batches, int pp) {
  return plan.stage >= 2 && micro_batches == 1 && pp == 1;
}

ZeroGradStaging::ZeroGradStaging(TrainState& state, const ZeroPlan& plan, StageModel& model)
    : state_(state), plan_(plan), model_(model), units_(zero_units(state.layout())) {
  const TensorLayout& layout = state.layout();
  if (layout.has("wte")) tied_unit_ = layout.spec("wte").unit;
  for (const auto& [id, u] : units_)
    if (id != tied_unit_) slots_[0].cap = slots_[1].cap = std::max(slots_[0].cap, u.elems);
  tied_.cap = tied_unit_ >= 0 ? units_.at(tied_unit_).elems : 0;
  auto add = [&](const char* name, size_t n) {
    return static_cast<float*>(state.add_buffer(name, DType::F32, MemSpace::Device, {0, n}).data);
  };
  tied_.data = add("grads_tied", tied_.cap);
  slots_[0].data = add("grads_stage0", slots_[0].cap);
  slots_[1].data = add("grads_stage1", slots_[1].cap);
  // The model writes only where a unit is staged from now on.
  if (state.has_buffer("grads")) state.remove_buffer("grads");  // the trainer never allocates it
  model.bind(state.params(), nullptr);
  for (size_t k = 0; k < layout.tensors().size(); ++k) model.redirect_grad(k, nullptr);
}

ZeroGradStaging::~ZeroGradStaging() {
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) wait(*s);  // MPI must not read freed buffers
}

void ZeroGradStaging::wait(Slot& s) {
  for (RequestPtr& r : s.pending) r->wait();
  s.pending.clear();
}

void ZeroGradStaging::point(int unit, float* at) {
  const ZeroUnit& u = units_.at(unit);
  for (size_t k = 0; k < u.tensors.size(); ++k) model_.redirect_grad(u.tensors[k], at ? at + u.packed[k] : nullptr);
}

void ZeroGradStaging::prepare(Slot& s, int unit) {
  wait(s);  // its last unit's reduce-scatter still reads it
  if (s.unit >= 0) point(s.unit, nullptr);
  s.unit = unit;
  // zeroed: the kernels accumulate into gradients, as into the zeroed full buffer
  Kokkos::deep_copy(DeviceView<float>(s.data, units_.at(unit).elems), 0.0f);
  point(unit, s.data);
}

void ZeroGradStaging::begin_step() {
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) {
    wait(*s);
    if (s->unit >= 0) point(s->unit, nullptr);
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
  float* shard = state_.data<float>("grads_shard");
  const float* at = s->data;
  for (const Range& r : units_.at(unit).ranges) {
    s->pending.push_back(ireduce_scatter_range(dp, state_.layout(), plan_.shard, r, at, shard));
    at += r.size();
  }
  if (unit != tied_unit_) {  // the next unit down (the tied one is staged for the whole step)
    auto it = units_.find(unit);
    while (it != units_.begin() && std::prev(it)->first == tied_unit_) --it;
    if (it != units_.begin()) {
      prepare(slots_[turn_], std::prev(it)->first);
      turn_ ^= 1;
    }
  }
  for (Slot* t : {&tied_, &slots_[0], &slots_[1]})  // a chance to progress
    for (RequestPtr& r : t->pending) r->test();
}

void ZeroGradStaging::finish() {
  for (Slot* s : {&tied_, &slots_[0], &slots_[1]}) wait(*s);
}

}  // namespace gt
