// Every kernel against the naive double references of reference.hpp, in float and in double, on fresh
// random inputs. "set" outputs start NaN-poisoned (a kernel that skips an element fails); "acc" outputs start
// random (a kernel that overwrites instead of adding fails). Odd sizes exercise the vector tails, sizes
// above the block constants (64 rows/columns, 4096 elements) exercise the blocking; the column sums over rows
// (parameter gradients of LayerNorm and the biases) take 141 rows, two full row chunks of the device split's
// two-level sums (kColsumRows = 64) and a partial one.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/tp_epilogue.hpp"
#include "tests/kernels/reference.hpp"
#include "tests/kernels/sharded_ce.hpp"
#include "tests/kernels/test_util.hpp"

using kt::cast;
using kt::rel_err;
using kt::Vec;

template <class T>
class KernelRef : public ::testing::Test {
 protected:
  std::mt19937_64 rng{20261202u + sizeof(T)};
};
using ScalarTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelRef, ScalarTypes);

TYPED_TEST(KernelRef, EmbeddingForwardVocabShard) {
  using T = TypeParam;
  const int B = 3, T_ = 7, C = 13, v0 = 5, Vl = 11, V = 25;
  const int BT = B * T_;
  auto tok = kt::random_tokens(this->rng, BT, 0, V);  // about half fall outside [v0, v0+Vl)
  tok[0] = v0;
  tok[1] = v0 + Vl - 1;
  tok[2] = v0 + Vl;
  tok[3] = v0 - 1;
  const Vec wte = kt::random_vec(this->rng, static_cast<size_t>(Vl) * C);
  const Vec wpe = kt::random_vec(this->rng, static_cast<size_t>(T_) * C);
  for (bool with_wpe : {true, false}) {
    Vec expect;
    ref::embedding_forward(expect, tok, wte, with_wpe ? &wpe : nullptr, BT, T_, C, v0, Vl);
    auto out = kt::poisoned<T>(expect.size());
    auto wte_t = cast<T>(wte), wpe_t = cast<T>(wpe);
    gt::embedding_forward(out.data(), tok.data(), wte_t.data(), with_wpe ? wpe_t.data() : nullptr, BT, T_, C, v0,
                          Vl);
    EXPECT_LT(rel_err(out, expect), kt::tol<T>()) << "with_wpe=" << with_wpe;
  }
}

TYPED_TEST(KernelRef, EmbeddingBackwardAccumulatesRepeatedTokens) {
  using T = TypeParam;
  const int B = 2, T_ = 9, C = 70, v0 = 3, Vl = 6, V = 12;  // C > 64: two column blocks
  const int BT = B * T_;
  auto tok = kt::random_tokens(this->rng, BT, 0, V);  // 18 tokens over 12 ids: repeats for sure
  tok[4] = tok[5] = tok[6] = v0 + 2;
  const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(BT) * C);
  const Vec dwte0 = kt::random_vec(this->rng, static_cast<size_t>(Vl) * C);
  const Vec dwpe0 = kt::random_vec(this->rng, static_cast<size_t>(T_) * C);
  for (bool with_wpe : {true, false}) {
    Vec dwte = dwte0, dwpe = dwpe0;
    ref::embedding_backward(dwte, with_wpe ? &dwpe : nullptr, dout, tok, BT, T_, C, v0, Vl);
    auto dwte_t = cast<T>(dwte0), dwpe_t = cast<T>(dwpe0), dout_t = cast<T>(dout);
    gt::embedding_backward(dwte_t.data(), with_wpe ? dwpe_t.data() : nullptr, dout_t.data(), tok.data(), BT, T_, C,
                           v0, Vl);
    EXPECT_LT(rel_err(dwte_t, dwte), kt::tol<T>()) << "with_wpe=" << with_wpe;
    EXPECT_LT(rel_err(dwpe_t, dwpe), kt::tol<T>()) << "with_wpe=" << with_wpe;
  }
}

// wte's gradient as the device split computes it (one team per distinct token over the grouped tokens,
// token_groups.hpp), and the host split's column blocks: repeated tokens, every token the same, and a vocabulary
// shard of prime size at a prime offset (37 rows from 29, V = 97), with tokens outside the shard on both sides.
// Against the double reference within kt::tol<T>() (each element a sum of at most BT = 130 terms), and bit for bit
// against the order both splits promise, replayed here in T: each element's initial value, then its token's rows
// in position order (additions only, so no FMA contraction can differ). Both entry points: with the groups
// prepared (the model's) and without (grouped through the host).
TYPED_TEST(KernelRef, EmbeddingBackwardTokenGroups) {
  using T = TypeParam;
  const int T_ = 65, B = 2, BT = B * T_, C = 67, v0 = 29, Vl = 37, V = 97;
  std::vector<std::vector<int32_t>> cases;
  cases.push_back(kt::random_tokens(this->rng, BT, 0, V).host());  // ~1.3 per id, some ids many times
  cases.push_back(std::vector<int32_t>(BT, v0 + 11));                 // one token everywhere: one group of 130
  cases.push_back(kt::random_tokens(this->rng, BT, v0 + 3, v0 + 7).host());  // four ids, ~33 rows each
  cases[2][0] = v0;
  cases[2][1] = v0 + Vl - 1;
  cases[2][2] = v0 + Vl;
  cases[2][3] = v0 - 1;
  cases[2][4] = V - 1;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::vector<int32_t>& tokens = cases[ci];
    // the grouping itself: a permutation of the positions, equal tokens adjacent and ascending in position
    std::vector<int32_t> packed;
    const int n = gt::group_tokens(tokens.data(), BT, packed);
    const gt::TokenGroups hg = gt::token_groups_at(packed.data(), BT, n);
    std::vector<int> seen(BT, 0);
    for (int g = 0; g < n; ++g) {
      ASSERT_LT(hg.start[g], hg.start[g + 1]);
      if (g > 0) {
        ASSERT_LT(uint32_t(hg.token[g - 1]), uint32_t(hg.token[g]));
      }
      for (int j = hg.start[g]; j < hg.start[g + 1]; ++j) {
        ASSERT_EQ(tokens[hg.pos[j]], hg.token[g]);
        if (j > hg.start[g]) {
          ASSERT_LT(hg.pos[j - 1], hg.pos[j]);
        }
        ++seen[hg.pos[j]];
      }
    }
    ASSERT_EQ(hg.start[0], 0);
    ASSERT_EQ(hg.start[n], BT);
    ASSERT_EQ(std::count(seen.begin(), seen.end(), 1), BT);

    const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(BT) * C);
    const Vec dwte0 = kt::random_vec(this->rng, static_cast<size_t>(Vl) * C);
    Vec dwte = dwte0;
    ref::embedding_backward(dwte, nullptr, dout, tokens, BT, T_, C, v0, Vl);
    std::vector<T> order = cast<T>(dwte0).host();  // the promised order, in T
    for (int i = 0; i < BT; ++i)
      if (tokens[i] >= v0 && tokens[i] < v0 + Vl)
        for (int c = 0; c < C; ++c) order[size_t(tokens[i] - v0) * C + c] += T(dout[size_t(i) * C + c]);
    kt::DVec<int32_t> tok_d(tokens), packed_d(packed);
    auto dout_t = cast<T>(dout);
    for (bool prepared : {true, false}) {
      auto dwte_t = cast<T>(dwte0);
      if (prepared)
        gt::embedding_backward(dwte_t.data(), nullptr, dout_t.data(), tok_d.data(), BT, T_, C, v0, Vl,
                               gt::token_groups_at(packed_d.data(), BT, n));
      else
        gt::embedding_backward(dwte_t.data(), nullptr, dout_t.data(), tok_d.data(), BT, T_, C, v0, Vl);
      EXPECT_LT(rel_err(dwte_t, dwte), kt::tol<T>()) << "case " << ci << " prepared=" << prepared;
      EXPECT_EQ(dwte_t.host(), order) << "case " << ci << " prepared=" << prepared;
    }
  }
}

TYPED_TEST(KernelRef, LayerNormForward) {
  using T = TypeParam;
  const int N = 9, C = 37;
  const Vec x = kt::random_vec(this->rng, static_cast<size_t>(N) * C, 2.0, 4.0);  // offset mean
  const Vec w = kt::random_vec(this->rng, C), b = kt::random_vec(this->rng, C);
  Vec out, mean, rstd;
  ref::layernorm_forward(out, mean, rstd, x, w, b, N, C);
  auto out_t = kt::poisoned<T>(out.size()), mean_t = kt::poisoned<T>(N), rstd_t = kt::poisoned<T>(N);
  auto x_t = cast<T>(x), w_t = cast<T>(w), b_t = cast<T>(b);
  gt::layernorm_forward(out_t.data(), mean_t.data(), rstd_t.data(), x_t.data(), w_t.data(), b_t.data(), N, C);
  // x has mean ~3 and spread ~0.6: centring loses ~2 bits in float
  const double tol = 4 * kt::tol<T>();
  EXPECT_LT(rel_err(out_t, out), tol);
  EXPECT_LT(rel_err(mean_t, mean), tol);
  EXPECT_LT(rel_err(rstd_t, rstd), tol);
}

TYPED_TEST(KernelRef, LayerNormBackwardAccumulates) {
  using T = TypeParam;
  const int N = 2 * 64 + 13, C = 70;
  const Vec x = kt::random_vec(this->rng, static_cast<size_t>(N) * C, -2.0, 2.0);
  const Vec w = kt::random_vec(this->rng, C), b = kt::random_vec(this->rng, C);
  const Vec dout = kt::random_vec(this->rng, x.size());
  const Vec dx0 = kt::random_vec(this->rng, x.size()), dw0 = kt::random_vec(this->rng, C),
            db0 = kt::random_vec(this->rng, C);
  Vec dx = dx0, dw = dw0, db = db0;
  ref::layernorm_backward(dx, dw, db, dout, x, w, N, C);
  auto x_t = cast<T>(x), w_t = cast<T>(w), b_t = cast<T>(b), dout_t = cast<T>(dout);
  auto out_t = kt::poisoned<T>(x.size()), mean_t = kt::poisoned<T>(N), rstd_t = kt::poisoned<T>(N);
  gt::layernorm_forward(out_t.data(), mean_t.data(), rstd_t.data(), x_t.data(), w_t.data(), b_t.data(), N, C);
  auto dx_t = cast<T>(dx0), dw_t = cast<T>(dw0), db_t = cast<T>(db0);
  auto part = kt::poisoned<T>(gt::colsum_partials_elems(N, 2 * C));  // overwritten before it is read
  gt::layernorm_backward(dx_t.data(), dw_t.data(), db_t.data(), part.data(), dout_t.data(), x_t.data(), w_t.data(),
                         mean_t.data(), rstd_t.data(), N, C);
  EXPECT_LT(rel_err(dx_t, dx), 4 * kt::tol<T>());
  EXPECT_LT(rel_err(dw_t, dw), kt::tol<T>());
  EXPECT_LT(rel_err(db_t, db), kt::tol<T>());
}

TYPED_TEST(KernelRef, LinearForwardWithAndWithoutBias) {
  using T = TypeParam;
  const int N = 7, IN = 19, OUT = 11;
  const Vec x = kt::random_vec(this->rng, static_cast<size_t>(N) * IN);
  const Vec w = kt::random_vec(this->rng, static_cast<size_t>(OUT) * IN);
  const Vec b = kt::random_vec(this->rng, OUT);
  auto x_t = cast<T>(x), w_t = cast<T>(w), b_t = cast<T>(b);
  for (bool with_bias : {true, false}) {
    Vec out;
    ref::linear_forward(out, x, w, with_bias ? &b : nullptr, N, IN, OUT);
    auto out_t = kt::poisoned<T>(out.size());
    gt::linear_forward(out_t.data(), x_t.data(), w_t.data(), with_bias ? b_t.data() : nullptr, N, IN, OUT);
    EXPECT_LT(rel_err(out_t, out), kt::tol<T>()) << "with_bias=" << with_bias;
  }
}

// The MLP's fc layer with its GELU (linear_gelu.hpp): out = gelu(x W^T + b) against the double reference, and
// the backward dL/d(pre-activation) = gelu'(x W^T + b) * dout from what the forward kept in pre. The host split
// is linear_forward + gelu_forward/gelu_backward (pre: the biased pre-activation, compared here too); the device
// split keeps x W^T in pre and adds the bias in its fused kernels. Tolerance: kt::tol<T>() on the products, as in
// LinearForward, times 4 for gelu's conditioning (|x gelu''/gelu'| <= ~2 over [-4, 4], where these inputs lie).
TYPED_TEST(KernelRef, LinearGeluForwardBackward) {
  using T = TypeParam;
  const int N = 7, IN = 19, OUT = 70;
  const Vec x = kt::random_vec(this->rng, static_cast<size_t>(N) * IN);
  const Vec w = kt::random_vec(this->rng, static_cast<size_t>(OUT) * IN);
  const Vec b = kt::random_vec(this->rng, OUT);
  const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(N) * OUT);
  auto x_t = cast<T>(x), w_t = cast<T>(w), b_t = cast<T>(b), dout_t = cast<T>(dout);
  for (bool with_bias : {true, false}) {
    Vec pre, out, dpre;
    ref::linear_gelu(pre, out, dpre, x, w, with_bias ? &b : nullptr, dout, N, IN, OUT);
    auto pre_t = kt::poisoned<T>(pre.size()), out_t = kt::poisoned<T>(pre.size()), dpre_t = kt::poisoned<T>(pre.size());
    gt::linear_gelu_forward(pre_t.data(), out_t.data(), x_t.data(), w_t.data(), with_bias ? b_t.data() : nullptr, N,
                            IN, OUT);
    gt::gelu_bias_backward(dpre_t.data(), pre_t.data(), with_bias ? b_t.data() : nullptr, dout_t.data(), N, OUT);
    EXPECT_LT(rel_err(out_t, out), 4 * kt::tol<T>()) << "with_bias=" << with_bias;
    EXPECT_LT(rel_err(dpre_t, dpre), 4 * kt::tol<T>()) << "with_bias=" << with_bias;
    if (gt::kHostBlocking) {
      EXPECT_LT(rel_err(pre_t, pre), kt::tol<T>()) << "with_bias=" << with_bias;
    }
  }
}

// The tensor-parallel epilogues (tp_epilogue.hpp): one row per work item on the host split, one element on the
// device split, the same arithmetic: exactly T(res + y + bias) and T(x + wpe[i % T]) computed in T here.
TYPED_TEST(KernelRef, TpEpiloguesExact) {
  using T = TypeParam;
  const int N = 67, C = 70, T_ = 5;  // N rows = N tokens of T_ positions
  const long n = long(N) * C;
  const Vec a = kt::random_vec(this->rng, n), y = kt::random_vec(this->rng, n), bias = kt::random_vec(this->rng, C);
  const Vec wpe = kt::random_vec(this->rng, size_t(T_) * C);
  auto a_t = cast<T>(a), y_t = cast<T>(y), bias_t = cast<T>(bias), wpe_t = cast<T>(wpe);
  Vec sum3(n), pos(n);
  for (long e = 0; e < n; ++e) {
    sum3[e] = double(T(T(a[e]) + T(y[e]) + T(bias[e % C])));
    pos[e] = double(T(T(a[e]) + T(wpe[((e / C) % T_) * C + e % C])));
  }
  auto rb = kt::poisoned<T>(n);
  gt::residual_bias_forward(rb.data(), a_t.data(), y_t.data(), bias_t.data(), N, C);
  EXPECT_EQ(kt::to_double(rb), sum3);
  auto xp = a_t;
  gt::add_positions(xp.data(), wpe_t.data(), N, T_, C);
  EXPECT_EQ(kt::to_double(xp), pos);
}

TYPED_TEST(KernelRef, LinearBackwardSetAndAccumulate) {
  using T = TypeParam;
  const int N = 2 * 64 + 13, IN = 13, OUT = 70;
  const Vec x = kt::random_vec(this->rng, static_cast<size_t>(N) * IN);
  const Vec w = kt::random_vec(this->rng, static_cast<size_t>(OUT) * IN);
  const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(N) * OUT);
  const Vec dw0 = kt::random_vec(this->rng, w.size()), db0 = kt::random_vec(this->rng, OUT);
  Vec dx, dw = dw0, db = db0;
  ref::linear_backward(dx, dw, &db, dout, x, w, N, IN, OUT);
  auto x_t = cast<T>(x), w_t = cast<T>(w), dout_t = cast<T>(dout);
  {
    auto dx_t = kt::poisoned<T>(dx.size());
    auto dw_t = cast<T>(dw0), db_t = cast<T>(db0);
    auto part = kt::poisoned<T>(gt::colsum_partials_elems(N, OUT));
    gt::linear_backward(dx_t.data(), dw_t.data(), db_t.data(), part.data(), dout_t.data(), x_t.data(), w_t.data(), N,
                        IN, OUT);
    EXPECT_LT(rel_err(dx_t, dx), kt::tol<T>());
    EXPECT_LT(rel_err(dw_t, dw), kt::tol<T>());
    EXPECT_LT(rel_err(db_t, db), kt::tol<T>());
  }
  {  // optional outputs skipped: only dweight changes
    auto dw_t = cast<T>(dw0);
    gt::linear_backward(nullptr, dw_t.data(), nullptr, nullptr, dout_t.data(), x_t.data(), w_t.data(), N, IN, OUT);
    EXPECT_LT(rel_err(dw_t, dw), kt::tol<T>());
  }
}

// The bias gradient (tp_epilogue.hpp), a plain column sum, for row counts around the device split's row chunk
// (kColsumRows = 64): none, one, a chunk less one, one chunk, one row more, two chunks and a partial one.
// Against the double reference within kt::tol<T>() (norm-wise; the float sums of <= 141 terms of size <= 1 err by
// ~sqrt(N) eps in practice, 7e-7 at most). And bit for bit against the order each split promises, replayed here in
// T (additions only, so no FMA contraction can differ): rows in order per column on the host split (the CPU
// build's bits); on the device split, each chunk's rows in order into a partial, then the partials in chunk
// order, so a GPU gives the same bits on every run whatever its thread count.
TYPED_TEST(KernelRef, BiasBackwardColumnSums) {
  using T = TypeParam;
  const int C = 37;
  for (int N : {0, 1, 63, 64, 65, 2 * 64 + 13}) {
    const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(N) * C), db0 = kt::random_vec(this->rng, C);
    Vec db = db0;
    for (int i = 0; i < N; ++i)
      for (int c = 0; c < C; ++c) db[c] += dout[static_cast<size_t>(i) * C + c];
    auto dout_t = cast<T>(dout), db_t = cast<T>(db0);
    auto part = kt::poisoned<T>(gt::colsum_partials_elems(N, C));
    gt::bias_backward(db_t.data(), part.data(), dout_t.data(), N, C);
    EXPECT_LT(rel_err(db_t, db), kt::tol<T>()) << "N=" << N;
    const std::vector<T> d = dout_t, b0 = cast<T>(db0);
    const long chunk = gt::kHostBlocking ? N : gt::kColsumRows;  // the host split: one chunk of all rows
    for (int c = 0; c < C; ++c) {
      T sum = 0;
      for (long i0 = 0; i0 < N; i0 += chunk) {
        T partial = 0;
        for (long i = i0; i < std::min<long>(N, i0 + chunk); ++i) partial += d[i * C + c];
        sum = gt::kHostBlocking ? partial : sum + partial;
      }
      ASSERT_EQ(db_t[c], T(b0[c] + sum)) << "N=" << N << " c=" << c;
    }
  }
}

// T_ = 70 crosses the 64-row query block of the kernel; T_ = 5 is a single partial block.
TYPED_TEST(KernelRef, AttentionForwardAndBackward) {
  using T = TypeParam;
  struct Shape { int B, T_, NH, hd; };
  for (Shape s : {Shape{2, 5, 3, 4}, Shape{2, 70, 2, 5}, Shape{1, 130, 1, 8}}) {
    const int Cl = s.NH * s.hd;
    const Vec qkv = kt::random_vec(this->rng, static_cast<size_t>(s.B) * s.T_ * 3 * Cl, -2.0, 2.0);
    const Vec dout = kt::random_vec(this->rng, static_cast<size_t>(s.B) * s.T_ * Cl);
    Vec out, att, dqkv;
    ref::attention_forward(out, att, qkv, s.B, s.T_, s.NH, s.hd);
    ref::attention_backward(dqkv, dout, qkv, s.B, s.T_, s.NH, s.hd);
    auto qkv_t = cast<T>(qkv), dout_t = cast<T>(dout);
    auto out_t = kt::poisoned<T>(out.size()), att_t = kt::poisoned<T>(att.size());
    gt::attention_forward(out_t.data(), att_t.data(), qkv_t.data(), s.B, s.T_, s.NH, s.hd);
    EXPECT_LT(rel_err(att_t, att), kt::tol<T>()) << "T=" << s.T_;
    EXPECT_LT(rel_err(out_t, out), kt::tol<T>()) << "T=" << s.T_;
    auto dqkv_t = kt::poisoned<T>(qkv.size());
    auto scratch = kt::poisoned<T>(gt::attention_scratch_elems(s.NH, s.T_));
    gt::attention_backward(dqkv_t.data(), scratch.data(), dout_t.data(), qkv_t.data(), att_t.data(), s.B, s.T_, s.NH,
                           s.hd);
    EXPECT_LT(rel_err(dqkv_t, dqkv), 4 * kt::tol<T>()) << "T=" << s.T_;
  }
}

TYPED_TEST(KernelRef, GeluForwardBackward) {
  using T = TypeParam;
  const long N = 2 * 4096 + 37;  // three chunks, the last one partial
  Vec x = kt::random_vec(this->rng, N, -6.0, 6.0);
  const double edges[] = {0.0, -0.0, 1e-30, -1e-30, 12.0, -12.0, 30.0, -30.0, 1e4, -1e4};
  for (size_t k = 0; k < sizeof(edges) / sizeof(edges[0]); ++k) x[k] = edges[k];
  const Vec dout = kt::random_vec(this->rng, N);
  Vec y, dx;
  ref::gelu_forward_backward(y, dx, x, dout);
  auto x_t = cast<T>(x), dout_t = cast<T>(dout);
  auto y_t = kt::poisoned<T>(N), dx_t = kt::poisoned<T>(N);
  gt::gelu_forward(y_t.data(), x_t.data(), N);
  gt::gelu_backward(dx_t.data(), x_t.data(), dout_t.data(), N);
  EXPECT_LT(rel_err(y_t, y), kt::tol<T>());
  EXPECT_LT(rel_err(dx_t, dx), kt::tol<T>());
  // elementwise, in units of the type's epsilon: relative where the value is well conditioned, plus an
  // absolute term for the reference's own cancellation in 1 + tanh(u) (u << 0) and 1 - tanh(u)^2
  const double eps = std::numeric_limits<T>::epsilon();
  for (long i = 0; i < N; ++i) {
    const double ax = std::fabs(x[i]);
    ASSERT_LE(std::fabs(double(y_t[i]) - y[i]), 16 * eps * std::fabs(y[i]) + 4 * eps * ax + 1e-300) << "x=" << x[i];
    ASSERT_LE(std::fabs(double(dx_t[i]) - dx[i]),
              16 * eps * (std::fabs(dx[i]) + (1 + ax + ax * ax * ax) * std::fabs(dout[i])) + 1e-300)
        << "x=" << x[i];
  }
}

TYPED_TEST(KernelRef, Elementwise) {
  using T = TypeParam;
  const long N = 4096 + 5;
  const Vec a = kt::random_vec(this->rng, N), b = kt::random_vec(this->rng, N);
  auto a_t = cast<T>(a), b_t = cast<T>(b);
  Vec sum(N), scaled(N);
  for (long i = 0; i < N; ++i) {
    sum[i] = double(T(a[i] + b[i]));  // float sum rounded once: the kernel must match it exactly
    scaled[i] = double(T(a[i] * 0.75));
  }
  auto out = kt::poisoned<T>(N);
  gt::residual_forward(out.data(), a_t.data(), b_t.data(), N);
  EXPECT_EQ(kt::to_double(out), sum);
  auto y = a_t;
  gt::add_inplace(y.data(), b_t.data(), N);
  EXPECT_EQ(kt::to_double(y), sum);
  y = a_t;
  gt::add_scaled(y.data(), b_t.data(), T(0.5), N);  // a power of two: the product is exact, fused or not
  Vec axpy(N);
  for (long i = 0; i < N; ++i) axpy[i] = double(T(a[i] + 0.5 * b[i]));
  EXPECT_EQ(kt::to_double(y), axpy);
  y = a_t;
  gt::scale_inplace(y.data(), N, T(0.75));
  EXPECT_EQ(kt::to_double(y), scaled);
  auto f = kt::poisoned<T>(N);
  gt::fill(f.data(), N, T(2.5));
  EXPECT_EQ(kt::to_double(f), Vec(N, 2.5));
  auto c = kt::poisoned<T>(N);
  gt::copy(c.data(), a_t.data(), N);
  EXPECT_EQ(kt::to_double(c), a);
  double ss = 0.0;
  for (long i = 0; i < N; ++i) ss += a[i] * a[i];
  EXPECT_NEAR(gt::sum_squares(a_t.data(), N), ss, 1e-13 * ss);
  EXPECT_EQ(gt::sum_squares(a_t.data(), 0), 0.0);
}

// Vocab-parallel cross-entropy emulated on one process: three uneven shards, the all-reduces done here
// (MAX of rowmax, SUM of sumexp and tlogit), compared with the full-vocabulary reference.
TYPED_TEST(KernelRef, CrossEntropyVocabParallel) {
  using T = TypeParam;
  const int N = 6, V = 150;
  const int bounds[] = {0, 17, 81, V};  // shards of 17, 64, 69 columns
  Vec logits = kt::random_vec(this->rng, static_cast<size_t>(N) * V, -8.0, 8.0);
  auto tgt = kt::random_tokens(this->rng, N, 0, V);
  tgt[0] = 0;
  tgt[1] = V - 1;
  tgt[2] = 17;
  const double scale = 1.0 / N;
  Vec loss, dlogits;
  ref::crossentropy(loss, dlogits, logits, tgt, N, V, scale);

  // the logits are floats (random_vec), which T holds exactly
  kt::ShardedCe<T> ce(logits, {bounds, bounds + 4}, tgt, N);
  auto loss_t = kt::poisoned<T>(N);
  gt::ce_loss(loss_t.data(), ce.gsum.data(), ce.gmax.data(), ce.glogit.data(), N);
  EXPECT_LT(rel_err(loss_t, loss), kt::tol<T>());
  // The device-side sum of the token losses (ce_loss_accumulate), called twice as for two micro-batches, into an
  // accumulator that starts at 0.5 (it adds, it never overwrites): against the reference's double sum. Each token
  // loss carries a relative error below kt::tol<T>() (checked just above) and all are positive (a log-sum-exp
  // above the target logit), so the sum's relative error is below it too.
  kt::DVec<double> acc(1, 0.5);
  gt::ce_loss_accumulate(acc.data(), ce.gsum.data(), ce.gmax.data(), ce.glogit.data(), N);
  gt::ce_loss_accumulate(acc.data(), ce.gsum.data(), ce.gmax.data(), ce.glogit.data(), N);
  double ref_sum = 0;
  for (double l : loss) ref_sum += l;
  EXPECT_NEAR(acc[0] - 0.5, 2 * ref_sum, 2 * ref_sum * kt::tol<T>());
  if (gt::kHostBlocking) {  // the host split adds the tokens in order: the sum of ce_loss's outputs, bit for bit
    double host_sum = 0;
    for (int i = 0; i < N; ++i) host_sum += static_cast<double>(loss_t[i]);
    EXPECT_EQ(acc[0], (0.5 + host_sum) + host_sum);
  }
  EXPECT_LT(rel_err(ce.backward(tgt, T(scale)), dlogits), kt::tol<T>());
}

TYPED_TEST(KernelRef, AdamWStepAndClipScale) {
  using T = TypeParam;
  const long N = 4096 + 99;
  Vec p = kt::random_vec(this->rng, N), g = kt::random_vec(this->rng, N), m = kt::random_vec(this->rng, N, -0.1, 0.1),
      v = kt::random_vec(this->rng, N, 0.0, 0.01);
  auto p_t = cast<T>(p), g_t = cast<T>(g), m_t = cast<T>(m), v_t = cast<T>(v);
  const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, gs = 0.5;
  for (int step = 1; step <= 3; ++step) {
    ref::adamw(p, g, m, v, lr, b1, b2, eps, wd, step, gs);
    gt::adamw_update(p_t.data(), g_t.data(), m_t.data(), v_t.data(), N, T(lr), T(b1), T(b2), T(eps), T(wd), step,
                     T(gs));
  }
  EXPECT_LT(rel_err(p_t, p), kt::tol<T>());
  EXPECT_LT(rel_err(m_t, m), kt::tol<T>());
  EXPECT_LT(rel_err(v_t, v), kt::tol<T>());
  EXPECT_DOUBLE_EQ(gt::clip_scale(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_EQ(gt::clip_scale(0.5, 1.0), 1.0);
  EXPECT_EQ(gt::clip_scale(100.0, 0.0), 1.0);
  EXPECT_EQ(gt::clip_scale(100.0, -1.0), 1.0);
}
