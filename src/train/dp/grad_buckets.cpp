#include "src/train/dp/grad_buckets.hpp"

#include <algorithm>

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
  for (const Bucket& b : buckets_) ranges_.push_back(Range{b.begin, b.end});
}

RequestPtr GradBuckets::launch(size_t bucket, Comm& dp, float* grads) {
  return reducer_->launch(bucket, ranges_[bucket], dp, grads);
}

void GradBuckets::begin_step(long step, double loss_scale) {
  if (!reducer_) reducer_ = make_dense_allreduce();
  reducer_->begin_step(step, loss_scale);
  reqs_.clear();
  next_ = 0;
}

void GradBuckets::unit_done(int unit, Comm& dp, float* grads) {
  if (unit >= 0 && !reducer_->overlaps()) return;  // everything in finish()
  while (next_ < buckets_.size() && buckets_[next_].min_unit >= unit) {
    reqs_.push_back(launch(next_, dp, grads));
    ++next_;
  }
  for (auto& r : reqs_)
    if (r) r->test();
}

void GradBuckets::finish(Comm& dp, float* grads, const std::function<void()>& before_rest) {
  if (before_rest) before_rest();
  reducer_->before_rest(ranges_, grads);
  unit_done(-1, dp, grads);
  for (auto& r : reqs_)
    if (r) r->wait();
  reqs_.clear();
  reducer_->after_wait(ranges_, grads);
}

GradBuckets::WireStats GradBuckets::wire_stats(int ranks) const {
  WireStats w;
  double elements = 0;
  for (const Bucket& b : buckets_) elements += double(b.end - b.begin);
  w.dense_fp32_bytes = (ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0) * 4 * elements;
  if (reducer_) {
    w.bytes = reducer_->wire_bytes(elements, ranks);
    w.residual_norm = reducer_->residual_norm();
  }
  return w;
}

}  // namespace gt
