// The optimizer's fused passes (kernels/adamw_flat.hpp) against what they replace and against a double reference:
//   sum_squares_pieces: the norm of a set of tensor ranges (with gaps between them, some ranges longer than one
//     piece, one range cut by a shard boundary) against the long double sum of squares, and against the per-tensor
//     sum_squares it replaces;
//   adamw_pieces: bit for bit the per-tensor adamw_update calls it replaces (the same elementwise arithmetic),
//     elements outside the ranges untouched.
// Built twice: the host split and the device split (GT_KERNELS_DEVICE_BLOCKING: one team per piece).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/adamw_flat.hpp"
#include "tests/kernels/test_util.hpp"

namespace {

struct Range2 {
  long begin, end;
  float wd;
};

// Tensor ranges of a 40000-element flat buffer: gaps (padding, tensors another rank owns), a range of more than
// two pieces (kSumBlock = 4096), tiny ranges, and one that starts mid-tensor (a ZeRO shard boundary).
const std::vector<Range2> kRanges = {{3, 10, 0.1f},     {16, 9000, 0.1f},   {9000, 9001, 0.0f},
                                     {9100, 13000, 0.0f}, {20000, 33333, 0.1f}, {35001, 40000, 0.05f}};
constexpr long kN = 40000;

std::vector<gt::FlatPiece> pieces_of(const std::vector<Range2>& ranges, long offset) {
  std::vector<gt::FlatPiece> out;
  for (const Range2& r : ranges) gt::append_pieces(&out, r.begin + offset, r.end + offset, r.wd);
  return out;
}

}  // namespace

TEST(AdamWFlat, PiecesCoverTheRangesInBlocksFromEachStart) {
  auto p = pieces_of(kRanges, 0);
  long covered = 0;
  for (const auto& pc : p) {
    EXPECT_GT(pc.end, pc.begin);
    EXPECT_LE(pc.end - pc.begin, gt::kSumBlock);
    covered += pc.end - pc.begin;
  }
  long want = 0;
  for (const auto& r : kRanges) want += r.end - r.begin;
  EXPECT_EQ(covered, want);
  EXPECT_EQ(p[1].begin, 16);
  EXPECT_EQ(p[2].begin, 16 + gt::kSumBlock);  // blocks start at the range's start, as sum_squares' do
}

TEST(AdamWFlat, NormOfPiecesMatchesDoubleReferenceAndPerTensorSums) {
  std::mt19937_64 rng(7);
  kt::Vec xd = kt::random_vec(rng, kN, -3.0, 3.0);
  kt::DVec<float> x = kt::cast<float>(xd);
  const std::vector<float> xh = x;
  // The buffer holds flat elements from 1000 on (a shard's extent): piece ranges are offset by it.
  const long x0 = 1000;
  const gt::PieceView pv = gt::to_device(pieces_of(kRanges, x0));
  const double fused = gt::sum_squares_pieces(x.data(), x0, pv);
  long double ref = 0;
  double per_tensor = 0;
  for (const Range2& r : kRanges) {
    for (long i = r.begin; i < r.end; ++i) ref += (long double)xh[i] * (long double)xh[i];
    per_tensor += gt::sum_squares(x.data() + r.begin, r.end - r.begin);
  }
  // Both sum the same float squares (exact in double) in double with different association: the error of any
  // order is at most (n-1) u sum for n positive terms; the pieces' lanes keep n per chain below ~600, and the
  // device split's team tree is shallower, so 1e-12 relative holds with room while a missing or doubled piece
  // (>= 1e-5 of the sum here) fails.
  EXPECT_NEAR(fused, double(ref), 1e-12 * double(ref));
  EXPECT_NEAR(fused, per_tensor, 1e-12 * per_tensor);
}

TEST(AdamWFlat, AdamWOfPiecesIsBitwiseThePerTensorUpdate) {
  std::mt19937_64 rng(11);
  auto make = [&](double lo, double hi) { return kt::cast<float>(kt::random_vec(rng, kN, lo, hi)); };
  kt::DVec<float> p = make(-1, 1), g = make(-0.1, 0.1), m = make(-0.01, 0.01), v = make(0, 1e-4);
  kt::DVec<float> p2 = p, m2 = m, v2 = v;
  const float lr = 3e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, g_scale = 0.7f;
  const int step = 5;
  // fused: buffers hold the whole layout here (offsets 0)
  gt::adamw_pieces(p.data(), 0, g.data(), 0, m.data(), v.data(), 0, gt::to_device(pieces_of(kRanges, 0)), lr, b1, b2,
                   eps, step, g_scale);
  for (const Range2& r : kRanges)
    gt::adamw_update(p2.data() + r.begin, g.data() + r.begin, m2.data() + r.begin, v2.data() + r.begin,
                     r.end - r.begin, lr, b1, b2, eps, r.wd, step, g_scale);
  const std::vector<float> a = p, b = p2, am = m, bm = m2, av = v, bv = v2;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kN * sizeof(float)), 0) << "parameters differ";
  EXPECT_EQ(std::memcmp(am.data(), bm.data(), kN * sizeof(float)), 0) << "first moments differ";
  EXPECT_EQ(std::memcmp(av.data(), bv.data(), kN * sizeof(float)), 0) << "second moments differ";
  // and it did update: an element inside a range moved, one in a gap did not
  EXPECT_NE(a[20], 0.0f);
  const std::vector<float> orig = kt::cast<float>([&] { std::mt19937_64 r(11); return kt::random_vec(r, kN, -1, 1); }());
  EXPECT_NE(a[20], orig[20]);
  EXPECT_EQ(a[12], orig[12]);
}
