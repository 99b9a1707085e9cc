// The whole model's gradient (every parameter) against central finite differences of the loss, in double,
// on a tiny config. Also: initialisation is a pure function of the global index (a TP shard draws exactly
// the values of the unsharded tensor).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "src/model/gpt.hpp"
#include "tests/model/model_test_util.hpp"

using namespace modeltest;

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

}  // namespace

TEST(ModelGradient, EveryParameterMatchesFiniteDifferences) {
  const gt::ModelConfig cfg = tiny_model();
  const int B = 2;
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::GPT<double> model(cfg, 7, B, whole, gt::TensorParallel{}, 1);
  expect_gradients_match_finite_differences(model, random_batch(B * cfg.seq_len, cfg.vocab_size, 11));
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
