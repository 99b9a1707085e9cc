#include "src/train/grad_buckets.hpp"

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
}

void GradBuckets::begin_step() {
  reqs_.clear();
  next_ = 0;
}

void GradBuckets::unit_done(int unit, Comm& dp, float* grads) {
  while (next_ < buckets_.size() && buckets_[next_].min_unit >= unit) {
    const Bucket& b = buckets_[next_++];
    reqs_.push_back(dp.iallreduce_sum(grads + b.begin, b.end - b.begin));
  }
  for (auto& r : reqs_)
    if (r) r->test();
}

void GradBuckets::finish(Comm& dp, float* grads) {
  unit_done(-1, dp, grads);
  for (auto& r : reqs_)
    if (r) r->wait();
  reqs_.clear();
}

}  // namespace gt
