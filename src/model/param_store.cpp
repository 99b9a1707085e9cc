#include "src/model/param_store.hpp"

namespace gt {

template <class T>
void ParamStore<T>::allocate(uint64_t seed) {
  own_params_ = DeviceView<T>("params", layout_.size());
  own_grads_ = DeviceView<T>("grads", layout_.size());  // Kokkos zero-initialises
  auto host = Kokkos::create_mirror_view(own_params_);
  initial_params(layout_, seed, host.data());
  Kokkos::deep_copy(own_params_, host);
  bind(own_params_.data(), own_grads_.data());
}

template <class T>
void ParamStore<T>::zero_grads() {
  Kokkos::deep_copy(DeviceView<T>(grads_, layout_.size()), T(0));
}

template class ParamStore<float>;
template class ParamStore<double>;

}  // namespace gt
