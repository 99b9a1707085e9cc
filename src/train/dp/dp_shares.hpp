// Data-parallel shares (parallel.dp_shares, docs/adaptive.md): the arithmetic of uneven micro-batch counts per DP
// replica, kept apart from the step so that it can be checked on its own. Not wired into the step yet: the config
// refuses uneven shares until it is (src/core/config.cpp, validate_dp_shares).
#pragma once

#include <cstdint>
#include <vector>

namespace gt::dp {

// The even split: micro_batches on each of dp replicas (what an empty parallel.dp_shares means).
inline std::vector<int> even_shares(int dp, int micro_batches) { return std::vector<int>(size_t(dp), micro_batches); }

// The first global micro-batch of replica r within a step: replica r takes the r-th contiguous run of the global
// batch, shares[r] long, so the step's sample set is the same for any shares of the same sum (and the even split
// gives r x micro_batches, BatchLoader::first_sample's offset today).
inline int64_t share_offset(const std::vector<int>& shares, int r) {
  int64_t off = 0;
  for (int i = 0; i < r; ++i) off += shares[size_t(i)];
  return off;
}

// The factor on replica r's gradient, taken as the mean over its own shares[r] micro-batches, before the DP
// reduction that averages over dp replicas: dp x shares[r] / sum(shares). The reduction then yields
// sum_r shares[r] x mean_r / sum(shares), the mean over every micro-batch of the global batch, which is the even
// split's update mathematically. The additions happen in another order (per replica, then across), so in fp32 it
// equals the even split's within rounding, not bitwise.
inline double share_grad_scale(const std::vector<int>& shares, int r) {
  const int64_t total = share_offset(shares, int(shares.size()));
  return double(shares.size()) * double(shares[size_t(r)]) / double(total);
}

}  // namespace gt::dp
