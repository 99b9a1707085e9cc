#pragma once
// What the model tests share (test_model_grad.cpp: GPT-2, test_llama.cpp: Llama): the parameter store's flat
// buffers as views, a random batch, the loss of a GPT<double>, and the finite-difference check of every
// parameter's gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "src/model/gpt.hpp"

namespace modeltest {

// The store's flat device buffers as views, and host copies of them (on a host build the "copy" is the buffer).
template <class T>
Kokkos::View<T*, gt::mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> device_view(T* p, size_t n) {
  return Kokkos::View<T*, gt::mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(p, n);
}
template <class T>
auto host_params(gt::ParamStore<T>& st) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(st.params(), st.size()));
}

struct Batch {
  std::vector<int32_t> in, tgt;
};
// n input and n target tokens drawn uniformly from [0, V).
inline Batch random_batch(int n, int V, unsigned seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (int i = 0; i < n; ++i) {
    b.in.push_back(int32_t(rng() % V));
    b.tgt.push_back(int32_t(rng() % V));
  }
  return b;
}

// The mean token loss of the batch (micro-batch slot 0, no gradient).
inline double loss_of(gt::GPT<double>& model, const Batch& b) {
  model.set_tokens(0, b.in.data(), b.tgt.data());
  model.forward(0, false, 0.0);
  return model.take_loss_sum() / double(b.in.size());
}

// Every parameter's gradient against central finite differences of the loss (h = 1e-5, in double), tensor by
// tensor: the relative error of the whole tensor's gradient vector below 1e-6 (the differences' truncation error
// is O(h^2) ~ 1e-10 relative, round-off ~ 1e-16 / h ~ 1e-11), and no tensor without any gradient. The tensors that
// do not start from a normal draw (LayerNorm gains 1, biases 0) are perturbed first (std 0.2), so that their
// gradients are exercised fully and not hidden by the symmetry of the unit gains and zero biases.
inline void expect_gradients_match_finite_differences(gt::GPT<double>& model, const Batch& b) {
  auto dev = device_view(model.store().params(), model.store().size());
  {
    std::mt19937 rng(3);
    std::normal_distribution<double> nd(0.0, 0.2);
    auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dev);
    for (const auto& s : model.store().tensors())
      if (s.init != gt::Init::Normal)
        for (size_t i = 0; i < s.size; ++i) p(s.offset + i) += nd(rng);
    Kokkos::deep_copy(dev, p);
  }
  model.store().zero_grads();
  model.set_tokens(0, b.in.data(), b.tgt.data());
  model.forward(0, true, 1.0 / double(b.in.size()));
  (void)model.take_loss_sum();  // restart the accumulator before the finite differences read it
  model.backward(0);
  const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                     device_view(model.store().grads(), model.store().size()));
  const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dev);  // the unperturbed values
  const double h = 1e-5;
  for (const auto& s : model.store().tensors()) {
    double num = 0, den_a = 0, den_b = 0;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      const double keep = p(i);
      Kokkos::deep_copy(Kokkos::subview(dev, i), keep + h);
      const double lp = loss_of(model, b);
      Kokkos::deep_copy(Kokkos::subview(dev, i), keep - h);
      const double lm = loss_of(model, b);
      Kokkos::deep_copy(Kokkos::subview(dev, i), keep);
      const double fd = (lp - lm) / (2 * h);
      num += (g(i) - fd) * (g(i) - fd);
      den_a += g(i) * g(i);
      den_b += fd * fd;
    }
    const double rel = std::sqrt(num) / std::max(std::sqrt(std::max(den_a, den_b)), 1e-30);
    EXPECT_LT(rel, 1e-6) << s.name << ": |grad| " << std::sqrt(den_a) << ", |fd| " << std::sqrt(den_b);
    EXPECT_GT(std::sqrt(den_a), 1e-8) << s.name << " has no gradient at all";
  }
}

}  // namespace modeltest
