// Two runs of each float kernel on identical inputs give identical bits (no atomics, fixed reduction
// order). Inputs include repeated tokens, the case where a racy scatter-add would differ between runs.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/kernels.hpp"
#include "tests/kernels/test_util.hpp"

using kt::cast;

namespace {
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Runs a short forward/backward chain and returns every output concatenated.
std::vector<float> run_chain(const kt::DVec<int32_t>& tok, const kt::DVec<float>& wte,
                             const kt::DVec<float>& wpe, const kt::DVec<float>& wqkv, int B, int T_, int C,
                             int NH, int V) {
  const int BT = B * T_;
  std::vector<float> all;
  auto keep = [&](const std::vector<float>& v) { all.insert(all.end(), v.begin(), v.end()); };
  kt::DVec<float> x(static_cast<size_t>(BT) * C), ln(x.size()), mean(BT), rstd(BT), ones(C, 1.0f), zeros(C, 0.0f);
  gt::embedding_forward(x.data(), tok.data(), wte.data(), wpe.data(), BT, T_, C, 0, V);
  gt::layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), ones.data(), zeros.data(), BT, C);
  kt::DVec<float> qkv(static_cast<size_t>(BT) * 3 * C);
  gt::linear_forward(qkv.data(), ln.data(), wqkv.data(), nullptr, BT, C, 3 * C);
  kt::DVec<float> att(static_cast<size_t>(B) * NH * T_ * T_), y(x.size()), g(x.size());
  gt::attention_forward(y.data(), att.data(), qkv.data(), B, T_, NH, C / NH);
  gt::gelu_forward(g.data(), y.data(), static_cast<long>(g.size()));
  // logits against the tied embedding, then the cross-entropy phases
  kt::DVec<float> logits(static_cast<size_t>(BT) * V), rowmax(BT), sumexp(BT), tlogit(BT), loss(BT);
  gt::linear_forward(logits.data(), g.data(), wte.data(), nullptr, BT, C, V);
  gt::ce_row_max(rowmax.data(), logits.data(), BT, V);
  gt::ce_row_sumexp(sumexp.data(), tlogit.data(), logits.data(), rowmax.data(), tok.data(), BT, V, 0);
  gt::ce_loss(loss.data(), sumexp.data(), rowmax.data(), tlogit.data(), BT);
  gt::ce_backward_inplace(logits.data(), rowmax.data(), sumexp.data(), tok.data(), BT, V, 0, 1.0f / BT);
  keep(loss);
  keep(logits);
  // backward
  kt::DVec<float> dg(g.size()), dwte(wte.size(), 0.0f), dy(y.size()), dqkv(qkv.size());
  kt::DVec<float> scratch(gt::attention_scratch_elems(NH, T_)), dwqkv(wqkv.size(), 0.0f), dln(ln.size());
  gt::linear_backward(dg.data(), dwte.data(), nullptr, nullptr, logits.data(), g.data(), wte.data(), BT, C, V);
  gt::gelu_backward(dy.data(), y.data(), dg.data(), static_cast<long>(dy.size()));
  gt::attention_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), att.data(), B, T_, NH, C / NH);
  gt::linear_backward(dln.data(), dwqkv.data(), nullptr, nullptr, dqkv.data(), ln.data(), wqkv.data(), BT, C, 3 * C);
  kt::DVec<float> dx(x.size(), 0.0f), dlw(C, 0.0f), dlb(C, 0.0f), dwpe(wpe.size(), 0.0f);
  kt::DVec<float> part(gt::colsum_partials_elems(BT, 2 * C));
  gt::layernorm_backward(dx.data(), dlw.data(), dlb.data(), part.data(), dln.data(), x.data(), ones.data(), mean.data(),
                         rstd.data(), BT, C);
  gt::embedding_backward(dwte.data(), dwpe.data(), dx.data(), tok.data(), BT, T_, C, 0, V);
  keep(dwte);
  keep(dwpe);
  keep(dwqkv);
  keep(dlw);
  keep(dlb);
  // optimizer step and gradient norm
  kt::DVec<float> p = wte, m(wte.size(), 0.0f), v(wte.size(), 0.0f);
  const double norm = std::sqrt(gt::sum_squares(dwte.data(), static_cast<long>(dwte.size())));
  gt::adamw_update(p.data(), dwte.data(), m.data(), v.data(), static_cast<long>(p.size()), 1e-3f, 0.9f, 0.95f, 1e-8f,
                   0.1f, 1, static_cast<float>(gt::clip_scale(norm, 1.0)));
  keep(p);
  all.push_back(static_cast<float>(norm));
  return all;
}
}  // namespace

TEST(Determinism, FullChainTwiceGivesSameBits) {
  std::mt19937_64 rng(99);
  const int B = 2, T_ = 70, C = 24, NH = 3, V = 40;
  const auto tok = kt::random_tokens(rng, static_cast<size_t>(B) * T_, 0, V);  // 140 tokens, 40 ids: repeats
  const auto wte = cast<float>(kt::random_vec(rng, static_cast<size_t>(V) * C));
  const auto wpe = cast<float>(kt::random_vec(rng, static_cast<size_t>(T_) * C));
  const auto wqkv = cast<float>(kt::random_vec(rng, static_cast<size_t>(3 * C) * C, -0.3, 0.3));
  const auto first = run_chain(tok, wte, wpe, wqkv, B, T_, C, NH, V);
  const auto second = run_chain(tok, wte, wpe, wqkv, B, T_, C, NH, V);
  for (float f : first) ASSERT_TRUE(std::isfinite(f));
  EXPECT_TRUE(same_bits(first, second));
}
