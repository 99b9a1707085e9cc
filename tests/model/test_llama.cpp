// model.arch = llama (src/model/llama_block.cpp) in double on one rank:
// - the loss equals a naive double reference written here from the definitions (RMSNorm, the grouped qkv weight
//   (NKV, G+2, hd, C), RoPE on halves with angle t theta^(-2i/hd), causal grouped-query softmax attention, SwiGLU
//   on (2, F, C), untied lm_head, mean cross-entropy): 1e-12 relative (both in double; the model's sums run in other
//   orders and its fast paths are the double ones);
// - every parameter's gradient against central finite differences of the model's loss (1e-6, as test_model);
// - TP shards draw the unsharded values (the grouped qkv weight split by key/value heads);
// - the configurations the block cannot run are refused with one line naming the keys.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/model/gpt.hpp"
#include "tests/model/model_test_util.hpp"

using namespace modeltest;

namespace {

using Vec = std::vector<double>;

gt::ModelConfig llama_model() {
  gt::ModelConfig m;
  m.arch = "llama";
  m.n_layer = 2;
  m.d_model = 16;
  m.n_head = 4;  // hd = 4
  m.n_kv_head = 2;
  m.ffn_hidden = 12;
  m.seq_len = 7;
  m.vocab_size = 24;
  m.rope_theta = 100.0;  // angles far from 0 within 7 positions
  m.init_std = 0.3;      // every path carries a gradient well above round-off
  return m;
}

// ---- the naive reference ----

Vec rms(const Vec& x, const double* w, double eps) {
  double s = 0;
  for (double v : x) s += v * v;
  const double r = 1.0 / std::sqrt(s / double(x.size()) + eps);
  Vec y(x.size());
  for (size_t c = 0; c < x.size(); ++c) y[c] = x[c] * r * w[c];
  return y;
}
// y = W x, W (rows, x.size()) row-major
Vec matvec(const double* W, int rows, const Vec& x) {
  Vec y(size_t(rows), 0.0);
  for (int r = 0; r < rows; ++r)
    for (size_t c = 0; c < x.size(); ++c) y[size_t(r)] += W[size_t(r) * x.size() + c] * x[c];
  return y;
}
void rope(double* v, int t, int hd, double theta) {
  for (int i = 0; i < hd / 2; ++i) {
    const double ang = t * std::pow(theta, -2.0 * i / hd), a = v[i], b = v[i + hd / 2];
    v[i] = a * std::cos(ang) - b * std::sin(ang);
    v[i + hd / 2] = b * std::cos(ang) + a * std::sin(ang);
  }
}

double reference_loss(const gt::ModelConfig& m, const std::map<std::string, const double*>& P, const Batch& bt, int B) {
  const int C = m.d_model, NH = m.n_head, NKV = m.n_kv_head, hd = C / NH, G = NH / NKV, F = m.ffn_hidden, T = m.seq_len;
  double total = 0;
  for (int b = 0; b < B; ++b) {
    std::vector<Vec> x(static_cast<size_t>(T));
    for (int t = 0; t < T; ++t) x[size_t(t)] = Vec(P.at("wte") + size_t(bt.in[size_t(b * T + t)]) * C,
                                                   P.at("wte") + size_t(bt.in[size_t(b * T + t)] + 1) * C);
    for (int l = 0; l < m.n_layer; ++l) {
      auto p = [&](const char* leaf) { return P.at("h." + std::to_string(l) + "." + leaf); };
      // q: NH hd, k and v: NKV hd
      std::vector<Vec> q(static_cast<size_t>(T)), k(static_cast<size_t>(T)), v(static_cast<size_t>(T));
      for (int t = 0; t < T; ++t) {
        const Vec y = matvec(p("attn.qkv.w"), NKV * (G + 2) * hd, rms(x[size_t(t)], p("attn_norm.w"), m.norm_eps));
        q[size_t(t)].assign(size_t(NH) * hd, 0);
        k[size_t(t)].assign(size_t(NKV) * hd, 0);
        v[size_t(t)].assign(size_t(NKV) * hd, 0);
        for (int j = 0; j < NKV; ++j)
          for (int d = 0; d < hd; ++d) {
            for (int g = 0; g < G; ++g) q[size_t(t)][size_t((j * G + g) * hd + d)] = y[size_t((j * (G + 2) + g) * hd + d)];
            k[size_t(t)][size_t(j * hd + d)] = y[size_t((j * (G + 2) + G) * hd + d)];
            v[size_t(t)][size_t(j * hd + d)] = y[size_t((j * (G + 2) + G + 1) * hd + d)];
          }
        for (int h = 0; h < NH; ++h) rope(&q[size_t(t)][size_t(h * hd)], t, hd, m.rope_theta);
        for (int j = 0; j < NKV; ++j) rope(&k[size_t(t)][size_t(j * hd)], t, hd, m.rope_theta);
      }
      for (int t = 0; t < T; ++t) {
        Vec att(size_t(NH) * hd, 0.0);
        for (int h = 0; h < NH; ++h) {
          const int j = h / G;
          Vec s(size_t(t) + 1);
          double mx = -INFINITY, sum = 0;
          for (int u = 0; u <= t; ++u) {
            double dot = 0;
            for (int d = 0; d < hd; ++d) dot += q[size_t(t)][size_t(h * hd + d)] * k[size_t(u)][size_t(j * hd + d)];
            s[size_t(u)] = dot / std::sqrt(double(hd));
            mx = std::max(mx, s[size_t(u)]);
          }
          for (auto& e : s) sum += (e = std::exp(e - mx));
          for (int u = 0; u <= t; ++u)
            for (int d = 0; d < hd; ++d) att[size_t(h * hd + d)] += s[size_t(u)] / sum * v[size_t(u)][size_t(j * hd + d)];
        }
        const Vec o = matvec(p("attn.proj.w"), C, att);
        for (int c = 0; c < C; ++c) x[size_t(t)][size_t(c)] += o[size_t(c)];
      }
      for (int t = 0; t < T; ++t) {
        const Vec gu = matvec(p("mlp.gate_up.w"), 2 * F, rms(x[size_t(t)], p("mlp_norm.w"), m.norm_eps));
        Vec hh(static_cast<size_t>(F));
        for (int f = 0; f < F; ++f) hh[size_t(f)] = gu[size_t(f)] / (1 + std::exp(-gu[size_t(f)])) * gu[size_t(F + f)];
        const Vec o = matvec(p("mlp.down.w"), C, hh);
        for (int c = 0; c < C; ++c) x[size_t(t)][size_t(c)] += o[size_t(c)];
      }
    }
    for (int t = 0; t < T; ++t) {
      const Vec z = matvec(P.at("lm_head.w"), m.vocab_size, rms(x[size_t(t)], P.at("norm_f.w"), m.norm_eps));
      double mx = -INFINITY, sum = 0;
      for (double e : z) mx = std::max(mx, e);
      for (double e : z) sum += std::exp(e - mx);
      total += std::log(sum) + mx - z[size_t(bt.tgt[size_t(b * T + t)])];
    }
  }
  return total / double(B * T);
}

}  // namespace

TEST(Llama, LossMatchesTheDoubleReference) {
  const gt::ModelConfig cfg = llama_model();
  const int B = 2;
  gt::GPT<double> model(cfg, 5, B, gt::StageLayout{0, 1, 0, cfg.n_layer}, gt::TensorParallel{}, 1);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                  device_view(model.store().params(), model.store().size()));
  {  // gains away from 1 so that a missing norm weight shows
    std::mt19937 rng(3);
    std::normal_distribution<double> nd(0.0, 0.2);
    for (const auto& s : model.store().tensors())
      if (s.init != gt::Init::Normal)
        for (size_t i = 0; i < s.size; ++i) host(s.offset + i) += nd(rng);
    Kokkos::deep_copy(device_view(model.store().params(), model.store().size()), host);
  }
  std::map<std::string, const double*> P;
  for (const auto& s : model.store().tensors()) P[s.name] = host.data() + s.offset;
  const Batch b = random_batch(B * cfg.seq_len, cfg.vocab_size, 17);
  const double ref = reference_loss(cfg, P, b, B), got = loss_of(model, b);
  EXPECT_NEAR(got, ref, 1e-12 * std::fabs(ref));
  EXPECT_EQ(P.count("wpe"), 0u);  // no learned positions
  EXPECT_EQ(P.count("h.0.attn.qkv.b"), 0u);  // no biases
}

TEST(Llama, EveryParameterMatchesFiniteDifferences) {
  const gt::ModelConfig cfg = llama_model();
  const int B = 2;
  gt::GPT<double> model(cfg, 7, B, gt::StageLayout{0, 1, 0, cfg.n_layer}, gt::TensorParallel{}, 1);
  expect_gradients_match_finite_differences(model, random_batch(B * cfg.seq_len, cfg.vocab_size, 11));
}

// tp 2 splits the 2 key/value heads; tp 4 replicates each on 2 ranks (Megatron's GQA: tp a multiple of n_kv_head).
TEST(Llama, TensorParallelShardsDrawTheUnshardedValues) {
  const gt::ModelConfig cfg = llama_model();
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::ParamStore<float> full(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, 0, 1), 1));
  full.allocate(99);
  auto fp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(full.params(), full.size()));
  for (int tp : {2, 4})
    for (int r = 0; r < tp; ++r) {
      gt::ParamStore<float> shard(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, r, tp), 1));
      shard.allocate(99);
      auto sp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(shard.params(), shard.size()));
      for (const auto& s : shard.tensors()) {
        const auto& f = full.spec(s.name);
        for (size_t i = 0; i < s.size; ++i)
          ASSERT_EQ(sp(s.offset + i), fp(f.offset + size_t(s.global_index(int64_t(i))))) << s.name << " tp " << tp << " rank " << r;
      }
    }
}

// The replicated slice at tp 4 by hand (not through global_index): rank r holds, of key/value group r / 2, query head
// r % 2 and the group's key and value heads, [q | k | v], as the grouped kernels expect one group; ranks 2k and
// 2k + 1 hold the same key and value rows.
TEST(Llama, TensorParallelBeyondKeyValueHeadsReplicatesThem) {
  const gt::ModelConfig cfg = llama_model();
  const int C = cfg.d_model, hd = C / cfg.n_head, G = cfg.n_head / cfg.n_kv_head;
  gt::StageLayout whole{0, 1, 0, cfg.n_layer};
  gt::ParamStore<float> full(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, 0, 1), 1));
  full.allocate(7);
  auto fp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(full.params(), full.size()));
  const auto& fq = full.spec("h.1.attn.qkv.w");
  for (int r = 0; r < 4; ++r) {
    gt::ParamStore<float> shard(gt::TensorLayout(gt::model_tensor_specs(cfg, whole, r, 4), 1));
    shard.allocate(7);
    auto sp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_view(shard.params(), shard.size()));
    const auto& q = shard.spec("h.1.attn.qkv.w");
    ASSERT_EQ(q.size, size_t(3 * hd * C)) << "one query head, one key head, one value head";
    const int group = r / 2, rows[3] = {r % 2, G, G + 1};
    for (int row = 0; row < 3; ++row)
      for (int k = 0; k < hd * C; ++k)
        ASSERT_EQ(sp(q.offset + size_t(row * hd * C + k)), fp(fq.offset + size_t(((group * (G + 2) + rows[row]) * hd) * C + k)))
            << "rank " << r << " local row " << row;
    EXPECT_EQ(q.replicas, 2);
    EXPECT_EQ(q.has_replicated_tail(), true);
    EXPECT_EQ(q.tail_begin(), int64_t(hd) * C);
  }
}

// One line each, naming the keys: what the Llama block cannot run.
TEST(Llama, RefusesWhatItCannotRun) {
  struct Case {
    const char* what;
    int n_head, n_kv_head, d_model, tp;
    const char* attention;
    const char* arch;
    const char* expect;
  };
  const Case cases[] = {
      {"kv heads not dividing heads", 4, 3, 16, 1, "fused", "llama", "model.n_kv_head (3) does not divide model.n_head (4)"},
      {"tp neither dividing kv heads nor a multiple of them", 6, 3, 24, 2, "fused", "llama",
       "model.n_kv_head (3) is neither divisible by parallel.tp (2) nor a divisor of it"},
      {"odd head dimension", 4, 2, 12, 1, "fused", "llama", "the head dimension d_model / n_head = 3 is odd"},
      {"materialized attention", 4, 2, 16, 1, "materialized", "llama", "model.arch = llama needs model.attention = fused"},
      {"GQA on GPT-2", 4, 2, 16, 1, "fused", "gpt2", "model.n_kv_head (2) needs model.arch = llama"},
      {"SwiGLU width on GPT-2", 4, 0, 16, 1, "fused", "gpt2", "model.ffn_hidden (16) needs model.arch = llama"},
  };
  for (const Case& k : cases) {
    gt::ModelConfig m = llama_model();
    m.n_head = k.n_head;
    m.n_kv_head = k.n_kv_head;
    m.d_model = k.d_model;
    m.attention = k.attention;
    m.arch = k.arch;
    m.ffn_hidden = 16;
    try {
      gt::model_tensor_specs(m, gt::StageLayout{0, 1, 0, m.n_layer}, 0, k.tp);
      ADD_FAILURE() << k.what << ": accepted";
    } catch (const gt::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(k.expect), std::string::npos) << k.what << ": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << k.what << ": more than one line";
    }
  }
}
