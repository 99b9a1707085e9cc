#include "src/train/dp/bucket_reducers.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/elementwise.hpp"
#include "src/train/dp/half_wire.hpp"
#include "src/train/dp/zero.hpp"

namespace gt {

namespace {

double ring_allreduce_factor(int ranks) { return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0; }

// Where this rank's piece of the flat range r starts in its shard (or nowhere: a count of 0 at the shard's end).
size_t first_in_shard(Range r, Range shard) { return std::min(std::max(r.begin, shard.begin), shard.end); }

class DenseAllreduce : public BucketReducer {
 public:
  RequestPtr launch(size_t, Range r, Comm& dp, float* grads) override {
    return dp.iallreduce_sum(grads + r.begin, r.size());
  }
  double wire_bytes(double elements, int ranks) const override {
    return ring_allreduce_factor(ranks) * 4 * elements;
  }
};

class HalfWireAllreduce : public BucketReducer {
 public:
  HalfWireAllreduce(DType t, uint16_t* staging) : t_(t), staging_(staging) {}
  RequestPtr launch(size_t, Range r, Comm& dp, float* grads) override {
    to_wire(grads + r.begin, staging_ + r.begin, r.size(), t_);
    return dp.iallreduce(staging_ + r.begin, r.size(), t_, ReduceOp::Sum);
  }
  void after_wait(const std::vector<Range>& buckets, float* grads) override {
    for (const Range& r : buckets) from_wire(staging_ + r.begin, grads + r.begin, r.size(), t_);
  }
  double wire_bytes(double elements, int ranks) const override {
    return ring_allreduce_factor(ranks) * double(dtype_size(t_)) * elements;
  }

 private:
  DType t_;
  uint16_t* staging_;
};

class BucketReduceScatter : public BucketReducer {
 public:
  explicit BucketReduceScatter(ShardTarget t) : t_(t) {}
  RequestPtr launch(size_t, Range r, Comm& dp, float* grads) override {
    return dp.ireduce_scatter_v(grads + r.begin, t_.grads + (first_in_shard(r, t_.shard) - t_.shard.begin),
                                shard_counts(*t_.layout, r), DType::F32, ReduceOp::Sum);
  }
  double wire_bytes(double elements, int ranks) const override {
    return ring_allreduce_factor(ranks) / 2 * 4 * elements;
  }

 private:
  ShardTarget t_;
};

class HalfWireReduceScatter : public BucketReducer {
 public:
  HalfWireReduceScatter(DType t, uint16_t* staging, uint16_t* wire_shard, ShardTarget target)
      : t_(t), staging_(staging), wire_shard_(wire_shard), target_(target) {}
  RequestPtr launch(size_t, Range r, Comm& dp, float* grads) override {
    to_wire(grads + r.begin, staging_ + r.begin, r.size(), t_);
    return dp.ireduce_scatter_v(staging_ + r.begin, wire_shard_ + (first_in_shard(r, target_.shard) - target_.shard.begin),
                                shard_counts(*target_.layout, r), t_, ReduceOp::Sum);
  }
  void after_wait(const std::vector<Range>& buckets, float*) override {
    const Range s = target_.shard;
    for (const Range& r : buckets) {  // this rank's piece of every bucket, widened into the fp32 shard
      const size_t b = first_in_shard(r, s), e = std::max(b, std::min(r.end, s.end));
      if (e > b) from_wire(wire_shard_ + (b - s.begin), target_.grads + (b - s.begin), e - b, t_);
    }
  }
  double wire_bytes(double elements, int ranks) const override {
    return ring_allreduce_factor(ranks) / 2 * double(dtype_size(t_)) * elements;
  }

 private:
  DType t_;
  uint16_t* staging_;
  uint16_t* wire_shard_;
  ShardTarget target_;
};

class TopkAllreduce : public BucketReducer {
 public:
  TopkAllreduce(const TopkCompression& c, size_t buckets) : c_(c) {
    // no device memory until a bucket is compressed on a GPU build
    for (size_t b = 0; b < buckets; ++b) workspaces_.push_back(std::make_unique<compress::TopkWorkspace>());
  }
  void begin_step(long step, double loss_scale) override {
    step_ = step;
    loss_scale_ = loss_scale;
    wire_bytes_ = residual_norm2_ = 0;
  }
  // Local clipping needs this rank's whole gradient before the first bucket is compressed: all in finish().
  bool overlaps() const override { return c_.local_clip <= 0 && c_.overlap; }
  void before_rest(const std::vector<Range>& buckets, float* grads) override {
    if (c_.local_clip > 0) clip_local(buckets, grads);
  }
  RequestPtr launch(size_t index, Range r, Comm& dp, float* grads) override;
  double wire_bytes(double, int) const override { return wire_bytes_; }
  double residual_norm() const override { return std::sqrt(residual_norm2_); }

 private:
  void clip_local(const std::vector<Range>& buckets, float* grads) const;

  TopkCompression c_;
  std::vector<std::unique_ptr<compress::TopkWorkspace>> workspaces_;  // per bucket: top-k's device buffers
  long step_ = 0;
  double loss_scale_ = 1, wire_bytes_ = 0, residual_norm2_ = 0;
};

// Error feedback and top-k of one bucket now, its collectives in flight until finish(). The residual of the
// bucket is final here, so its norm is counted at once.
RequestPtr TopkAllreduce::launch(size_t index, Range r, Comm& dp, float* grads) {
  const size_t n = r.size();
  compress::TopkOptions o = c_.topk;
  o.density = compress::warmup_density(step_, c_.warmup_steps, c_.density);
  o.leader = int(step_ % dp.size());  // the shared-index transport's leader rotates, as in ScaleCom
  o.seed = uint64_t(step_) * 1000003u + index;  // the sampled selection's draw: per step and bucket
  o.workspace = workspaces_[index].get();
  compress::ErrorFeedback ef(c_.residual + r.begin, n);
  // gradients and residual in device memory on GPU builds: the device kernels (the same results)
  auto req = exec_on_host ? compress::topk_start(dp, ef, grads + r.begin, n, o)
                          : compress::topk_start_device(dp, ef, grads + r.begin, n, o);
  wire_bytes_ += req->result().wire_bytes;
  residual_norm2_ += exec_on_host ? ef.norm2() : compress::norm2_device(ef);
  return req;
}

// DGC's local clipping, before accumulation: a spike is clipped, not stored in the residual. On GPU builds the
// gradients are device memory: the norm by sum_squares per bucket (fixed blocks, kernels/elementwise.hpp), the
// scaling by scale_inplace (the same product).
void TopkAllreduce::clip_local(const std::vector<Range>& buckets, float* grads) const {
  double sumsq = 0;
  for (const Range& k : buckets) {
    if constexpr (exec_on_host) {
      for (size_t i = k.begin; i < k.end; ++i) sumsq += double(grads[i]) * grads[i];
    } else {
      sumsq += sum_squares(grads + k.begin, long(k.size()));
    }
  }
  const double limit = c_.local_clip * loss_scale_, norm = std::sqrt(sumsq);
  if (norm > limit) {  // a non-finite norm is left alone: the step is skipped on every rank anyway
    const float s = float(limit / norm);
    for (const Range& k : buckets) {
      if constexpr (exec_on_host) {
        for (size_t i = k.begin; i < k.end; ++i) grads[i] *= s;
      } else {
        scale_inplace(grads + k.begin, long(k.size()), s);
      }
    }
  }
}

}  // namespace

std::unique_ptr<BucketReducer> make_dense_allreduce() { return std::make_unique<DenseAllreduce>(); }
std::unique_ptr<BucketReducer> make_half_wire_allreduce(DType t, uint16_t* staging) {
  return std::make_unique<HalfWireAllreduce>(t, staging);
}
std::unique_ptr<BucketReducer> make_bucket_reduce_scatter(ShardTarget target) {
  return std::make_unique<BucketReduceScatter>(target);
}
std::unique_ptr<BucketReducer> make_half_wire_reduce_scatter(DType t, uint16_t* staging, uint16_t* wire_shard,
                                                             ShardTarget target) {
  return std::make_unique<HalfWireReduceScatter>(t, staging, wire_shard, target);
}
std::unique_ptr<BucketReducer> make_topk_allreduce(const TopkCompression& c, size_t buckets) {
  return std::make_unique<TopkAllreduce>(c, buckets);
}

}  // namespace gt
