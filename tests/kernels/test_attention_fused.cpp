// The fused causal attention (kernels/attention_fused.hpp) against the naive double reference of reference.hpp
// (which materialises the T x T probabilities), in double, float, bf16 and fp16, on this build's work split; the
// test is built twice, the second time with the GPU split on the host (GT_KERNELS_DEVICE_BLOCKING), so both the
// GEMM tiles and the team-scratch kernels are checked. Grouped-query heads (NKV < NH) are checked against the
// reference run on K and V repeated per query head, their gradients summed over the group.
//
// Shapes: T = 5 (one partial tile), 70 and 67 (cross the device split's tiles: 64 at these head sizes), 130 (one
// head; crosses the host split's 128 x 128 tiles, with a 2-row last tile, and two device tiles), T = 67 with 4 query
// heads on 2 key/value heads, and T = 67 with 6 query heads on 2 in the grouped layout ([q q q k v] per key/value
// head, the Llama model's). No T is a multiple of a tile.
//
// Tolerances (norm-wise relative error, kt::rel_err):
// - double: 1e-13, as every double kernel test (sums of <= 130 terms of order 1; measured ~1e-16).
// - float: 2e-6 for out, lse and dqkv (kt::tol<float>, the materialized path's for out; it allows dqkv 4x that
//   because its stored dS cancels). Measured 2026-12-04: out <= 1.7e-7, lse <= 5.2e-8, dqkv <= 2.8e-7.
// - bf16 / fp16 (inputs rounded to T first, the reference computes in double on exactly those values): out carries
//   one rounding to T (u: 2^-8 bf16, 2^-11 fp16; the rounding error of a vector is at most u norm-wise) plus, on
//   the host split, the rounding of the probabilities to T as GEMM operands (the device split computes in fp32);
//   lse stays fp32 (1e-5). dqkv: its own rounding, P and dS rounded as operands (host split), and D computed from
//   the rounded out, whose error dS = P (dP - D) amplifies by the cancellation there. The materialized path's test
//   allows 6 u (it stores the rounded probabilities and dS); 2 u here. Measured 2026-12-04: host split out
//   0.36-0.5 u, dqkv 0.63-0.71 u; device split out 0.31-0.42 u, dqkv 0.49-0.59 u (bf16 and fp16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention_fused.hpp"
#include "tests/kernels/reference.hpp"
#include "tests/kernels/test_util.hpp"

using kt::exact_in;
using kt::rel_err;
using kt::to;
using kt::Vec;

namespace {

struct Shape {
  int B, T_, NH, NKV, hd;
  bool grouped = false;  // the kernel gets its rows in the grouped layout [q (G heads) k v] per key/value head
  int ld() const { return (NH + 2 * NKV) * hd; }
};

// Rows of the plain layout [q heads | k heads | v heads] rearranged into the grouped one (or back: inverse).
Vec regroup(const Vec& x, const Shape& s, bool inverse) {
  const int G = s.NH / s.NKV, hd = s.hd, ld = s.ld();
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / size_t(ld); ++r)
    for (int j = 0; j < s.NKV; ++j)
      for (int p = 0; p < G + 2; ++p) {
        const int plain = p < G ? j * G + p : p == G ? s.NH + j : s.NH + s.NKV + j;
        const int grouped = j * (G + 2) + p;
        for (int d = 0; d < hd; ++d) {
          const size_t a = r * ld + size_t(plain) * hd + d, b = r * ld + size_t(grouped) * hd + d;
          if (inverse) y[a] = x[b];
          else y[b] = x[a];
        }
      }
  return y;
}

// The reference on grouped-query inputs: K and V of head h / (NH/NKV) repeated per query head (the usual
// multi-head layout, 3 NH hd per row), the reference run there, and the gradients of the repeated K and V summed
// back onto their head. Also lse[b,h,t] = log sum_s exp(scale q_t . k_s) over s <= t, in double.
struct Expected {
  Vec out, lse, dqkv;
};
Expected reference(const Vec& qkv, const Vec& dout, const Shape& s) {
  const int C = s.NH * s.hd, G = s.NH / s.NKV, ld = s.ld();
  const size_t BT = size_t(s.B) * s.T_;
  Vec mha(BT * 3 * C);
  for (size_t r = 0; r < BT; ++r)
    for (int h = 0; h < s.NH; ++h)
      for (int d = 0; d < s.hd; ++d) {
        const int kvh = h / G;
        mha[r * 3 * C + h * s.hd + d] = qkv[r * ld + h * s.hd + d];
        mha[r * 3 * C + C + h * s.hd + d] = qkv[r * ld + (s.NH + kvh) * s.hd + d];
        mha[r * 3 * C + 2 * C + h * s.hd + d] = qkv[r * ld + (s.NH + s.NKV + kvh) * s.hd + d];
      }
  Expected e;
  Vec att, dmha;
  ref::attention_forward(e.out, att, mha, s.B, s.T_, s.NH, s.hd);
  ref::attention_backward(dmha, dout, mha, s.B, s.T_, s.NH, s.hd);
  e.dqkv.assign(qkv.size(), 0.0);
  for (size_t r = 0; r < BT; ++r)
    for (int h = 0; h < s.NH; ++h)
      for (int d = 0; d < s.hd; ++d) {
        const int kvh = h / G;
        e.dqkv[r * ld + h * s.hd + d] = dmha[r * 3 * C + h * s.hd + d];
        e.dqkv[r * ld + (s.NH + kvh) * s.hd + d] += dmha[r * 3 * C + C + h * s.hd + d];
        e.dqkv[r * ld + (s.NH + s.NKV + kvh) * s.hd + d] += dmha[r * 3 * C + 2 * C + h * s.hd + d];
      }
  const double scale = 1.0 / std::sqrt(double(s.hd));
  e.lse.assign(size_t(s.B) * s.NH * s.T_, 0.0);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.NH; ++h)
      for (int t = 0; t < s.T_; ++t) {
        Vec sc(size_t(t) + 1);
        double mx = -INFINITY;
        for (int u = 0; u <= t; ++u) {
          double dot = 0;
          for (int d = 0; d < s.hd; ++d)
            dot += mha[(size_t(b) * s.T_ + t) * 3 * C + h * s.hd + d] *
                   mha[(size_t(b) * s.T_ + u) * 3 * C + C + h * s.hd + d];
          sc[size_t(u)] = dot * scale;
          mx = std::max(mx, sc[size_t(u)]);
        }
        double sum = 0;
        for (double x : sc) sum += std::exp(x - mx);
        e.lse[(size_t(b) * s.NH + h) * s.T_ + t] = mx + std::log(sum);
      }
  return e;
}

template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, gt::bf16_t>) return std::ldexp(1.0, -8);
  else if constexpr (std::is_same_v<T, gt::fp16_t>) return std::ldexp(1.0, -11);
  else return 0.0;
}

struct Tol {
  double out, lse, dqkv;
};
template <class T>
Tol tolerances() {
  if constexpr (std::is_same_v<T, double>) return {1e-13, 1e-13, 1e-13};
  else if constexpr (std::is_same_v<T, float>) return {2e-6, 2e-6, 2e-6};
  else return {unit_roundoff<T>() + 1e-5, 1e-5, 2 * unit_roundoff<T>()};  // out: 1 u (measured <= 0.5 u)
}


template <class T>
class FusedAttention : public ::testing::Test {
 protected:
  std::mt19937_64 rng{20261205u + sizeof(T)};
};
using Types = ::testing::Types<double, float, gt::bf16_t, gt::fp16_t>;
TYPED_TEST_SUITE(FusedAttention, Types);

TYPED_TEST(FusedAttention, ForwardAndBackwardAgainstReference) {
  using T = TypeParam;
  using A = gt::acc_t<T>;
  const Tol tol = tolerances<T>();
  for (Shape s : {Shape{2, 5, 3, 3, 4}, Shape{2, 70, 2, 2, 5}, Shape{1, 130, 1, 1, 8}, Shape{1, 67, 4, 2, 6},
                  Shape{1, 67, 6, 2, 4, true}}) {
    const Vec qkv = exact_in<T>(this->rng, size_t(s.B) * s.T_ * s.ld(), -2.0, 2.0);
    const Vec dout = exact_in<T>(this->rng, size_t(s.B) * s.T_ * s.NH * s.hd, -1.0, 1.0);
    Expected e = reference(qkv, dout, s);
    if (s.grouped) e.dqkv = regroup(e.dqkv, s, false);
    auto qkv_t = to<T>(s.grouped ? regroup(qkv, s, false) : qkv), dout_t = to<T>(dout);
    kt::DVec<T> out_t(e.out.size(), T(NAN)), dqkv_t(qkv.size(), T(NAN));
    kt::DVec<A> lse(e.lse.size(), A(NAN));
    kt::DVec<A> scratch(size_t(gt::attention_fused_scratch_elems(s.B, s.NH, s.T_, s.hd)), A(NAN));
    gt::attention_fused_forward(out_t.data(), lse.data(), scratch.data(), qkv_t.data(), s.B, s.T_, s.NH, s.hd, s.NKV,
                                s.grouped);
    EXPECT_LT(rel_err(out_t, e.out), tol.out) << "T=" << s.T_ << " NH=" << s.NH;
    EXPECT_LT(rel_err(lse, e.lse), tol.lse) << "T=" << s.T_ << " NH=" << s.NH;
    gt::attention_fused_backward(dqkv_t.data(), scratch.data(), dout_t.data(), qkv_t.data(), out_t.data(), lse.data(),
                                 s.B, s.T_, s.NH, s.hd, s.NKV, s.grouped);
    EXPECT_LT(rel_err(dqkv_t, e.dqkv), tol.dqkv) << "T=" << s.T_ << " NH=" << s.NH;
  }
}

// Two runs on the same inputs give the same bits (fixed summation orders, no atomics).
TYPED_TEST(FusedAttention, Deterministic) {
  using T = TypeParam;
  using A = gt::acc_t<T>;
  const Shape s{1, 70, 2, 1, 8};
  const Vec qkv = exact_in<T>(this->rng, size_t(s.B) * s.T_ * s.ld(), -2.0, 2.0);
  const Vec dout = exact_in<T>(this->rng, size_t(s.B) * s.T_ * s.NH * s.hd, -1.0, 1.0);
  auto qkv_t = to<T>(qkv), dout_t = to<T>(dout);
  std::vector<float> bits[2];
  for (auto& v : bits) {
    kt::DVec<T> out_t(size_t(s.B) * s.T_ * s.NH * s.hd), dqkv_t(qkv.size());
    kt::DVec<A> lse(size_t(s.B) * s.NH * s.T_), scratch(size_t(gt::attention_fused_scratch_elems(s.B, s.NH, s.T_, s.hd)));
    gt::attention_fused_forward(out_t.data(), lse.data(), scratch.data(), qkv_t.data(), s.B, s.T_, s.NH, s.hd, s.NKV);
    gt::attention_fused_backward(dqkv_t.data(), scratch.data(), dout_t.data(), qkv_t.data(), out_t.data(), lse.data(),
                                 s.B, s.T_, s.NH, s.hd, s.NKV);
    for (const T& x : out_t.host()) v.push_back(float(x));
    for (const T& x : dqkv_t.host()) v.push_back(float(x));
  }
  ASSERT_EQ(bits[0].size(), bits[1].size());
  EXPECT_EQ(0, std::memcmp(bits[0].data(), bits[1].data(), bits[0].size() * sizeof(float)));
}

// The backward against central finite differences of the fused forward itself (double; h = 1e-5, norm-wise
// error < 1e-6 as in kernels_gradcheck), so the gradient is checked without the reference's chain rule.
TEST(FusedAttentionGrad, FiniteDifferences) {
  std::mt19937_64 rng(7);
  for (Shape s : {Shape{2, 6, 2, 2, 3}, Shape{1, 67, 2, 1, 3}}) {
    const Vec qkv = kt::random_vec(rng, size_t(s.B) * s.T_ * s.ld(), -1.5, 1.5);
    const Vec R = kt::random_vec(rng, size_t(s.B) * s.T_ * s.NH * s.hd);
    kt::DVec<double> out(R.size()), lse(size_t(s.B) * s.NH * s.T_);
    kt::DVec<double> scratch(size_t(gt::attention_fused_scratch_elems(s.B, s.NH, s.T_, s.hd)));
    auto loss = [&](const Vec& q) {
      kt::DVec<double> qd(q);
      gt::attention_fused_forward(out.data(), lse.data(), scratch.data(), qd.data(), s.B, s.T_, s.NH, s.hd, s.NKV);
      return kt::dot(out, R);
    };
    const Vec g_fd = kt::finite_diff(loss, qkv);
    kt::DVec<double> qd(qkv), dqkv(qkv.size()), Rd(R);
    gt::attention_fused_forward(out.data(), lse.data(), scratch.data(), qd.data(), s.B, s.T_, s.NH, s.hd, s.NKV);
    gt::attention_fused_backward(dqkv.data(), scratch.data(), Rd.data(), qd.data(), out.data(), lse.data(), s.B, s.T_,
                                 s.NH, s.hd, s.NKV);
    EXPECT_LT(rel_err(dqkv, g_fd), 1e-6) << "T=" << s.T_;
  }
}

}  // namespace
