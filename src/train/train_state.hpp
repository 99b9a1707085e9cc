#pragma once
// TrainState: every flat buffer a rank trains with, over one TensorLayout. The standard buffers:
//   params   working parameters the model computes with (the run's working type)
//   master   fp32 parameters the optimizer updates (only when the working type is not fp32; else = params)
//   grads    fp32 gradient accumulation buffer (micro-batches accumulate here, the DP all-reduce sums it)
//   adam_m, adam_v   AdamW moments, fp32
// Later features add their own (masks, error-feedback residuals) with add_buffer(). Each buffer has its own
// element type and memory space; all have layout().size() elements, so a tensor or a DP shard
// (layout().shard_range) is the same element range in every one.
#include <map>
#include <memory>
#include <string>

#include "kernels/kokkos_compat.hpp"
#include "src/comm/comm.hpp"
#include "src/core/error.hpp"
#include "src/grid/grid.hpp"
#include "src/model/tensor_layout.hpp"

namespace gt {

enum class MemSpace { Device, Host };  // Host: e.g. optimizer state offloaded to CPU memory on GPU builds

struct StateBuffer {
  std::string name;
  DType dtype = DType::F32;
  MemSpace space = MemSpace::Device;
  void* data = nullptr;  // extent.size() elements of dtype
  size_t bytes = 0;
  // The flat elements this buffer holds: element i (extent.begin <= i < extent.end) is data[i - extent.begin].
  // All of the layout, or one DP shard (ZeRO: moments, reduced gradients).
  Range extent;
};

// Whether this rank's copy of a tensor is the one that counts for the global model within its model-parallel
// group: TP-split tensors on every TP rank (each holds a distinct slice), replicated ones on TP rank 0, a tied
// copy (the head's wte off stage 0) never. Global norms count owned elements once; checkpoints and gathers
// take owned elements from DP rank 0.
bool owner(const TensorSpec& tensor, const Grid& grid);

class TrainState {
 public:
  // Allocates the standard buffers (zeroed) and fills the parameters from the pure init function.
  TrainState(TensorLayout layout, DType working, uint64_t seed);
  ~TrainState();
  TrainState(const TrainState&) = delete;
  TrainState& operator=(const TrainState&) = delete;

  const TensorLayout& layout() const { return layout_; }
  DType working_dtype() const { return working_; }

  // A new zeroed buffer of layout().size() elements; names are unique.
  StateBuffer& add_buffer(const std::string& name, DType dtype, MemSpace space = MemSpace::Device);
  // A new zeroed buffer of only the elements `extent` (a DP shard: ZeRO).
  StateBuffer& add_buffer(const std::string& name, DType dtype, MemSpace space, Range extent);
  // Replaces a buffer by a zeroed one holding only `extent` (ZeRO-1: the AdamW moments of this rank's shard).
  void shard_buffer(const std::string& name, Range extent);
  bool has_buffer(const std::string& name) const { return buffers_.count(name) > 0; }
  StateBuffer& buffer(const std::string& name);
  // The buffer's elements as T*; throws if the buffer does not hold T.
  template <class T> T* data(const std::string& name);

  void* params() { return buffer("params").data; }
  float* master() { return data<float>(has_buffer("master") ? "master" : "params"); }
  float* grads() { return data<float>("grads"); }
  float* adam_m() { return data<float>("adam_m"); }
  float* adam_v() { return data<float>("adam_v"); }
  void zero_grads();
  // Moves the gradient buffer into caller-owned memory of layout().size() floats (the DP communicator's
  // registered region, where the shm all-reduce needs no copies), keeping its values; the memory must outlive
  // the state. Pointers from grads() taken before are stale.
  void move_grads_to(float* memory);
  // Bytes of all buffers (the memory ledger).
  size_t bytes() const;

 private:
  struct Storage;
  TensorLayout layout_;
  DType working_;
  std::map<std::string, StateBuffer> buffers_;
  std::map<std::string, std::unique_ptr<Storage>> storage_;
};

template <class T>
T* TrainState::data(const std::string& name) {
  StateBuffer& b = buffer(name);
  if (b.dtype != dtype_of<T>()) throw Error("train state: buffer '" + name + "' does not hold the requested type");
  return static_cast<T*>(b.data);
}

}  // namespace gt
