// parallel.dp_shares (docs/adaptive.md, "Data-parallel shares"): the config's one-line errors, the sample
// assignment (every sample of a step exactly once, whatever the shares), and the gradient weighting (the
// weighted DP average equals the mean over all micro-batches of the global batch, against a float64 reference).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/train/dp/dp_shares.hpp"

namespace {

gt::Config base(const std::string& shares) {
  gt::Config c;
  c.output.dir = "/nonexistent";
  c.parallel.dp = 2;
  c.train.micro_batches = 2;
  c.parallel.dp_shares = shares;
  return c;
}

// The one-line error of validate(), or "" when it passes.
std::string error_of(const gt::Config& c) {
  try {
    c.validate();
  } catch (const gt::Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const gt::Config& c, const std::string& part) {
  const std::string msg = error_of(c);
  EXPECT_NE(msg.find(part), std::string::npos) << "got: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
}

TEST(DpShares, EmptyAndEvenListsPass) {
  EXPECT_EQ(error_of(base("")), "");
  EXPECT_EQ(error_of(base("2,2")), "");
  EXPECT_EQ(error_of(base(" 2 , 2 ")), "");
}

TEST(DpShares, BadListsGiveOneLineErrors) {
  expect_error(base("4"), "has 1 entries, parallel.dp = 2");
  expect_error(base("1,1,2"), "has 3 entries, parallel.dp = 2");
  expect_error(base("4,0"), "each at least 1");
  expect_error(base("5,-1"), "each at least 1");
  expect_error(base("3,x"), "each at least 1");
  expect_error(base("3,,1"), "each at least 1");
  expect_error(base("3,2"), "adds up to 5 micro-batches, the global batch has parallel.dp x train.micro_batches = 4");
  gt::Config no_dp = base("2,2");
  no_dp.parallel.dp = 0;
  expect_error(no_dp, "needs parallel.dp set");
}

TEST(DpShares, UnevenCombinationsAreRefused) {
  gt::Config z = base("3,1");
  z.parallel.zero = 2;
  expect_error(z, "parallel.zero = 2");
  gt::Config t = base("3,1");
  t.compress.method = "topk";
  expect_error(t, "compress.method = \"topk\"");
  gt::Config p = base("3,1");
  p.parallel.pp = 2;
  expect_error(p, "parallel.pp = 2");
  EXPECT_EQ(error_of(base("3,1")), "");  // pp = 1, ZeRO <= 1, no top-k: runs
}

// Replica r's micro-batch m of the step starting at samples_done covers B samples from
// samples_done + B x (share_offset + m). Over steps with changing shares every sample is used exactly once, and
// a step's sample set is the even split's (BatchLoader::first_sample: samples_done + r B M + m B).
void expect_every_sample_once(int B, int M, const std::vector<std::vector<int>>& per_step) {
  const int dp = int(per_step[0].size());
  std::map<int64_t, int> used;
  int64_t samples_done = 0;
  const int64_t global = int64_t(B) * M * dp;
  for (const std::vector<int>& shares : per_step) {
    std::map<int64_t, int> step_set;
    for (int r = 0; r < dp; ++r)
      for (int m = 0; m < shares[size_t(r)]; ++m)
        for (int b = 0; b < B; ++b) {
          const int64_t s = samples_done + B * (gt::dp::share_offset(shares, r) + m) + b;
          ++used[s];
          ++step_set[s];
        }
    std::map<int64_t, int> even_set;
    for (int r = 0; r < dp; ++r)
      for (int m = 0; m < M; ++m)
        for (int b = 0; b < B; ++b) ++even_set[samples_done + int64_t(r) * B * M + int64_t(m) * B + b];
    EXPECT_EQ(step_set, even_set);
    samples_done += global;
  }
  ASSERT_EQ(int64_t(used.size()), samples_done);
  for (const auto& [s, n] : used) EXPECT_EQ(n, 1) << "sample " << s;
}

TEST(DpShares, EverySampleOnceWhateverTheShares) {
  expect_every_sample_once(3, 2, {{2, 2}, {3, 1}, {1, 3}, {3, 1}, {2, 2}});
  expect_every_sample_once(2, 2, {{2, 2, 2, 2}, {5, 1, 1, 1}, {1, 2, 3, 2}, {1, 1, 1, 5}});
}

// Per-micro-batch gradients g_k; replica r accumulates its own shares[r] of them in fp32, each weighted as the step
// weights it, and the DP reduction sums over replicas. `per_replica_mean` is the wrong weighting (each replica's
// own mean, then the average over dp): the test checks that it misses, so the comparison can fail.
// Reference: the float64 mean over all micro-batches.
std::vector<float> dp_sum(const std::vector<std::vector<float>>& g, const std::vector<int>& shares,
                          bool per_replica_mean) {
  const size_t n = g[0].size();
  const int dp = int(shares.size());
  std::vector<float> out(n, 0.f);
  for (int r = 0; r < dp; ++r) {
    const int64_t first = gt::dp::share_offset(shares, r);
    const float w = per_replica_mean ? float(1.0 / (double(dp) * shares[size_t(r)]))
                                     : float(gt::dp::micro_batch_weight(shares));
    std::vector<float> acc(n, 0.f);
    for (int m = 0; m < shares[size_t(r)]; ++m)
      for (size_t i = 0; i < n; ++i) acc[i] += w * g[size_t(first + m)][i];
    for (size_t i = 0; i < n; ++i) out[i] += acc[i];
  }
  return out;
}

TEST(DpShares, WeightedAverageIsTheGlobalMean) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int K = 8;
  const size_t n = 257;
  std::vector<std::vector<float>> g(K, std::vector<float>(n));
  for (auto& v : g)
    for (float& x : v) x = nd(rng);
  std::vector<double> ref(n, 0.0);
  for (const auto& v : g)
    for (size_t i = 0; i < n; ++i) ref[i] += double(v[i]) / K;
  // Tolerance: up to 8 fp32 products and additions of terms below ~0.5 into sums below ~1: a few ulps (6e-8
  // each) of values of order 1; 1e-5 absolute is over 100 such ulps and far below the 0.1-size error of the wrong
  // weighting for these shares.
  const double tol = 1e-5;
  for (const std::vector<int>& shares : std::vector<std::vector<int>>{{4, 4}, {6, 2}, {1, 7}, {3, 1, 2, 2}, {5, 1, 1, 1}}) {
    const std::vector<float> got = dp_sum(g, shares, false);
    double worst = 0, unweighted_worst = 0;
    const std::vector<float> plain = dp_sum(g, shares, true);
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(double(got[i]) - ref[i]));
      unweighted_worst = std::max(unweighted_worst, std::abs(double(plain[i]) - ref[i]));
    }
    EXPECT_LE(worst, tol) << "shares of size " << shares.size() << " first " << shares[0];
    // The check can fail: the per-replica-mean weighting misses the global mean by far more than tol when uneven.
    bool even = true;
    for (int s : shares) even = even && s == shares[0];
    if (!even) {
      EXPECT_GT(unweighted_worst, 100 * tol);
    }
  }
}

}  // namespace
