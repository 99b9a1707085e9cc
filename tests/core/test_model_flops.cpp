// The one FLOPs count (src/core/model_flops.hpp) against two independent references:
//   - a hand count: the forward products of one token written out one by one (2 FLOPs per multiply-add),
//     times 3 for forward + backward;
//   - the model's own tensor list: N_matmul as the sum of the weights the GPT feeds to matrix products
//     (model_tensor_specs: wte and every ".w" but the layer norms' gains), so a linear layer added to the model
//     and not to the count fails here.
// And the planner's model_flops_per_step is that count times the step's tokens, so the planner's MFU and the
// run's agree. Tolerance: the sums are of integers below 2^53, so equality holds up to the rounding of the
// products, a relative 1e-15.
#include <gtest/gtest.h>

#include "src/core/model_flops.hpp"
#include "src/model/gpt.hpp"
#include "src/plan/step_time.hpp"

namespace {

double hand_count(double L, double h, double T, double V) {
  double fwd = 0;
  for (int l = 0; l < L; ++l) {
    fwd += 2 * h * (3 * h);  // x -> q, k, v
    fwd += 2 * T * h;        // scores: the token's query against T keys (all heads: h multiply-adds per key)
    fwd += 2 * T * h;        // values: T probabilities times T value rows
    fwd += 2 * h * h;        // attention output projection
    fwd += 2 * h * (4 * h);  // MLP up
    fwd += 2 * (4 * h) * h;  // MLP down
  }
  fwd += 2 * h * V;  // the tied head: logits
  return 3 * fwd;
}

void expect_rel(double got, double want) { EXPECT_NEAR(got, want, 1e-15 * want) << got << " vs " << want; }

TEST(ModelFlops, MatchesTheHandCount) {
  expect_rel(gt::gpt_flops_per_token(2, 64, 32, 256), hand_count(2, 64, 32, 256));
  expect_rel(gt::gpt_flops_per_token(6, 384, 256, 50304), hand_count(6, 384, 256, 50304));
  expect_rel(gt::gpt_flops_per_token(12, 768, 1024, 50257), hand_count(12, 768, 1024, 50257));
}

TEST(ModelFlops, MatmulParamsAreTheModelsMatrixWeights) {
  for (int L : {1, 3}) {
    gt::ModelConfig m;
    m.n_layer = L, m.d_model = 48, m.n_head = 4, m.seq_len = 16, m.vocab_size = 96;
    const gt::StageLayout whole{0, 1, 0, L};
    double matmul = 0;
    for (const gt::TensorSpec& s : gt::model_tensor_specs(m, whole, 0, 1)) {
      const bool weight = s.name.size() > 2 && s.name.compare(s.name.size() - 2, 2, ".w") == 0;
      if (s.name == "wte" || (weight && s.name.find("ln_") == std::string::npos)) matmul += double(s.global_size());
    }
    expect_rel(gt::gpt_matmul_params(L, m.d_model, m.vocab_size), matmul);
    expect_rel(gt::gpt_flops_per_token(m), 6 * matmul + 12.0 * L * m.seq_len * m.d_model);
  }
}

TEST(ModelFlops, PlannerCountsTheSame) {
  const gt::plan::ModelShape m{12, 768, 12, 1024, 50257};
  const long B = 8;
  expect_rel(gt::plan::model_flops_per_step(m, B), double(B) * 1024 * gt::gpt_flops_per_token(12, 768, 1024, 50257));
  // Narayanan et al. 2021, eq. 3 without recompute, as the paper writes it
  const double s = 1024, h = 768, L = 12, V = 50257;
  expect_rel(gt::plan::model_flops_per_step(m, B), 72.0 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h)));
}

}  // namespace
