// Data-parallel shares (parallel.dp_shares, docs/adaptive.md): the arithmetic of uneven micro-batch counts per DP
// replica (which samples, what weight), kept apart from the step so that it can be checked on its own. BatchLoader,
// PipelineRunner and the Trainer's schedule read the replica's count and offset from here.
#pragma once

#include <cstdint>
#include <vector>

#include "src/core/config.hpp"

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

// The weight of one micro-batch's gradient in the DP reduction: 1 / sum(shares), the same on every replica.
// gridtrain's step already works this way: PipelineRunner::forward_op seeds backward with loss_scale /
// (global_batch x seq_len) per token, global_batch being every replica's samples of the step, and the DP reducers
// (src/train/dp/bucket_reducers.cpp) sum. So replica r's accumulated gradient is shares[r] micro-batches' worth at
// the global weight, and the sum over replicas is the mean over every micro-batch of the global batch: the even
// split's update mathematically, with no per-replica factor. (A per-replica mean followed by an average over dp,
// weight 1 / (dp x shares[r]), would be wrong for uneven shares; the test checks that it misses.) The additions
// run in another order (per replica, then across replicas), so in fp32 the result equals the even split's within
// rounding, not bitwise. The reported loss is a sum over replicas divided by the global token count (the step's
// statistics reduction, src/train/report/step_stats.cpp), so it is the global sample mean the same way.
inline double micro_batch_weight(const std::vector<int>& shares) {
  return 1.0 / double(share_offset(shares, int(shares.size())));
}

// This replica's micro-batches per step and its first micro-batch within the step's global batch, from
// parallel.dp_shares (validated: one share per replica), or the even split when it is empty.
inline int replica_micro_batches(const Config& c, int dp_rank) {
  const std::vector<int> s = c.parallel.dp_share_counts();
  return s.empty() ? c.train.micro_batches : s[size_t(dp_rank)];
}
inline int64_t replica_first_micro(const Config& c, int dp_rank) {
  const std::vector<int> s = c.parallel.dp_share_counts();
  return s.empty() ? int64_t(dp_rank) * c.train.micro_batches : share_offset(s, dp_rank);
}

}  // namespace gt::dp
