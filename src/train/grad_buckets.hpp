#pragma once
// Data-parallel gradient buckets: contiguous ranges of the flat gradient buffer, formed in reverse storage
// order (the order backward completes them), each all-reduced over the DP group as soon as every tensor in
// it is final, while the rest of backward goes on.
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/tensor_layout.hpp"

namespace gt {

class GradBuckets {
 public:
  GradBuckets(const std::vector<TensorSpec>& tensors, size_t bucket_bytes, size_t elem_bytes);

  // Start of the last micro-batch's backward.
  void begin_step();
  // Backward finished unit u (units complete from the highest down): launch every bucket now complete and
  // give the ones in flight a chance to progress.
  void unit_done(int unit, Comm& dp, float* grads);
  // Launch what is left and wait for all; called before the optimizer.
  void finish(Comm& dp, float* grads);

  struct Bucket {
    size_t begin = 0, end = 0;  // element range in the flat store
    int min_unit = 0;
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  std::vector<Bucket> buckets_;  // in launch order (end of the buffer first)
  std::vector<RequestPtr> reqs_;
  size_t next_ = 0;              // first bucket not yet launched
};

}  // namespace gt
