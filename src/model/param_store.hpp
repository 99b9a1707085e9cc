#pragma once
// The model's named view of its parameters and gradients: two flat arrays over one TensorLayout. In training
// the arrays belong to the TrainState (bind()); a model used on its own (tests, benchmarks) allocates them
// (allocate()). Parameters in the storage type T; gradients in G = acc_t<T> (fp32 for the 16-bit types: the
// fp32 gradient buffer that micro-batches accumulate into).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"
#include "src/core/error.hpp"
#include "src/model/tensor_layout.hpp"

namespace gt {

template <class T>
class ParamStore {
 public:
  using G = acc_t<T>;
  ParamStore() = default;
  explicit ParamStore(TensorLayout layout) : layout_(std::move(layout)) {}

  // Own storage: parameters initialised from the pure init function, gradients zero.
  void allocate(uint64_t seed);
  // Storage owned elsewhere (layout().size() elements each, outliving the store).
  void bind(T* params, G* grads) { params_ = params; grads_ = grads; }

  const TensorLayout& layout() const { return layout_; }
  const std::vector<TensorSpec>& tensors() const { return layout_.tensors(); }
  const TensorSpec& spec(const std::string& name) const { return layout_.spec(name); }
  bool has(const std::string& name) const { return layout_.has(name); }
  // ZeRO-3: the bound parameter buffer holds only a DP shard; tensor k's parameters are then read from
  // redirect(k) (a gathered copy) instead. Null entries are tensors not gathered at the moment.
  void redirect(size_t tensor_index, T* at) { set_redirect(redirect_, tensor_index, at); }
  T* param(const std::string& name) {
    return lookup(redirect_, params_, name, "parameter", "read while not gathered (ZeRO-3)");
  }
  // ZeRO-2/3 without the full gradient buffer: tensor k's gradients go to redirect_grad(k) (a unit's staging
  // buffer, src/train/dp/zero_grads.hpp); null entries are tensors whose gradients may not be written now.
  void redirect_grad(size_t tensor_index, G* at) { set_redirect(grad_redirect_, tensor_index, at); }
  G* grad(const std::string& name) {
    return lookup(grad_redirect_, grads_, name, "gradient of", "written while its unit is not staged (ZeRO)");
  }
  T* params() { return params_; }
  G* grads() { return grads_; }
  size_t size() const { return layout_.size(); }
  void zero_grads();

 private:
  TensorLayout layout_;
  DeviceView<T> own_params_;  // empty when bound
  DeviceView<G> own_grads_;
  T* params_ = nullptr;
  G* grads_ = nullptr;
  std::vector<T*> redirect_;  // per tensor; empty: no redirection
  std::vector<G*> grad_redirect_;

  // One rule for both redirections: the first entry set turns the table on (every other tensor null), and a
  // lookup then reads the table, a null entry being an error.
  template <class P>
  void set_redirect(std::vector<P*>& table, size_t tensor_index, P* at) {
    if (table.empty()) table.assign(layout_.tensors().size(), nullptr);
    table[tensor_index] = at;
  }
  template <class P>
  P* lookup(const std::vector<P*>& table, P* base, const std::string& name, const char* what, const char* why) {
    const TensorSpec& s = spec(name);
    if (table.empty()) return base + s.offset;
    P* p = table[static_cast<size_t>(&s - layout_.tensors().data())];
    if (!p) throw Error(std::string(what) + " '" + name + "' " + why);  // built only on the error path
    return p;
  }
};

}  // namespace gt
