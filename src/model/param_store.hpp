#pragma once
// All parameters of a rank in one flat buffer, all gradients in a second, with named tensors as ranges of
// both. Each tensor knows its *global* shape and which slice of it this rank holds (tensor-parallel split
// along one dimension, or replicated), so that initialisation, checkpoints and norms can work in global
// coordinates. Later work (ZeRO, bucketing) treats ranges of the flat store as shards.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kokkos_compat.hpp"

namespace gt {

enum class Init { Normal, Zeros, Ones };

struct TensorSpec {
  std::string name;                  // "h.3.attn.qkv.w"
  std::vector<int64_t> global_shape;
  int split_dim = -1;                // dimension split across TP ranks; -1: replicated on every TP rank
  int64_t split_start = 0;           // this rank's start along split_dim
  int64_t split_len = 0;             // this rank's extent along split_dim
  Init init = Init::Zeros;
  double std = 0.0;                  // for Init::Normal
  bool decay = false;                // AdamW weight decay applies
  int unit = 0;                      // forward-order unit: 0 embedding, 1..L blocks, L+1 head; for bucketing
  size_t offset = 0;                 // into the flat buffers
  size_t size = 0;                   // local elements

  std::vector<int64_t> local_shape() const;
  std::vector<int64_t> local_start() const;  // hyperslab start in global coordinates
  int64_t global_size() const;
  // Global row-major index of local element i.
  int64_t global_index(int64_t local_i) const;
};

template <class T>
class ParamStore {
 public:
  // Adds a tensor; call finalize() once all are added.
  void add(TensorSpec spec);
  void finalize();  // allocates params and grads (grads zeroed), fixes offsets
  // Fills parameters on the host from the pure init function, then copies to the device.
  void initialize(uint64_t seed);

  const std::vector<TensorSpec>& tensors() const { return specs_; }
  const TensorSpec& spec(const std::string& name) const;
  bool has(const std::string& name) const;
  T* param(const std::string& name) { return params_.data() + spec(name).offset; }
  T* grad(const std::string& name) { return grads_.data() + spec(name).offset; }
  T* params() { return params_.data(); }
  T* grads() { return grads_.data(); }
  size_t size() const { return total_; }
  void zero_grads();
  // Moves the gradients into caller-owned memory of size() elements (e.g. the DP communicator's registered
  // region, where the shm all-reduce needs no copies); the memory must outlive the store. Values are kept.
  void adopt_grads(T* memory);

  DeviceView<T>& params_view() { return params_; }
  DeviceView<T>& grads_view() { return grads_; }

 private:
  std::vector<TensorSpec> specs_;
  size_t total_ = 0;
  DeviceView<T> params_, grads_;
};

}  // namespace gt
