#include "src/train/train_state.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/elementwise.hpp"
#include "src/core/error.hpp"

namespace gt {

bool owner(const TensorSpec& s, const Grid& grid) {
  return (s.split_dim >= 0 || grid.tp_rank() == 0) && s.tied_to_stage < 0;
}

Range owned_range(const TensorSpec& s) {
  const size_t end = s.has_replicated_tail() && s.replica < s.replicas - 1 ? s.offset + size_t(s.tail_begin()) : s.offset + s.size;
  return Range{s.offset, end};
}

// Storage of one buffer: a Kokkos allocation in the buffer's memory space, or memory owned outside.
struct TrainState::Storage {
  Kokkos::View<unsigned char*, mem_space> device;
  Kokkos::View<unsigned char*, host_space> host;
};

namespace {
StateExtents whole(const TensorLayout& l) { return {{0, l.size()}, {0, l.size()}, true}; }
}  // namespace

TrainState::TrainState(TensorLayout layout, Precision working, uint64_t seed)
    : TrainState(layout, working, seed, whole(layout)) {}

TrainState::TrainState(TensorLayout layout, Precision working, uint64_t seed, const StateExtents& e)
    : layout_(std::move(layout)), working_(working) {
  add_buffer(Buffer::Params, working_dtype(working), MemSpace::Device, e.working);
  if (working != Precision::FP32) add_buffer(Buffer::Master, DType::F32, MemSpace::Device, e.optimizer);
  if (e.full_grads) add_buffer(Buffer::Grads, DType::F32);
  add_buffer(Buffer::AdamM, DType::F32, MemSpace::Device, e.optimizer);
  add_buffer(Buffer::AdamV, DType::F32, MemSpace::Device, e.optimizer);
  // The working copy straight from the initial values (rounded once, as refresh_params rounds the master's
  // identical values), so a full working copy never waits on a full master.
  fill_initial(buffer(Buffer::Params), seed);
  if (has_buffer(Buffer::Master)) fill_initial(buffer(Buffer::Master), seed);
}

// The initial values of the buffer's elements in chunks of a small fp32 temporary (copied to the device, rounded
// there for a 16-bit buffer): no full-size staging, so the peak memory at start-up follows the extents.
void TrainState::fill_initial(const StateBuffer& b, uint64_t seed) {
  const size_t chunk = std::min<size_t>(size_t(1) << 20, b.extent.size());
  if (chunk == 0) return;
  DeviceView<float> dev("state_init_chunk", chunk);
  auto host = Kokkos::create_mirror_view(dev);
  for (size_t at = b.extent.begin; at < b.extent.end; at += chunk) {
    const Range r{at, std::min(at + chunk, b.extent.end)};
    initial_params(layout_, seed, host.data(), r);
    Kokkos::deep_copy(dev, host);
    const size_t off = r.begin - b.extent.begin;
    const long n = long(r.size());
    if (b.dtype == DType::BF16) convert(static_cast<bf16_t*>(b.data) + off, dev.data(), n);
    else if (b.dtype == DType::F16) convert(static_cast<fp16_t*>(b.data) + off, dev.data(), n);
    else convert(static_cast<float*>(b.data) + off, dev.data(), n);
  }
}

void TrainState::refresh_params(Range r) {
  if (working_ == Precision::FP32 || r.size() == 0) return;
  const StateBuffer& m = buffer(Buffer::Master);
  const float* src = master() + (r.begin - m.extent.begin);
  const size_t at = r.begin - buffer(Buffer::Params).extent.begin;  // ZeRO-3: the working copy is a shard too
  if (working_ == Precision::BF16) convert(data<bf16_t>(Buffer::Params) + at, src, long(r.size()));
  else convert(data<fp16_t>(Buffer::Params) + at, src, long(r.size()));
}

TrainState::~TrainState() = default;

StateBuffer& TrainState::add_buffer(Buffer id, DType dtype, MemSpace space) {
  return add_buffer(id, dtype, space, Range{0, layout_.size()});
}

void TrainState::shard_buffer(Buffer id, Range extent) {
  const StateBuffer old = buffer(id);
  if (extent.begin == old.extent.begin && extent.end == old.extent.end) return;  // allocated as a shard already
  if (extent.begin < old.extent.begin || extent.end > old.extent.end)
    throw Error("train state: buffer '" + old.name + "' cannot be sharded to elements it does not hold");
  std::unique_ptr<Storage> keep = std::move(storage_[id]);  // the old values stay alive for the copy
  buffers_.erase(id);
  storage_.erase(id);
  StateBuffer& b = add_buffer(id, old.dtype, old.space, extent);
  const size_t skip = (extent.begin - old.extent.begin) * dtype_size(old.dtype);
  using Bytes = Kokkos::View<unsigned char*, mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  if (b.bytes > 0) {
    if (old.space == MemSpace::Device)
      Kokkos::deep_copy(Bytes(static_cast<unsigned char*>(b.data), b.bytes),
                        Bytes(static_cast<unsigned char*>(old.data) + skip, b.bytes));
    else
      std::memcpy(b.data, static_cast<unsigned char*>(old.data) + skip, b.bytes);
  }
}

StateBuffer& TrainState::add_buffer(Buffer id, DType dtype, MemSpace space, Range extent) {
  const std::string name = buffer_name(id);
  if (has_buffer(id)) throw Error("train state: duplicate buffer '" + name + "'");
  if (!dtype_allowed(id, dtype, working_)) throw Error("train state: buffer '" + name + "' cannot hold this element type");
  if (extent.begin > extent.end || extent.end > layout_.size())
    throw Error("train state: buffer '" + name + "' extent lies outside the layout");
  auto st = std::make_unique<Storage>();
  StateBuffer b;
  b.id = id;
  b.name = name;
  b.dtype = dtype;
  b.space = space;
  b.extent = extent;
  b.bytes = extent.size() * dtype_size(dtype);
  if (space == MemSpace::Device) {
    st->device = Kokkos::View<unsigned char*, mem_space>("state_" + name, b.bytes);  // zero-initialised
    b.data = st->device.data();
  } else {
    st->host = Kokkos::View<unsigned char*, host_space>("state_" + name, b.bytes);
    b.data = st->host.data();
  }
  storage_[id] = std::move(st);
  return buffers_[id] = b;
}

void TrainState::remove_buffer(Buffer id) {
  buffer(id);  // throws if there is none
  buffers_.erase(id);
  storage_.erase(id);
}

StateBuffer& TrainState::buffer(Buffer id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) throw Error(std::string("train state: no buffer '") + buffer_name(id) + "'");
  return it->second;
}

void TrainState::zero_grads() { Kokkos::deep_copy(DeviceView<float>(grads(), layout_.size()), 0.0f); }

void TrainState::move_buffer_to(Buffer id, void* memory) {
  StateBuffer& b = buffer(id);
  DeviceView<unsigned char> external(static_cast<unsigned char*>(memory), b.bytes);  // unmanaged: the owner frees it
  Kokkos::deep_copy(external, DeviceView<unsigned char>(static_cast<unsigned char*>(b.data), b.bytes));
  storage_[id] = std::make_unique<Storage>();
  b.data = memory;
}

size_t TrainState::bytes() const {
  size_t n = 0;
  for (const auto& [id, b] : buffers_) n += b.bytes;
  return n;
}

}  // namespace gt
