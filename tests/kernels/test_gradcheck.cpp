// Every backward kernel against central finite differences of its own forward kernel, in double.
// Loss L = sum(out * R) for a fixed random R, so dL/dout = R is what the backward kernel receives.
// Pass criterion: norm-wise relative error ||g - g_fd|| / max(||g||, ||g_fd||) < 1e-6 (h = 1e-5).
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/kernels.hpp"
#include "tests/kernels/test_util.hpp"

using kt::rel_err;
using kt::Vec;
using DV = kt::DVec<double>;  // device buffer; DV(v) copies a host vector in, a DV reads back as a Vec

namespace {
constexpr double kGradTol = 1e-6;
// the error, printed so that the margin to kGradTol shows in the test log
double grad_err(const char* what, const Vec& g, const Vec& g_fd) {
  const double e = rel_err(g, g_fd);
  std::printf("  %-22s ||g - g_fd|| / max(||g||, ||g_fd||) = %.2e\n", what, e);
  return e;
}
std::mt19937_64 make_rng(unsigned salt) { return std::mt19937_64(777u + salt); }
}  // namespace

TEST(GradCheck, Embedding) {
  auto rng = make_rng(1);
  const int B = 2, T_ = 4, C = 5, v0 = 2, Vl = 5, V = 9, BT = B * T_;
  auto tok = kt::random_tokens(rng, BT, 0, V);
  tok[0] = tok[1] = v0 + 1;  // a repeat
  Vec wte = kt::random_vec(rng, static_cast<size_t>(Vl) * C), wpe = kt::random_vec(rng, static_cast<size_t>(T_) * C);
  const Vec R = kt::random_vec(rng, static_cast<size_t>(BT) * C);
  auto loss = [&](const Vec& te, const Vec& pe) {
    DV out(R.size());
    gt::embedding_forward(out.data(), tok.data(), DV(te).data(), DV(pe).data(), BT, T_, C, v0, Vl);
    return kt::dot(out, R);
  };
  DV dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
  gt::embedding_backward(dwte.data(), dwpe.data(), DV(R).data(), tok.data(), BT, T_, C, v0, Vl);
  EXPECT_LT(grad_err("embedding dwte", dwte, kt::finite_diff([&](const Vec& x) { return loss(x, wpe); }, wte)), kGradTol);
  EXPECT_LT(grad_err("embedding dwpe", dwpe, kt::finite_diff([&](const Vec& x) { return loss(wte, x); }, wpe)), kGradTol);
}

TEST(GradCheck, LayerNorm) {
  auto rng = make_rng(2);
  const int N = 4, C = 11;
  Vec x = kt::random_vec(rng, static_cast<size_t>(N) * C, -2.0, 3.0), w = kt::random_vec(rng, C),
      b = kt::random_vec(rng, C);
  const Vec R = kt::random_vec(rng, x.size());
  auto loss = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
    DV out(x.size()), mean(N), rstd(N);
    gt::layernorm_forward(out.data(), mean.data(), rstd.data(), DV(xx).data(), DV(ww).data(), DV(bb).data(), N, C);
    return kt::dot(out, R);
  };
  DV out(x.size()), mean(N), rstd(N);
  gt::layernorm_forward(out.data(), mean.data(), rstd.data(), DV(x).data(), DV(w).data(), DV(b).data(), N, C);
  DV dx(x.size(), 0.0), dw(C, 0.0), db(C, 0.0), part(gt::colsum_partials_elems(N, 2 * C));
  gt::layernorm_backward(dx.data(), dw.data(), db.data(), part.data(), DV(R).data(), DV(x).data(), DV(w).data(),
                         mean.data(), rstd.data(), N, C);
  EXPECT_LT(grad_err("layernorm dinp", dx, kt::finite_diff([&](const Vec& v) { return loss(v, w, b); }, x)), kGradTol);
  EXPECT_LT(grad_err("layernorm dweight", dw, kt::finite_diff([&](const Vec& v) { return loss(x, v, b); }, w)), kGradTol);
  EXPECT_LT(grad_err("layernorm dbias", db, kt::finite_diff([&](const Vec& v) { return loss(x, w, v); }, b)), kGradTol);
}

TEST(GradCheck, Linear) {
  auto rng = make_rng(3);
  const int N = 5, IN = 7, OUT = 6;
  Vec x = kt::random_vec(rng, static_cast<size_t>(N) * IN), w = kt::random_vec(rng, static_cast<size_t>(OUT) * IN),
      b = kt::random_vec(rng, OUT);
  const Vec R = kt::random_vec(rng, static_cast<size_t>(N) * OUT);
  auto loss = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
    DV out(R.size());
    gt::linear_forward(out.data(), DV(xx).data(), DV(ww).data(), DV(bb).data(), N, IN, OUT);
    return kt::dot(out, R);
  };
  DV dx(x.size()), dw(w.size(), 0.0), db(OUT, 0.0), part(gt::colsum_partials_elems(N, OUT));
  gt::linear_backward(dx.data(), dw.data(), db.data(), part.data(), DV(R).data(), DV(x).data(), DV(w).data(), N, IN,
                      OUT);
  EXPECT_LT(grad_err("linear dinp", dx, kt::finite_diff([&](const Vec& v) { return loss(v, w, b); }, x)), kGradTol);
  EXPECT_LT(grad_err("linear dweight", dw, kt::finite_diff([&](const Vec& v) { return loss(x, v, b); }, w)), kGradTol);
  EXPECT_LT(grad_err("linear dbias", db, kt::finite_diff([&](const Vec& v) { return loss(x, w, v); }, b)), kGradTol);
}

TEST(GradCheck, Attention) {
  auto rng = make_rng(4);
  struct Shape { int B, T_, NH, hd; };
  for (Shape s : {Shape{2, 6, 2, 3}, Shape{1, 67, 2, 3}}) {  // the second crosses the 64-row block
    const int Cl = s.NH * s.hd;
    Vec qkv = kt::random_vec(rng, static_cast<size_t>(s.B) * s.T_ * 3 * Cl, -1.5, 1.5);
    const Vec R = kt::random_vec(rng, static_cast<size_t>(s.B) * s.T_ * Cl);
    DV att(static_cast<size_t>(s.B) * s.NH * s.T_ * s.T_), out(R.size());
    auto loss = [&](const Vec& q) {
      gt::attention_forward(out.data(), att.data(), DV(q).data(), s.B, s.T_, s.NH, s.hd);
      return kt::dot(out, R);
    };
    const Vec g_fd = kt::finite_diff(loss, qkv);
    gt::attention_forward(out.data(), att.data(), DV(qkv).data(), s.B, s.T_, s.NH, s.hd);
    DV dqkv(qkv.size()), scratch(gt::attention_scratch_elems(s.NH, s.T_));
    gt::attention_backward(dqkv.data(), scratch.data(), DV(R).data(), DV(qkv).data(), att.data(), s.B, s.T_, s.NH, s.hd);
    EXPECT_LT(grad_err("attention dqkv", dqkv, g_fd), kGradTol) << "T=" << s.T_;
  }
}

TEST(GradCheck, Gelu) {
  auto rng = make_rng(5);
  const long N = 300;
  Vec x = kt::random_vec(rng, N, -5.0, 5.0);
  const Vec R = kt::random_vec(rng, N);
  auto loss = [&](const Vec& v) {
    DV y(N);
    gt::gelu_forward(y.data(), DV(v).data(), N);
    return kt::dot(y, R);
  };
  DV dx(N);
  gt::gelu_backward(dx.data(), DV(x).data(), DV(R).data(), N);
  EXPECT_LT(grad_err("gelu dinp", dx, kt::finite_diff(loss, x)), kGradTol);
}

// The four phases on one rank (v0 = 0, Vl = V): L = scale * sum_i loss_i.
TEST(GradCheck, CrossEntropy) {
  auto rng = make_rng(6);
  const int N = 5, V = 77;
  Vec logits = kt::random_vec(rng, static_cast<size_t>(N) * V, -4.0, 4.0);
  const auto tgt = kt::random_tokens(rng, N, 0, V);
  const double scale = 1.0 / N;
  DV rowmax(N), sumexp(N), tlogit(N), loss(N);
  auto forward = [&](const Vec& l) {
    gt::ce_row_max(rowmax.data(), DV(l).data(), N, V);
    gt::ce_row_sumexp(sumexp.data(), tlogit.data(), DV(l).data(), rowmax.data(), tgt.data(), N, V, 0);
    gt::ce_loss(loss.data(), sumexp.data(), rowmax.data(), tlogit.data(), N);
    double s = 0.0;
    for (double v : loss) s += v;
    return scale * s;
  };
  const Vec g_fd = kt::finite_diff(forward, logits);
  forward(logits);
  DV dl = logits;
  gt::ce_backward_inplace(dl.data(), rowmax.data(), sumexp.data(), tgt.data(), N, V, 0, scale);
  EXPECT_LT(grad_err("cross-entropy dlogits", dl, g_fd), kGradTol);
}
