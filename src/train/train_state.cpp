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
  add_buffer("params", working_dtype(working), MemSpace::Device, e.working);
  if (working != Precision::FP32) add_buffer("master", DType::F32, MemSpace::Device, e.optimizer);
  if (e.full_grads) add_buffer("grads", DType::F32);
  add_buffer("adam_m", DType::F32, MemSpace::Device, e.optimizer);
  add_buffer("adam_v", DType::F32, MemSpace::Device, e.optimizer);
  // The working copy straight from the initial values (rounded once, as refresh_params rounds the master's
  // identical values), so a full working copy never waits on a full master.
  fill_initial(buffer("params"), seed);
  if (has_buffer("master")) fill_initial(buffer("master"), seed);
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
  const StateBuffer& m = buffer("master");
  const float* src = master() + (r.begin - m.extent.begin);
  const size_t at = r.begin - buffer("params").extent.begin;  // ZeRO-3: the working copy is a shard too
  if (working_ == Precision::BF16) convert(data<bf16_t>("params") + at, src, long(r.size()));
  else convert(data<fp16_t>("params") + at, src, long(r.size()));
}

TrainState::~TrainState() = default;

StateBuffer& TrainState::add_buffer(const std::string& name, DType dtype, MemSpace space) {
  return add_buffer(name, dtype, space, Range{0, layout_.size()});
}

void TrainState::shard_buffer(const std::string& name, Range extent) {
  const StateBuffer old = buffer(name);
  if (extent.begin == old.extent.begin && extent.end == old.extent.end) return;  // allocated as a shard already
  if (extent.begin < old.extent.begin || extent.end > old.extent.end)
    throw Error("train state: buffer '" + name + "' cannot be sharded to elements it does not hold");
  std::unique_ptr<Storage> keep = std::move(storage_[name]);  // the old values stay alive for the copy
  buffers_.erase(name);
  storage_.erase(name);
  StateBuffer& b = add_buffer(name, old.dtype, old.space, extent);
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

StateBuffer& TrainState::add_buffer(const std::string& name, DType dtype, MemSpace space, Range extent) {
  if (has_buffer(name)) throw Error("train state: duplicate buffer '" + name + "'");
  if (extent.begin > extent.end || extent.end > layout_.size())
    throw Error("train state: buffer '" + name + "' extent lies outside the layout");
  auto st = std::make_unique<Storage>();
  StateBuffer b;
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
  storage_[name] = std::move(st);
  return buffers_[name] = b;
}

void TrainState::remove_buffer(const std::string& name) {
  buffer(name);  // throws if there is none
  buffers_.erase(name);
  storage_.erase(name);
}

StateBuffer& TrainState::buffer(const std::string& name) {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) throw Error("train state: no buffer '" + name + "'");
  return it->second;
}

void TrainState::zero_grads() { Kokkos::deep_copy(DeviceView<float>(grads(), layout_.size()), 0.0f); }

void TrainState::move_buffer_to(const std::string& name, void* memory) {
  StateBuffer& b = buffer(name);
  DeviceView<unsigned char> external(static_cast<unsigned char*>(memory), b.bytes);  // unmanaged: the owner frees it
  Kokkos::deep_copy(external, DeviceView<unsigned char>(static_cast<unsigned char*>(b.data), b.bytes));
  storage_[name] = std::make_unique<Storage>();
  b.data = memory;
}

size_t TrainState::bytes() const {
  size_t n = 0;
  for (const auto& [name, b] : buffers_) n += b.bytes;
  return n;
}

}  // namespace gt
