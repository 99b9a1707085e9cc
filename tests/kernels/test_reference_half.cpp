// Every kernel in the 16-bit storage types (bf16_t, fp16_t) against the naive double references of
// reference.hpp, as the model calls them: T inputs and outputs, fp32 (acc_t<T>) statistics and parameter
// gradients. "set" outputs start poisoned with NaN (a kernel that skips an element fails), "acc" outputs start
// random (a kernel that overwrites instead of adding fails).
//
// Tolerances, norm-wise relative (kt::rel_err), in units of the type's unit roundoff u (2^-8 bf16, 2^-11
// fp16). The inputs are rounded to T first and the reference computes in double from exactly those values, so
// the error measured is the kernel's own: fp32 arithmetic (~1e-6, negligible) plus one rounding to T of each
// stored result, at most u relative per element, so at most u norm-wise. A kernel whose result passes through
// k stored T intermediates gets k u plus what the later steps amplify (stated where that happens). For scale:
// torch.testing's defaults, rtol 1.6e-2 bf16 (4.1 u) and 1e-3 fp16 (2.0 u), are elementwise and looser than
// a norm-wise 1 u. fp32 outputs (statistics, parameter gradients) are held to 1e-5: fp32 sums of T inputs.
// Measured (2026-12-04): one-rounding outputs at 0.4-0.85 u (the random-rounding norm is ~0.58 u; softmax
// probabilities sit near the top), attention out 0.6-0.9 u, dqkv 0.75-1.1 u, fp32 outputs <= 1.4e-7.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.hpp"
#include "kernels/tp_epilogue.hpp"
#include "tests/kernels/reference.hpp"
#include "tests/kernels/sharded_ce.hpp"
#include "tests/kernels/test_util.hpp"

using kt::exact_in;
using kt::nan_filled;
using kt::rel_err;
using kt::to;
using kt::Vec;

namespace {

constexpr double kF32 = 1e-5;  // fp32 results computed from T inputs

template <class T>
double u() {
  return std::is_same_v<T, gt::bf16_t> ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

template <class T>
class KernelRefHalf : public ::testing::Test {
 protected:
  std::mt19937_64 rng{20261204u + sizeof(typename T::value_type)};
};
template <class H>
struct Tag {
  using value_type = H;
};
using HalfTypes = ::testing::Types<Tag<gt::bf16_t>, Tag<gt::fp16_t>>;
TYPED_TEST_SUITE(KernelRefHalf, HalfTypes);

}  // namespace

TYPED_TEST(KernelRefHalf, Embedding) {
  using T = typename TypeParam::value_type;
  const int B = 2, T_ = 9, C = 70, v0 = 3, Vl = 6, V = 12, BT = B * T_;  // C > 64: two column blocks
  auto tok = kt::random_tokens(this->rng, BT, 0, V);
  tok[4] = tok[5] = tok[6] = v0 + 2;  // repeated ids: the backward accumulates
  const Vec wte = exact_in<T>(this->rng, size_t(Vl) * C), wpe = exact_in<T>(this->rng, size_t(T_) * C);
  Vec out;
  ref::embedding_forward(out, tok, wte, &wpe, BT, T_, C, v0, Vl);
  auto out_t = nan_filled<T>(out.size());
  auto wte_t = to<T>(wte), wpe_t = to<T>(wpe);
  gt::embedding_forward(out_t.data(), tok.data(), wte_t.data(), wpe_t.data(), BT, T_, C, v0, Vl);
  EXPECT_LT(rel_err(out_t, out), u<T>());  // wte + wpe in fp32, rounded once
  // backward: fp32 gradients, accumulated onto what is there
  const Vec dout = exact_in<T>(this->rng, size_t(BT) * C);
  const Vec dwte0 = kt::random_vec(this->rng, wte.size()), dwpe0 = kt::random_vec(this->rng, wpe.size());
  Vec dwte = dwte0, dwpe = dwpe0;
  ref::embedding_backward(dwte, &dwpe, dout, tok, BT, T_, C, v0, Vl);
  auto dwte_t = kt::cast<float>(dwte0), dwpe_t = kt::cast<float>(dwpe0);
  auto dout_t = to<T>(dout);
  gt::embedding_backward(dwte_t.data(), dwpe_t.data(), dout_t.data(), tok.data(), BT, T_, C, v0, Vl);
  EXPECT_LT(rel_err(dwte_t, dwte), kF32);
  EXPECT_LT(rel_err(dwpe_t, dwpe), kF32);
}

TYPED_TEST(KernelRefHalf, LayerNorm) {
  using T = typename TypeParam::value_type;
  const int N = 2 * 64 + 13, C = 70;  // rows: two full chunks of the device split's column sums and a partial one
  const Vec x = exact_in<T>(this->rng, size_t(N) * C, 2.0, 4.0);  // offset mean: centring must happen in fp32
  const Vec w = exact_in<T>(this->rng, C), b = exact_in<T>(this->rng, C);
  Vec out, mean, rstd;
  ref::layernorm_forward(out, mean, rstd, x, w, b, N, C);
  auto out_t = nan_filled<T>(out.size());
  auto mean_t = kt::poisoned<float>(N), rstd_t = kt::poisoned<float>(N);
  auto x_t = to<T>(x), w_t = to<T>(w), b_t = to<T>(b);
  gt::layernorm_forward(out_t.data(), mean_t.data(), rstd_t.data(), x_t.data(), w_t.data(), b_t.data(), N, C);
  EXPECT_LT(rel_err(out_t, out), u<T>() + kF32);  // fp32 statistics, one rounding of the output
  EXPECT_LT(rel_err(mean_t, mean), kF32);
  EXPECT_LT(rel_err(rstd_t, rstd), 4 * kF32);  // centring an offset mean costs ~2 bits in fp32
  const Vec dout = exact_in<T>(this->rng, x.size());
  const Vec dx0 = exact_in<T>(this->rng, x.size()), dw0 = kt::random_vec(this->rng, C);
  const Vec db0 = kt::random_vec(this->rng, C);
  Vec dx = dx0, dw = dw0, db = db0;
  ref::layernorm_backward(dx, dw, db, dout, x, w, N, C);
  auto dx_t = to<T>(dx0);
  auto dw_t = kt::cast<float>(dw0), db_t = kt::cast<float>(db0);
  auto dout_t = to<T>(dout);
  auto part = kt::poisoned<float>(gt::colsum_partials_elems(N, 2 * C));
  gt::layernorm_backward(dx_t.data(), dw_t.data(), db_t.data(), part.data(), dout_t.data(), x_t.data(), w_t.data(),
                         mean_t.data(), rstd_t.data(), N, C);
  EXPECT_LT(rel_err(dx_t, dx), u<T>() + 4 * kF32);  // dx accumulates in fp32 onto the T value, rounded once
  EXPECT_LT(rel_err(dw_t, dw), 4 * kF32);
  EXPECT_LT(rel_err(db_t, db), kF32);
}

TYPED_TEST(KernelRefHalf, Linear) {
  using T = typename TypeParam::value_type;
  const int N = 2 * 64 + 13, IN = 67, OUT = 70;  // odd sizes, above the 64 blocking and the 64-row chunk
  const Vec x = exact_in<T>(this->rng, size_t(N) * IN), w = exact_in<T>(this->rng, size_t(OUT) * IN),
            b = exact_in<T>(this->rng, OUT);
  auto x_t = to<T>(x), w_t = to<T>(w), b_t = to<T>(b);
  for (bool with_bias : {true, false}) {
    Vec out;
    ref::linear_forward(out, x, w, with_bias ? &b : nullptr, N, IN, OUT);
    auto out_t = nan_filled<T>(out.size());
    gt::linear_forward(out_t.data(), x_t.data(), w_t.data(), with_bias ? b_t.data() : nullptr, N, IN, OUT);
    // the GEMM accumulates in fp32 and the bias joins in fp32 or as a second rounding: at most 2 u
    EXPECT_LT(rel_err(out_t, out), 2 * u<T>()) << "with_bias=" << with_bias;
  }
  const Vec dout = exact_in<T>(this->rng, size_t(N) * OUT);
  const Vec dw0 = kt::random_vec(this->rng, w.size()), db0 = kt::random_vec(this->rng, OUT);
  Vec dx, dw = dw0, db = db0;
  ref::linear_backward(dx, dw, &db, dout, x, w, N, IN, OUT);
  auto dx_t = nan_filled<T>(dx.size());
  auto dw_t = kt::cast<float>(dw0), db_t = kt::cast<float>(db0);
  auto dout_t = to<T>(dout);
  auto part = kt::poisoned<float>(gt::colsum_partials_elems(N, OUT));
  gt::linear_backward(dx_t.data(), dw_t.data(), db_t.data(), part.data(), dout_t.data(), x_t.data(), w_t.data(), N, IN,
                      OUT);
  EXPECT_LT(rel_err(dx_t, dx), u<T>() + kF32);  // set, one rounding
  EXPECT_LT(rel_err(dw_t, dw), kF32);           // fp32 C with beta 1: the weight gradient stays fp32
  EXPECT_LT(rel_err(db_t, db), kF32);
}

// The fc layer with its GELU (linear_gelu.hpp), as the model calls it. The GELU input carries one rounding to T
// (of product + bias in the host split's GEMM, of the product alone on the device split, whose bias joins in
// fp32), which GELU and its derivative amplify by at most ~2 norm-wise here; then the output's own rounding:
// 3 u at most, 4 u allowed.
TYPED_TEST(KernelRefHalf, LinearGelu) {
  using T = typename TypeParam::value_type;
  const int N = 2 * 64 + 13, IN = 67, OUT = 70;
  const Vec x = exact_in<T>(this->rng, size_t(N) * IN), w = exact_in<T>(this->rng, size_t(OUT) * IN),
            b = exact_in<T>(this->rng, OUT), dout = exact_in<T>(this->rng, size_t(N) * OUT);
  auto x_t = to<T>(x), w_t = to<T>(w), b_t = to<T>(b), dout_t = to<T>(dout);
  for (bool with_bias : {true, false}) {
    Vec pre, out, dpre;
    ref::linear_gelu(pre, out, dpre, x, w, with_bias ? &b : nullptr, dout, N, IN, OUT);
    auto pre_t = nan_filled<T>(pre.size()), out_t = nan_filled<T>(pre.size()), dpre_t = nan_filled<T>(pre.size());
    gt::linear_gelu_forward(pre_t.data(), out_t.data(), x_t.data(), w_t.data(), with_bias ? b_t.data() : nullptr, N,
                            IN, OUT);
    gt::gelu_bias_backward(dpre_t.data(), pre_t.data(), with_bias ? b_t.data() : nullptr, dout_t.data(), N, OUT);
    EXPECT_LT(rel_err(out_t, out), 4 * u<T>()) << "with_bias=" << with_bias;
    EXPECT_LT(rel_err(dpre_t, dpre), 4 * u<T>()) << "with_bias=" << with_bias;
  }
}

// T_ = 70 crosses the 64-row query block; T_ = 5 is a single partial block.
TYPED_TEST(KernelRefHalf, Attention) {
  using T = typename TypeParam::value_type;
  struct Shape { int B, T_, NH, hd; };
  for (Shape s : {Shape{2, 5, 3, 4}, Shape{2, 70, 2, 5}}) {
    const int Cl = s.NH * s.hd;
    const Vec qkv = exact_in<T>(this->rng, size_t(s.B) * s.T_ * 3 * Cl, -2.0, 2.0);
    const Vec dout = exact_in<T>(this->rng, size_t(s.B) * s.T_ * Cl);
    Vec out, att, dqkv;
    ref::attention_forward(out, att, qkv, s.B, s.T_, s.NH, s.hd);
    ref::attention_backward(dqkv, dout, qkv, s.B, s.T_, s.NH, s.hd);
    auto qkv_t = to<T>(qkv), dout_t = to<T>(dout);
    auto out_t = nan_filled<T>(out.size()), att_t = nan_filled<T>(att.size());
    gt::attention_forward(out_t.data(), att_t.data(), qkv_t.data(), s.B, s.T_, s.NH, s.hd);
    // att: softmax of fp32 scores, rounded once (1 u); out = att v from the rounded att: 2 u
    EXPECT_LT(rel_err(att_t, att), u<T>() + kF32) << "T=" << s.T_;
    EXPECT_LT(rel_err(out_t, out), 2 * u<T>()) << "T=" << s.T_;
    auto dqkv_t = nan_filled<T>(qkv.size());
    auto scratch = nan_filled<T>(gt::attention_scratch_elems(s.NH, s.T_));
    gt::attention_backward(dqkv_t.data(), scratch.data(), dout_t.data(), qkv_t.data(), att_t.data(), s.B, s.T_, s.NH,
                           s.hd);
    // dqkv passes through the rounded att (1 u), the stored dP/dS scratch (1-2 u) and its own rounding, and
    // the softmax backward P (dP - rowsum(P dP)) cancels: the fp32 test allows 4x its tolerance for the same
    // reason. 6 u here.
    EXPECT_LT(rel_err(dqkv_t, dqkv), 6 * u<T>()) << "T=" << s.T_;
  }
}

TYPED_TEST(KernelRefHalf, Gelu) {
  using T = typename TypeParam::value_type;
  const long N = 2 * 4096 + 37;  // three chunks, the last one partial
  const Vec x = exact_in<T>(this->rng, N, -6.0, 6.0), dout = exact_in<T>(this->rng, N);
  Vec y, dx;
  ref::gelu_forward_backward(y, dx, x, dout);
  auto x_t = to<T>(x), dout_t = to<T>(dout);
  auto y_t = nan_filled<T>(N), dx_t = nan_filled<T>(N);
  gt::gelu_forward(y_t.data(), x_t.data(), N);
  gt::gelu_backward(dx_t.data(), x_t.data(), dout_t.data(), N);
  EXPECT_LT(rel_err(y_t, y), u<T>() + kF32);  // fp32 (fast tanh ~1e-6), one rounding
  EXPECT_LT(rel_err(dx_t, dx), u<T>() + kF32);
}

// The element-wise kernels compute in fp32 and round once: exactly T(float(a) + float(b)) etc.
TYPED_TEST(KernelRefHalf, ElementwiseAndEpilogue) {
  using T = typename TypeParam::value_type;
  const int N = 67, C = 70;
  const long n = long(N) * C;
  const Vec a = exact_in<T>(this->rng, n), b = exact_in<T>(this->rng, n), bias = exact_in<T>(this->rng, C);
  auto a_t = to<T>(a), b_t = to<T>(b), bias_t = to<T>(bias);
  Vec sum(n), sum3(n), scaled(n);
  for (long i = 0; i < n; ++i) {
    sum[i] = double(T(float(a[i]) + float(b[i])));
    sum3[i] = double(T(float(a[i]) + float(b[i]) + float(bias[i % C])));
    scaled[i] = double(T(float(a[i]) * 0.75f));
  }
  auto out = nan_filled<T>(n);
  gt::residual_forward(out.data(), a_t.data(), b_t.data(), n);
  EXPECT_EQ(kt::to_double(out), sum);
  auto y = a_t;
  gt::add_inplace(y.data(), b_t.data(), n);
  EXPECT_EQ(kt::to_double(y), sum);
  y = a_t;
  gt::scale_inplace(y.data(), n, 0.75f);
  EXPECT_EQ(kt::to_double(y), scaled);
  auto rb = nan_filled<T>(n);
  gt::residual_bias_forward(rb.data(), a_t.data(), b_t.data(), bias_t.data(), N, C);
  EXPECT_EQ(kt::to_double(rb), sum3);
  // bias gradient: fp32 column sums, accumulated
  const Vec db0 = kt::random_vec(this->rng, C);
  Vec db = db0;
  for (long i = 0; i < n; ++i) db[i % C] += a[i];
  auto db_t = kt::cast<float>(db0);
  auto part = kt::poisoned<float>(gt::colsum_partials_elems(N, C));  // N = 67: a full row chunk and one row
  gt::bias_backward(db_t.data(), part.data(), a_t.data(), N, C);
  EXPECT_LT(rel_err(db_t, db), kF32);
  // positions: x[i] += wpe[i % T], with N rows of C as BT = N tokens of T_ = 5 positions
  const int T_ = 5;
  const Vec wpe = exact_in<T>(this->rng, size_t(T_) * C);
  Vec pos(n);
  for (long i = 0; i < n; ++i) pos[i] = double(T(float(a[i]) + float(wpe[((i / C) % T_) * C + i % C])));
  auto x = a_t;
  auto wpe_t = to<T>(wpe);
  gt::add_positions(x.data(), wpe_t.data(), N, T_, C);
  EXPECT_EQ(kt::to_double(x), pos);
  // conversions: fp32 -> T rounds to nearest (T's own constructor, tested bit for bit in test_half)
  const Vec f = kt::random_vec(this->rng, n, -3.0, 3.0);
  auto f_t = kt::cast<float>(f);
  auto c = nan_filled<T>(n);
  gt::convert(c.data(), f_t.data(), n);
  Vec expect(n);
  for (long i = 0; i < n; ++i) expect[i] = double(T(float(f[i])));
  EXPECT_EQ(kt::to_double(c), expect);
  double ss = 0;
  for (long i = 0; i < n; ++i) ss += a[i] * a[i];
  EXPECT_NEAR(gt::sum_squares(a_t.data(), n), ss, 1e-13 * ss);
}

// Vocab-parallel cross-entropy on one process: two uneven shards of T logits, the all-reduces done here.
TYPED_TEST(KernelRefHalf, CrossEntropy) {
  using T = typename TypeParam::value_type;
  const int N = 6, V = 150, bounds[] = {0, 81, V};
  const Vec logits = exact_in<T>(this->rng, size_t(N) * V, -8.0, 8.0);
  auto tgt = kt::random_tokens(this->rng, N, 0, V);
  tgt[0] = 0;
  tgt[1] = V - 1;
  const double scale = 1.0 / N;
  Vec loss, dlogits;
  ref::crossentropy(loss, dlogits, logits, tgt, N, V, scale);
  kt::ShardedCe<T> ce(logits, {bounds, bounds + 3}, tgt, N);
  auto loss_t = kt::poisoned<float>(N);
  gt::ce_loss(loss_t.data(), ce.gsum.data(), ce.gmax.data(), ce.glogit.data(), N);
  EXPECT_LT(rel_err(loss_t, loss), kF32);  // the loss stays fp32 end to end
  // softmax - onehot in fp32, rounded once into the logits
  EXPECT_LT(rel_err(ce.backward(tgt, float(scale)), dlogits), u<T>() + kF32);
}
