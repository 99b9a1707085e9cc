#include "src/model/param_store.hpp"

#include <vector>


namespace gt {

template <class T>
void ParamStore<T>::allocate(uint64_t seed) {
  own_params_ = DeviceView<T>("model_own_params", layout_.size());  // not a TrainState buffer: the model unbound
  own_grads_ = DeviceView<G>("model_own_grads", layout_.size());  // Kokkos zero-initialises
  auto host = Kokkos::create_mirror_view(own_params_);
  if constexpr (is_half_v<T>) {  // drawn in fp32 (the master values), rounded once to the storage type
    std::vector<float> p(layout_.size());
    initial_params(layout_, seed, p.data());
    for (size_t i = 0; i < p.size(); ++i) host(i) = T(p[i]);
  } else {
    initial_params(layout_, seed, host.data());
  }
  Kokkos::deep_copy(own_params_, host);
  bind(own_params_.data(), own_grads_.data());
}

template <class T>
void ParamStore<T>::zero_grads() {
  Kokkos::deep_copy(DeviceView<G>(grads_, layout_.size()), G(0));
}

template class ParamStore<float>;
template class ParamStore<double>;
template class ParamStore<bf16_t>;
template class ParamStore<fp16_t>;

}  // namespace gt
