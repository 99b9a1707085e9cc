#pragma once
// Top-k compression on device memory (GPU builds, issue 22): the same error feedback, selections and transports as
// topk.cpp / topk_allreduce.cpp, computed by the kernels of topk_kernels.hpp on buffers in the kernels' memory
// space, so that compress.method = "topk" runs where the gradients live. Bit for bit the host path's results: the
// same selected set (select_exact's top-k, select_sampled's top-m with the same sample and threshold search), the
// same residual and the same sums. GradBuckets uses it on GPU builds; on CPU builds it runs on the host execution
// space, where test_compress_device compares it with the host path.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "src/train/compress/topk_allreduce.hpp"

namespace gt::compress {

// The device buffers of one bucket's compressed all-reduce (indices, values, the gathered pairs, the sample and
// the radix-select state), grown on demand and kept from step to step: an allocation on a GPU synchronises the
// device, so a caller that compresses every step keeps one per bucket (TopkOptions::workspace).
class TopkWorkspace {
 public:
  TopkWorkspace();
  ~TopkWorkspace();
  struct Impl;
  Impl& impl() { return *p_; }

 private:
  std::unique_ptr<Impl> p_;
};

// topk_start on device memory: grad and the ErrorFeedback's residual are device pointers (host pointers on a CPU
// build). The same options and errors as topk_start's; o.workspace, when set, holds the buffers.
std::unique_ptr<TopkRequest> topk_start_device(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o);

// select() on device memory: idx[0..min(k, n)) = the selected indices, ascending, padded with -1 where the
// sampled selection keeps fewer (idx: a device pointer). Returns how many were selected.
// ErrorFeedback::norm2 of a residual in device memory: sum_squares' fixed blocks (kernels/elementwise.hpp), so
// another association of the double sum than the host's loop (a metric only).
double norm2_device(const ErrorFeedback& ef);

size_t select_device(Select how, const float* acc, size_t n, size_t k, uint64_t seed, int32_t* idx, TopkWorkspace& w);

}  // namespace gt::compress
