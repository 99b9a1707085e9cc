// SyntheticSource: content is a pure function of (seed, split, sample); the stated optimal loss matches the
// conditional entropy measured from generated data.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "src/data/data_source.hpp"

using namespace gt;

namespace {
std::vector<int32_t> rows(SyntheticSource& s, Split split, const std::vector<int64_t>& samples) {
  std::vector<int32_t> out(samples.size() * size_t(s.seq_len() + 1));
  s.read(split, samples.data(), int(samples.size()), out.data());
  return out;
}
}  // namespace

TEST(Synthetic, SampleContentIndependentOfBatching) {
  SyntheticSource a(50, 16, 7, 0.2), b(50, 16, 7, 0.2);
  const std::vector<int64_t> batch = {5, 1000000007, 3, 42};
  const std::vector<int32_t> all = rows(a, Split::Train, batch);
  const size_t L = 17;
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::vector<int32_t> one = rows(b, Split::Train, {batch[i]});
    EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + i * L)) << "sample " << batch[i];
  }
  for (int32_t t : all) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 50);
  }
}

TEST(Synthetic, SeedsAndSplitsDiffer) {
  SyntheticSource a(64, 32, 1, 0.1), b(64, 32, 2, 0.1);
  std::vector<int64_t> s(8);
  for (int i = 0; i < 8; ++i) s[i] = i;
  EXPECT_NE(rows(a, Split::Train, s), rows(b, Split::Train, s));
  EXPECT_NE(rows(a, Split::Train, s), rows(a, Split::Val, s));
  EXPECT_EQ(rows(a, Split::Val, s), rows(a, Split::Val, s));
}

TEST(Synthetic, OptimalLossMatchesEmpiricalConditionalEntropy) {
  // plug-in estimate of H(next | prev) from 200k transitions of a V=6 chain
  for (double noise : {0.0, 0.25, 0.7}) {
    SyntheticSource src(6, 100, 99, noise);
    std::vector<int64_t> samples(2000);
    for (int i = 0; i < 2000; ++i) samples[i] = i;
    const std::vector<int32_t> tok = rows(src, Split::Train, samples);
    std::vector<std::vector<double>> count(6, std::vector<double>(6, 0.0));
    for (size_t r = 0; r < samples.size(); ++r)
      for (int t = 1; t <= 100; ++t) count[tok[r * 101 + t - 1]][tok[r * 101 + t]] += 1;
    double total = 0, h = 0;
    for (auto& row : count) {
      double n = 0;
      for (double c : row) n += c;
      for (double c : row)
        if (c > 0) h -= c * std::log(c / n);
      total += n;
    }
    h /= total;
    EXPECT_NEAR(h, src.optimal_loss(), 0.01) << "noise " << noise;
  }
}
