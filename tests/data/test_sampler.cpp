// EpochSampler: every epoch is a permutation, epochs and seeds differ, the map is a pure function.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "src/data/sampler.hpp"

using namespace gt;

TEST(Sampler, EveryEpochIsAPermutation) {
  for (int64_t n : {1, 2, 3, 7, 16, 100, 1000, 4097}) {
    EpochSampler s(n, 12345, 1);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<int> seen(size_t(n), 0);
      for (int64_t p = 0; p < n; ++p) {
        const int64_t q = s.sequence(epoch * n + p);
        ASSERT_GE(q, 0);
        ASSERT_LT(q, n);
        ++seen[size_t(q)];
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[size_t(i)], 1) << "n=" << n << " epoch " << epoch << " seq " << i;
    }
  }
}

TEST(Sampler, EpochsSeedsAndStreamsDiffer) {
  const int64_t n = 1000;
  EpochSampler a(n, 1, 0), b(n, 2, 0), c(n, 1, 1);
  std::vector<int64_t> e0, e1, sb, sc;
  for (int64_t p = 0; p < n; ++p) {
    e0.push_back(a.sequence(p));
    e1.push_back(a.sequence(n + p));
    sb.push_back(b.sequence(p));
    sc.push_back(c.sequence(p));
  }
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, sb);
  EXPECT_NE(e0, sc);
  // not the identity either
  int fixed = 0;
  for (int64_t p = 0; p < n; ++p) fixed += e0[size_t(p)] == p;
  EXPECT_LT(fixed, 20);
}

TEST(Sampler, PureFunctionOfItsArguments) {
  EpochSampler a(777, 9, 3), b(777, 9, 3);
  for (int64_t s : {0, 1, 776, 777, 123456789}) EXPECT_EQ(a.sequence(s), b.sequence(s));
  // queried in any order: same answers
  std::vector<int64_t> fwd, back;
  for (int64_t s = 0; s < 50; ++s) fwd.push_back(a.sequence(s));
  for (int64_t s = 49; s >= 0; --s) back.insert(back.begin(), b.sequence(s));
  EXPECT_EQ(fwd, back);
}

TEST(Sampler, RejectsEmptyEpoch) { EXPECT_ANY_THROW(EpochSampler(0, 1, 0)); }
