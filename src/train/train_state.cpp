#include "src/train/train_state.hpp"

#include <cstring>

#include "kernels/elementwise.hpp"
#include "src/core/error.hpp"

namespace gt {

bool owner(const TensorSpec& s, const Grid& grid) {
  return (s.split_dim >= 0 || grid.tp_rank() == 0) && s.tied_to_stage < 0;
}

// Storage of one buffer: a Kokkos allocation in the buffer's memory space, or memory owned outside.
struct TrainState::Storage {
  Kokkos::View<unsigned char*, mem_space> device;
  Kokkos::View<unsigned char*, host_space> host;
};

TrainState::TrainState(TensorLayout layout, Precision working, uint64_t seed)
    : layout_(std::move(layout)), working_(working) {
  const Range all{0, layout_.size()};
  add_buffer("params", working_dtype(working));
  if (working != Precision::F32) add_buffer("master", DType::F32);
  add_buffer("grads", DType::F32);
  add_buffer("adam_m", DType::F32);
  add_buffer("adam_v", DType::F32);
  DeviceView<float> p(master(), layout_.size());
  auto host = Kokkos::create_mirror_view(p);
  initial_params(layout_, seed, host.data());
  Kokkos::deep_copy(p, host);
  refresh_params(all);
}

void TrainState::refresh_params(Range r) {
  if (working_ == Precision::F32 || r.size() == 0) return;
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

StateBuffer& TrainState::buffer(const std::string& name) {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) throw Error("train state: no buffer '" + name + "'");
  return it->second;
}

void TrainState::zero_grads() { Kokkos::deep_copy(DeviceView<float>(grads(), layout_.size()), 0.0f); }

void TrainState::move_grads_to(float* memory) {
  DeviceView<float> external(memory, layout_.size());  // unmanaged: the owner frees it
  Kokkos::deep_copy(external, DeviceView<float>(grads(), layout_.size()));
  storage_["grads"] = std::make_unique<Storage>();
  buffer("grads").data = memory;
}

size_t TrainState::bytes() const {
  size_t n = 0;
  for (const auto& [name, b] : buffers_) n += b.bytes;
  return n;
}

}  // namespace gt
