#include "src/train/kv_replicas.hpp"

#include <algorithm>

#include "kernels/elementwise.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt {

Range checkpoint_range(const TensorSpec& s) { return owned_range(s); }

namespace {
// One all-reduce over the TP group with a slot per key/value head (tp / replicas of them): the last replica adds
// its rows into its head's slot, every replica takes the slot back.
void copy_tail(float* buf, Range extent, const TensorSpec& s, int tp_size, Comm& tp, DeviceView<float>& slots) {
  const size_t b = std::max(extent.begin, s.offset + size_t(s.tail_begin())), e = std::min(extent.end, s.offset + s.size);
  if (e <= b) return;  // no key/value row in this rank's extent (the same on every TP rank: same layout, same shard)
  const long n = long(e - b), heads = tp_size / s.replicas;
  if (slots.size() < size_t(heads * n)) slots = DeviceView<float>("kv_slots", size_t(heads * n));
  float* mine = slots.data() + s.split_start * n;
  fill(slots.data(), heads * n, 0.0f);
  float* rows = buf + (b - extent.begin);
  if (s.replica == s.replicas - 1) add_inplace(mine, rows, n);
  tp.allreduce(slots.data(), size_t(heads * n), DType::F32, ReduceOp::Sum);
  fill(rows, n, 0.0f);
  add_inplace(rows, mine, n);
}
}  // namespace

void copy_kv_from_last_replica(TrainState& state, const std::vector<Buffer>& buffers, Comm& tp) {
  DeviceView<float> slots;
  for (Buffer name : buffers) {
    if (!state.has_buffer(name)) continue;
    const Range extent = state.buffer(name).extent;
    for (const TensorSpec& s : state.layout().tensors())
      if (s.has_replicated_tail()) copy_tail(state.data<float>(name), extent, s, tp.size(), tp, slots);
  }
}

}  // namespace gt
