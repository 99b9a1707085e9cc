#include "src/train/zero_gather.hpp"

#include <algorithm>

namespace gt {

ZeroGather::ZeroGather(TrainState& state, const ZeroPlan& plan, Comm& dp, StageModel& model)
    : state_(state), plan_(plan), dp_(dp), model_(model), dtype_(state.buffer("params").dtype),
      elem_(dtype_size(dtype_)) {
  const std::vector<TensorSpec>& t = state.layout().tensors();
  for (size_t k = 0; k < t.size(); ++k) {
    Unit& u = units_[t[k].unit];
    u.tensors.push_back(k);
    // Tensors of one unit that follow each other in storage share a range (with the alignment gap between
    // them, which is zero everywhere).
    if (!u.ranges.empty() && k > 0 && u.tensors.size() > 1 && u.tensors[u.tensors.size() - 2] == k - 1)
      u.ranges.back().end = t[k].offset + t[k].size;
    else
      u.ranges.push_back({t[k].offset, t[k].offset + t[k].size});
  }
  for (const auto& [id, u] : units_) {
    size_t n = 0;
    for (const Range& r : u.ranges) n += r.size();
    max_unit_ = std::max(max_unit_, n);
  }
  for (size_t k = 0; k < t.size(); ++k) model.redirect_param(k, nullptr);  // nothing readable until gathered
  for (int i = 0; i < 2; ++i) {
    const std::string name = "gather" + std::to_string(i);
    slots_[i].data = static_cast<unsigned char*>(state.add_buffer(name, dtype_, MemSpace::Device, {0, max_unit_}).data);
  }
}

ZeroGather::~ZeroGather() {
  for (Slot& s : slots_)
    for (RequestPtr& r : s.pending) r->wait();  // MPI must not write into freed buffers
}

void ZeroGather::issue(Slot& s, int unit) {
  for (RequestPtr& r : s.pending) r->wait();  // the slot's previous gather, if it was never used
  s.pending.clear();
  if (s.unit >= 0)  // the unit it held is no longer readable: a stray read throws instead of reading another unit
    for (size_t k : units_.at(s.unit).tensors) model_.redirect_param(k, nullptr);
  s.unit = unit;
  const unsigned char* shard = static_cast<const unsigned char*>(state_.buffer("params").data);
  unsigned char* at = s.data;
  for (const Range& r : units_.at(unit).ranges) {
    // This rank's piece of the range starts where its shard meets it (an empty piece still takes part).
    const size_t b = std::clamp(r.begin, plan_.shard.begin, plan_.shard.end);
    s.pending.push_back(dp_.iallgather_v(shard + (b - plan_.shard.begin) * elem_, at, shard_counts(state_.layout(), r),
                                         dtype_));
    at += r.size() * elem_;
  }
  ++gathers_;
}

void ZeroGather::point(const Slot& s) {
  const std::vector<TensorSpec>& t = state_.layout().tensors();
  const Unit& u = units_.at(s.unit);
  unsigned char* at = s.data;
  size_t k = 0;
  for (const Range& r : u.ranges) {
    for (; k < u.tensors.size() && t[u.tensors[k]].offset < r.end; ++k)
      model_.redirect_param(u.tensors[k], at + (t[u.tensors[k]].offset - r.begin) * elem_);
    at += r.size() * elem_;
  }
}

void ZeroGather::settle(Slot& s) {
  for (RequestPtr& r : s.pending) r->wait();
  s.pending.clear();
  point(s);
}

ZeroGather::Slot* ZeroGather::holding(int unit) {
  for (Slot& s : slots_)
    if (s.unit == unit) return &s;
  return nullptr;
}

void ZeroGather::need(int a, int b) {
  if (b == a) b = -1;
  auto other = [&](Slot* s) { return s == &slots_[0] ? &slots_[1] : &slots_[0]; };
  Slot* sa = holding(a);
  Slot* sb = b >= 0 ? holding(b) : nullptr;
  if (sa) ++hits_;
  else issue(*(sa = sb ? other(sb) : holding(-1) ? holding(-1) : other(holding(last_))), a);
  if (b >= 0) {
    if (sb) ++hits_;
    else issue(*(sb = other(sa)), b);
    settle(*sb);
  }
  settle(*sa);
  if (last_ >= 0) descending_ = a <= last_;  // equal: the head, its forward and then its backward
  last_ = a;
  if (b >= 0) return;  // both buffers in use
  // Prefetch the next unit into the other buffer, whose unit is done. In backward the embedding reads nothing.
  const int next = descending_ ? a - 1 : a + 1;
  if (units_.count(next) && !(descending_ && next == 0) && !holding(next)) issue(*other(sa), next);
}

void ZeroGather::invalidate() {
  for (Slot& s : slots_) {
    for (RequestPtr& r : s.pending) r->wait();
    s.pending.clear();
    s.unit = -1;
  }
  last_ = -1;
  descending_ = false;
}

}  // namespace gt
