#pragma once
// How one gradient bucket is reduced over the DP group: one class per strategy (GradBuckets decides when a
// bucket goes out, the reducer how). The strategies:
//   DenseAllreduce          fp32 all-reduce in place
//   HalfWireAllreduce       rounded to bf16/fp16 into a staging copy, all-reduced in that type, widened back
//   BucketReduceScatter     ZeRO-2/3: fp32 reduce-scatter of the bucket into this rank's shard (GradsShard)
//   HalfWireReduceScatter   ZeRO-2/3: rounded to bf16/fp16, reduce-scattered in that type into a 16-bit shard,
//                           widened into the fp32 shard once every bucket arrived
//   TopkAllreduce           error feedback + top-k (src/train/compress), its collectives in flight until finish
// The 16-bit sums add in float and round once per addition (src/comm/half_sum.hpp), for both collectives: at
// dp = 2 the all-reduce and the reduce-scatter compute the one value round(a + b) and agree bit for bit.
#include <memory>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/train/compress/topk_allreduce.hpp"
#include "src/train/compress/topk_device.hpp"

namespace gt {

class BucketReducer {
 public:
  virtual ~BucketReducer() = default;
  virtual void begin_step(long step, double loss_scale) {}
  // False: no bucket goes out before finish() (top-k's local clipping needs this rank's whole gradient).
  virtual bool overlaps() const { return true; }
  // finish(), before the buckets not yet launched go out (every bucket range given, in launch order).
  virtual void before_rest(const std::vector<Range>& buckets, float* grads) {}
  // Starts the reduction of bucket `index`, flat elements `r` of grads.
  virtual RequestPtr launch(size_t index, Range r, Comm& dp, float* grads) = 0;
  // finish(), after every launched request completed.
  virtual void after_wait(const std::vector<Range>& buckets, float* grads) {}
  // Bytes this rank sent in the last step for `elements` gradient elements over `ranks` ranks (the ring formulas
  // for the dense collectives, the transports' formulas for top-k).
  virtual double wire_bytes(double elements, int ranks) const = 0;
  virtual double residual_norm() const { return -1; }  // top-k's residual L2 norm after the step; -1: none
};

// The ZeRO shard a reduce-scatter delivers: this rank's range of the layout and where its fp32 values go
// (element i of the layout at grads[i - shard.begin]).
struct ShardTarget {
  const TensorLayout* layout = nullptr;
  Range shard;
  float* grads = nullptr;
};

std::unique_ptr<BucketReducer> make_dense_allreduce();
// staging: a buffer of the gradient's size in `t` (BF16 or F16), same offsets.
std::unique_ptr<BucketReducer> make_half_wire_allreduce(DType t, uint16_t* staging);
std::unique_ptr<BucketReducer> make_bucket_reduce_scatter(ShardTarget target);
// wire_shard: a shard-sized buffer in `t`, the 16-bit sums before they are widened into target.grads.
std::unique_ptr<BucketReducer> make_half_wire_reduce_scatter(DType t, uint16_t* staging, uint16_t* wire_shard,
                                                             ShardTarget target);

// compress.method = topk: every bucket by compress::topk_allreduce, its residual at the same offsets of
// `residual` (a TrainState buffer of the gradient's size). density: the target after DGC's warm-up.
struct TopkCompression {
  compress::TopkOptions topk;
  double density = 0.04;
  int warmup_steps = 0;
  float* residual = nullptr;
  // DGC's local clipping: this rank's gradient (all its buckets, before error feedback) scaled down to at most
  // this L2 norm (times the loss scale of begin_step); 0: off.
  double local_clip = 0;
  // Launch buckets during backward; false: all in finish(), as before the overlap (tests).
  bool overlap = true;
};
std::unique_ptr<BucketReducer> make_topk_allreduce(const TopkCompression& c, size_t buckets);

}  // namespace gt
