#include "src/train/grad_buckets.hpp"

#include "kernels/elementwise.hpp"
#include "src/train/half_wire.hpp"
#include "src/train/zero.hpp"

#include <algorithm>
#include <cmath>

namespace gt {

GradBuckets::GradBuckets(const std::vector<TensorSpec>& tensors, size_t bucket_bytes, size_t elem_bytes) {
  const size_t cap = std::max<size_t>(1, bucket_bytes / elem_bytes);
  Bucket cur;
  bool open = false;
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (!open) {
      cur = Bucket{it->offset, it->offset + it->size, it->unit};
      open = true;
    } else {
      cur.begin = it->offset;  // tensors are contiguous in storage order
      cur.min_unit = std::min(cur.min_unit, it->unit);
    }
    if (cur.end - cur.begin >= cap) {
      buckets_.push_back(cur);
      open = false;
    }
  }
  if (open) buckets_.push_back(cur);
}

void GradBuckets::set_compression(const Compression& c) {
  compression_ = c;
  compress_ = true;
  workspaces_.clear();  // no device memory until a bucket is compressed on a GPU build
  for (size_t b = 0; b < buckets_.size(); ++b) workspaces_.push_back(std::make_unique<compress::TopkWorkspace>());
}

void GradBuckets::reduce_scatter_into(const TensorLayout& layout, Range shard, float* shard_grads) {
  scatter_layout_ = &layout;
  shard_ = shard;
  shard_grads_ = shard_grads;
}

RequestPtr GradBuckets::launch(size_t bucket, Comm& dp, float* grads) {
  if (compress_) return launch_compressed(bucket, dp, grads);
  const Bucket& b = buckets_[bucket];
  if (wire_ != DType::F32) {
    to_wire(grads + b.begin, staging_ + b.begin, b.end - b.begin, wire_);
    return dp.iallreduce(staging_ + b.begin, b.end - b.begin, wire_, ReduceOp::Sum);
  }
  if (!scatter_layout_) return dp.iallreduce_sum(grads + b.begin, b.end - b.begin);
  // This rank's piece of the bucket starts where the bucket meets its shard (or nowhere: a count of 0).
  const size_t first = std::min(std::max(b.begin, shard_.begin), shard_.end);
  return dp.ireduce_scatter_v(grads + b.begin, shard_grads_ + (first - shard_.begin),
                              shard_counts(*scatter_layout_, Range{b.begin, b.end}), DType::F32, ReduceOp::Sum);
}

// Error feedback and top-k of one bucket now, its collectives in flight until finish(). The residual of the
// bucket is final here, so its norm is counted at once.
RequestPtr GradBuckets::launch_compressed(size_t bucket, Comm& dp, float* grads) {
  const Bucket& k = buckets_[bucket];
  const size_t n = k.end - k.begin;
  compress::TopkOptions o = compression_.topk;
  o.density = compress::warmup_density(step_, compression_.warmup_steps, compression_.density);
  o.leader = int(step_ % dp.size());  // the shared-index transport's leader rotates, as in ScaleCom
  o.seed = uint64_t(step_) * 1000003u + bucket;  // the sampled selection's draw: per step and bucket
  o.workspace = workspaces_[bucket].get();
  compress::ErrorFeedback ef(compression_.residual + k.begin, n);
  // gradients and residual in device memory on GPU builds: the device kernels (the same results)
  auto r = exec_on_host ? compress::topk_start(dp, ef, grads + k.begin, n, o)
                        : compress::topk_start_device(dp, ef, grads + k.begin, n, o);
  stats_.wire_bytes += r->result().wire_bytes;
  stats_.sent += r->result().k;
  stats_.total += n;
  stats_.residual_norm2 += exec_on_host ? ef.norm2() : compress::norm2_device(ef);
  return r;
}

void GradBuckets::begin_step(long step, double loss_scale) {
  loss_scale_ = loss_scale;
  reqs_.clear();
  next_ = 0;
  step_ = step;
  stats_ = CompressStats{};
}

void GradBuckets::unit_done(int unit, Comm& dp, float* grads) {
  // local clipping needs this rank's whole gradient before the first bucket is compressed: all in finish()
  if (compress_ && unit >= 0 && (compression_.local_clip > 0 || !compression_.overlap)) return;
  while (next_ < buckets_.size() && buckets_[next_].min_unit >= unit) {
    reqs_.push_back(launch(next_, dp, grads));
    ++next_;
  }
  for (auto& r : reqs_)
    if (r) r->test();
}

void GradBuckets::finish(Comm& dp, float* grads, const std::function<void()>& before_rest) {
  if (before_rest) before_rest();
  if (compress_ && compression_.local_clip > 0) clip_local(grads);
  unit_done(-1, dp, grads);
  for (auto& r : reqs_)
    if (r) r->wait();
  reqs_.clear();
  if (wire_ != DType::F32)
    for (const Bucket& b : buckets_) from_wire(staging_ + b.begin, grads + b.begin, b.end - b.begin, wire_);
}

GradBuckets::WireStats GradBuckets::wire_stats(int ranks) const {
  WireStats w;
  const double ring = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
  double elements = 0;
  for (const Bucket& b : buckets_) elements += double(b.end - b.begin);
  w.dense_fp32_bytes = ring * 4 * elements;
  if (compress_) {
    w.bytes = stats_.wire_bytes;
    w.residual_norm = std::sqrt(stats_.residual_norm2);
  } else {
    w.bytes = (scatter_layout_ ? ring / 2 : ring) * double(dtype_size(wire_)) * elements;
  }
  return w;
}

// DGC's local clipping, before accumulation: a spike is clipped, not stored in the residual. On GPU builds the
// gradients are device memory: the norm by sum_squares per bucket (fixed blocks, kernels/elementwise.hpp), the
// scaling by scale_inplace (the same product).
void GradBuckets::clip_local(float* grads) const {
  double sumsq = 0;
  for (const Bucket& k : buckets_) {
    if constexpr (exec_on_host) {
      for (size_t i = k.begin; i < k.end; ++i) sumsq += double(grads[i]) * grads[i];
    } else {
      sumsq += sum_squares(grads + k.begin, long(k.end - k.begin));
    }
  }
  const double limit = compression_.local_clip * loss_scale_, norm = std::sqrt(sumsq);
  if (norm > limit) {  // a non-finite norm is left alone: the step is skipped on every rank anyway
    const float s = float(limit / norm);
    for (const Bucket& k : buckets_) {
      if constexpr (exec_on_host) {
        for (size_t i = k.begin; i < k.end; ++i) grads[i] *= s;
      } else {
        scale_inplace(grads + k.begin, long(k.end - k.begin), s);
      }
    }
  }
}

}  // namespace gt
