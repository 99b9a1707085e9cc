#include "src/train/dp/zero_gather.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "src/core/error.hpp"

namespace gt {

ZeroGather::ZeroGather(TrainState& state, const ZeroPlan& plan, Comm& dp, size_t chunk_rows)
    : state_(state), plan_(plan), dp_(dp), dtype_(state.buffer(Buffer::Params).dtype),
      elem_(dtype_size(dtype_)), units_(unit_spans(state.layout(), chunk_rows)) {
  std::vector<size_t> sizes;
  for (const auto& [id, u] : units_) sizes.push_back(u.elems);
  std::sort(sizes.rbegin(), sizes.rend());
  slots_[0].cap = sizes.empty() ? 0 : sizes[0];
  slots_[1].cap = sizes.size() > 1 ? sizes[1] : 0;
  for (int i = 0; i < 2; ++i) {
    const Buffer id = i == 0 ? Buffer::Gather0 : Buffer::Gather1;
    slots_[i].data = static_cast<unsigned char*>(
        state.add_buffer(id, dtype_, MemSpace::Device, {0, slots_[i].cap}).data);
  }
}

ZeroGather::~ZeroGather() {
  for (Slot& s : slots_)
    for (RequestPtr& r : s.pending) r->wait();  // MPI must not write into freed buffers
}

void ZeroGather::issue(Slot& s, int unit) {
  for (RequestPtr& r : s.pending) r->wait();  // the slot's previous gather, if it was never used
  s.pending.clear();
  s.unit = unit;
  const unsigned char* shard = static_cast<const unsigned char*>(state_.buffer(Buffer::Params).data);
  unsigned char* at = s.data;
  if (shm_) {
    copy_from_peers(unit, at);
    ++gathers_;
    return;
  }
  for (const Range& r : units_.at(unit).ranges) {
    // This rank's piece of the range starts where its shard meets it (an empty piece still takes part).
    const size_t b = std::clamp(r.begin, plan_.shard.begin, plan_.shard.end);
    s.pending.push_back(dp_.iallgather_v(shard + (b - plan_.shard.begin) * elem_, at, shard_counts(state_.layout(), r),
                                         dtype_));
    at += r.size() * elem_;
  }
  ++gathers_;
}

// The unit's ranges from every rank's shard in the shared region, once that rank has published the current
// parameters (its version: the same invalidation count as ours).
void ZeroGather::copy_from_peers(int unit, unsigned char* at) {
  const TensorLayout& layout = state_.layout();
  for (const Range& r : units_.at(unit).ranges) {
    for (int k = 0; k < shm_->size(); ++k) {
      const Range sk = layout.shard_range(k);
      const size_t lo = std::max(r.begin, sk.begin), hi = std::min(r.end, sk.end);
      if (lo >= hi) continue;
      if (k != shm_->rank()) shm_->wait_params(k, "zero gather (shm)");
      std::memcpy(at + (lo - r.begin) * elem_, shm_->peer(k, buffer_name(Buffer::Params)) + (lo - sk.begin) * elem_, (hi - lo) * elem_);
    }
    at += r.size() * elem_;
  }
}

void ZeroGather::settle(Slot& s) {
  for (RequestPtr& r : s.pending) r->wait();
  s.pending.clear();
}

ZeroGather::Slot* ZeroGather::holding(int unit) {
  for (Slot& s : slots_)
    if (s.unit == unit) return &s;
  return nullptr;
}

// Two units at once (the head of a one-stage model and the embedding's wte): the larger buffer takes a unit
// that only fits there; otherwise a unit already gathered stays where it is.
void ZeroGather::place_two(int a, int b) {
  Slot* sa = holding(a);
  Slot* sb = holding(b);
  const bool keep_a = sa && fits(*other(sa), b);
  const bool keep_b = sb && fits(*other(sb), a);
  if (keep_a) sb = other(sa);
  else if (keep_b) sa = other(sb);
  else {
    const bool a_large = units_.at(a).elems >= units_.at(b).elems;
    sa = a_large ? &slots_[0] : &slots_[1];
    sb = other(sa);
  }
  for (auto [s, u] : {std::pair<Slot*, int>{sa, a}, {sb, b}}) {
    if (s->unit == u) ++hits_;
    else issue(*s, u);
  }
  settle(*sb);
  settle(*sa);
}

void ZeroGather::use(int a, int b) {
  if (b == a) b = -1;
  Slot* sa = holding(a);
  if (b >= 0) {
    place_two(a, b);
    sa = holding(a);
  } else if (sa) {
    ++hits_;
    settle(*sa);
  } else {
    // A free buffer, else the one the last unit does not use (its prefetch guessed wrong); the large one when
    // the unit fits nowhere else. The last unit is done, so either may be overwritten.
    sa = holding(-1) ? holding(-1) : holding(last_) ? other(holding(last_)) : &slots_[0];
    if (!fits(*sa, a)) sa = &slots_[0];
    issue(*sa, a);
    settle(*sa);
  }
  if (last_ != -1) descending_ = a <= last_;  // equal: the head, its forward and then its backward
  last_ = a;
  if (b >= 0) return;  // both buffers in use
  // Prefetch the next unit into the other buffer, whose unit is done, if it fits there (else it is gathered
  // when requested). In backward the embedding reads nothing.
  const int next = descending_ ? a - 1 : a + 1;
  if (units_.count(next) && !(descending_ && next == 0) && !holding(next) && fits(*other(sa), next))
    issue(*other(sa), next);
}

const void* ZeroGather::params(int u) {
  const Slot* s = holding(u);
  if (!s || !s->pending.empty()) throw Error("zero: the parameters of unit " + std::to_string(u) + " are read but not gathered");
  return s->data;
}

void ZeroGather::invalidate() {
  for (Slot& s : slots_) {
    for (RequestPtr& r : s.pending) r->wait();
    s.pending.clear();
    s.unit = -1;
  }
  last_ = -1;
  descending_ = false;
  if (shm_) shm_->publish_params();  // this rank's shard, as it is now, may be gathered by the peers
}

}  // namespace gt
