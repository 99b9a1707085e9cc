#include "src/model/param_store.hpp"

#include "src/core/error.hpp"
#include "src/model/init.hpp"

namespace gt {

std::vector<int64_t> TensorSpec::local_shape() const {
  std::vector<int64_t> s = global_shape;
  if (split_dim >= 0) s[split_dim] = split_len;
  return s;
}

std::vector<int64_t> TensorSpec::local_start() const {
  std::vector<int64_t> s(global_shape.size(), 0);
  if (split_dim >= 0) s[split_dim] = split_start;
  return s;
}

int64_t TensorSpec::global_size() const {
  int64_t n = 1;
  for (int64_t d : global_shape) n *= d;
  return n;
}

int64_t TensorSpec::global_index(int64_t i) const {
  if (split_dim < 0) return i;
  // Decompose the local index over the local shape, shift the split dimension, recompose globally.
  const std::vector<int64_t> ls = local_shape();
  int64_t g = 0, stride = 1;
  for (int d = static_cast<int>(ls.size()) - 1; d >= 0; --d) {
    int64_t coord = i % ls[d];
    i /= ls[d];
    if (d == split_dim) coord += split_start;
    g += coord * stride;
    stride *= global_shape[d];
  }
  return g;
}

template <class T>
void ParamStore<T>::add(TensorSpec s) {
  if (has(s.name)) throw Error("parameter store: duplicate tensor '" + s.name + "'");
  if (s.split_dim < 0) s.split_len = 0;
  int64_t n = 1;
  for (int64_t d : s.local_shape()) n *= d;
  s.size = static_cast<size_t>(n);
  specs_.push_back(std::move(s));
}

template <class T>
void ParamStore<T>::finalize() {
  total_ = 0;
  for (auto& s : specs_) {
    s.offset = total_;
    total_ += s.size;
  }
  params_ = DeviceView<T>("params", total_);
  grads_ = DeviceView<T>("grads", total_);  // Kokkos zero-initialises
}

template <class T>
void ParamStore<T>::initialize(uint64_t seed) {
  auto host = Kokkos::create_mirror_view(params_);
  for (const auto& s : specs_) {
    const uint64_t name_hash = fnv1a64(s.name);
    T* p = host.data() + s.offset;
    for (size_t i = 0; i < s.size; ++i) {
      switch (s.init) {
        case Init::Zeros: p[i] = T(0); break;
        case Init::Ones: p[i] = T(1); break;
        case Init::Normal:
          p[i] = static_cast<T>(s.std * normal_at(seed, name_hash, static_cast<uint64_t>(s.global_index(i))));
          break;
      }
    }
  }
  Kokkos::deep_copy(params_, host);
}

template <class T>
const TensorSpec& ParamStore<T>::spec(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return s;
  throw Error("parameter store: no tensor '" + name + "'");
}

template <class T>
bool ParamStore<T>::has(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return true;
  return false;
}

template <class T>
void ParamStore<T>::zero_grads() {
  Kokkos::deep_copy(grads_, T(0));
}

template <class T>
void ParamStore<T>::adopt_grads(T* memory) {
  DeviceView<T> external(memory, total_);  // unmanaged: the owner frees it
  Kokkos::deep_copy(external, grads_);
  grads_ = external;
}

template class ParamStore<float>;
template class ParamStore<double>;

}  // namespace gt
