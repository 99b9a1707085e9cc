#pragma once
// Data-parallel gradient buckets: contiguous ranges of the flat gradient buffer, formed in reverse storage
// order (the order backward completes them), each reduced over the DP group as soon as every tensor in it is
// final, while the rest of backward goes on. How a bucket is reduced is its reducer's business
// (src/train/dp/bucket_reducers.hpp: dense all-reduce, 16-bit wire, ZeRO's reduce-scatter in fp32 or 16 bits,
// top-k); this class decides when. Without a reducer set the buckets are all-reduced densely in fp32.
#include <functional>
#include <memory>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/train/dp/bucket_reducers.hpp"

namespace gt {

class GradBuckets {
 public:
  GradBuckets(const std::vector<TensorSpec>& tensors, size_t bucket_bytes, size_t elem_bytes);
  // The strategy (src/train/dp/bucket_reducers.hpp); before the first step.
  void set_reducer(std::unique_ptr<BucketReducer> r) { reducer_ = std::move(r); }
  // Shorthands for tests: compress.method = topk (compress::topk_allreduce per bucket).
  using Compression = TopkCompression;
  void set_compression(const Compression& c) { set_reducer(make_topk_allreduce(c, buckets_.size())); }
  // The last step on the wire, for any method: bytes this rank sent (top-k: its transports' formulas; dense
  // buckets: ring all-reduces, 2(P-1)/P * v * n, or reduce-scatters under ZeRO-2/3, (P-1)/P * v * n), what dense
  // fp32 all-reduces of the same buckets send, and the residual's L2 norm (-1 without top-k).
  struct WireStats {
    double bytes = 0, dense_fp32_bytes = 0, residual_norm = -1;
  };
  WireStats wire_stats(int ranks) const;

  // Start of the last micro-batch's backward of step `step` (counted from 0).
  void begin_step(long step = 0, double loss_scale = 1);
  // Backward finished unit u (units complete from the highest down): launch every bucket now complete and
  // give the ones in flight a chance to progress.
  void unit_done(int unit, Comm& dp, float* grads);
  // Launch what is left and wait for all; called before the optimizer. before_rest runs first (ZeRO-2 with a
  // tied embedding: its gradient summed over the embedding group before the DP reduction of its bucket).
  void finish(Comm& dp, float* grads, const std::function<void()>& before_rest = {});

  struct Bucket {
    size_t begin = 0, end = 0;  // element range in the flat store
    int min_unit = 0;
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  size_t launched() const { return next_; }  // buckets launched so far this step (tests check the overlap)

 private:
  RequestPtr launch(size_t bucket, Comm& dp, float* grads);

  std::vector<Bucket> buckets_;  // in launch order (end of the buffer first)
  std::vector<Range> ranges_;    // the same, as element ranges (what the reducer is given)
  std::unique_ptr<BucketReducer> reducer_;
  std::vector<RequestPtr> reqs_;
  size_t next_ = 0;              // first bucket not yet launched
};

}  // namespace gt
