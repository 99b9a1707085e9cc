// The whole model's gradient (every parameter) against central finite differences of the loss, in double,
// on a tiny config. Also: initialisation is a pure function of the global index (a TP shard draws exactly
// the values of the unsharded tensor).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "src/model/gpt.hpp"

namespace {

gt::ModelConfig tiny_model() {
  gt::ModelConfig m;
  m.n_layer = 2;
  m.d_model = 16;
  m.n_head = 2;
  m.seq_len = 6;
  m.vocab_size = 24;
  m.init_std = 0.3;  // larger than GPT-2's 0.02 so that every path carries a gradient well above round-off
  return m;
}

struct Batch {
  std::vector<int32_t> in, tgt;
};

Batch random_batch(int B, int T, int V, unsigned seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (int i = 0; i < B * T; ++i) {
    b.in.push_back(int32_t(rng() % V));
    b.tgt.push_back(int32_t(rng() % V));
  }
  return b;
}

// The store's flat device buffers as views, and host copies of them (Cabana's pattern: on a host build the
// "copy" is the buffer itself).
template <class T>
Kokkos::View<T*, gt::mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> device_view(T* p, size_t n) {
  return Kokkos::View<T*, gt::mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(p, n);
}
template <class T>
auto host_params(gt::ParamStore<T>& st) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(st.params(), st.size()));
}
// One parameter element set on the device.
void set_param(gt::ParamStore<double>& st, size_t i, double v) {
  Kokkos::deep_copy(Kokkos::subview(device_view(st.params(), st.size()), i), v);
}

double loss_of(gt::GPT<double>& model, const Batch& b) {
  model.set_tokens(0, b.in.data(), b.tgt.data());
  model.forward(0, false, 0.0);
  return model.take_loss_sum() / double(b.in.size());
}

}  // namespace

TEST(ModelGradient, EveryParameterMatchesFiniteDifferences) {
  const gt::ModelConfig cfg = tiny_model();
  const int B = 2;
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::GPT<double> model(cfg, 7, B, whole, gt::TensorParallel{}, 1);
  // Break the symmetry of the unit LayerNorm gains and zero biases so their gradients are exercised fully.
  {
    std::mt19937 rng(3);
    std::normal_distribution<double> nd(0.0, 0.2);
    auto p = host_params(model.store());
    for (const auto& s : model.store().tensors())
      if (s.init != gt::Init::Normal)
        for (size_t i = 0; i < s.size; ++i) p(s.offset + i) += nd(rng);
    Kokkos::deep_copy(device_view(model.store().params(), model.store().size()), p);
  }
  const Batch b = random_batch(B, cfg.seq_len, cfg.vocab_size, 11);

  model.store().zero_grads();
  model.set_tokens(0, b.in.data(), b.tgt.data());
  model.forward(0, true, 1.0 / double(b.in.size()));
  (void)model.take_loss_sum();  // restart the accumulator before the finite differences read it
  model.backward(0);
  const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                     device_view(model.store().grads(), model.store().size()));

  const auto p = host_params(model.store());  // the unperturbed values
  const double h = 1e-5;
  for (const auto& s : model.store().tensors()) {
    double num = 0, den_a = 0, den_b = 0;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      const double keep = p(i);
      set_param(model.store(), i, keep + h);
      const double lp = loss_of(model, b);
      set_param(model.store(), i, keep - h);
      const double lm = loss_of(model, b);
      set_param(model.store(), i, keep);
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

TEST(ModelInit, TensorParallelShardsDrawTheUnshardedValues) {
  gt::ModelConfig cfg = tiny_model();
  cfg.n_head = 4;
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::ParamStore<float> full(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, 0, 1), 1));
  full.allocate(99);
  for (int tp = 2; tp <= 4; tp *= 2)
    for (int r = 0; r < tp; ++r) {
      gt::ParamStore<float> shard(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, r, tp), 1));
      shard.allocate(99);
      const auto sp = host_params(shard), fp = host_params(full);
      for (const auto& s : shard.tensors()) {
        const auto& f = full.spec(s.name);
        for (size_t i = 0; i < s.size; ++i)
          ASSERT_EQ(sp(s.offset + i), fp(f.offset + size_t(s.global_index(int64_t(i)))))
              << s.name << " tp=" << tp << " rank=" << r << " element " << i;
      }
    }
}

TEST(ModelInit, FollowsGpt2Statistics) {
  gt::ModelConfig cfg;
  cfg.n_layer = 4; cfg.d_model = 128; cfg.n_head = 4; cfg.seq_len = 16; cfg.vocab_size = 512;
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::ParamStore<float> st(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, 0, 1), 1));
  st.allocate(5);
  const auto p = host_params(st);
  auto stddev = [&](const std::string& name) {
    const auto& s = st.spec(name);
    double m = 0, q = 0;
    for (size_t i = 0; i < s.size; ++i) m += p(s.offset + i);
    m /= double(s.size);
    for (size_t i = 0; i < s.size; ++i) q += std::pow(p(s.offset + i) - m, 2);
    return std::sqrt(q / double(s.size));
  };
  EXPECT_NEAR(stddev("wte"), 0.02, 0.001);
  EXPECT_NEAR(stddev("h.0.mlp.fc.w"), 0.02, 0.001);
  EXPECT_NEAR(stddev("h.1.attn.proj.w"), 0.02 / std::sqrt(2.0 * cfg.n_layer), 0.001);
  EXPECT_EQ(p(st.spec("h.0.ln_1.w").offset), 1.0f);
  EXPECT_EQ(p(st.spec("h.0.mlp.fc.b").offset), 0.0f);
}
