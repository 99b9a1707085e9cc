#pragma once
// One bucket's compressed all-reduce (issue 11): error feedback, top-k selection, and the transport that moves
// the fewest bytes (transport.hpp). The caller owns one ErrorFeedback per bucket per rank.
// Two halves so that buckets overlap with backward (GradBuckets launches each as backward completes it):
// topk_start selects, updates the residual and starts the collectives; the returned request's wait() finishes
// them and writes the sum. topk_allreduce is the two back to back (the same bits: one code path).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "src/comm/comm.hpp"
#include "src/train/compress/topk.hpp"
#include "src/train/compress/transport.hpp"

namespace gt::compress {

class TopkWorkspace;  // topk_device.hpp

struct TopkOptions {
  double density = 0.04;
  Select select = Select::Exact;
  bool error_feedback = true;  // false: what is not sent is forgotten (to show what error feedback is worth)
  bool allow_shared = false;   // let the chooser pick the shared-index transport
  bool force = false;          // send by `forced` whatever the chooser says (compress.transport)
  Transport forced = Transport::AllGather;
  int leader = 0;              // whose top-k the shared transport uses (rotate it per step, as ScaleCom does)
  uint64_t seed = 0;           // for the sampled selection; vary per step and bucket
  // The values' type on the wire for every transport (compress.values): F32, BF16 or F16. Indices are int32.
  // A 16-bit value's rounding error stays in the residual (ErrorFeedback::take); the dense and shared
  // transports also add in that type (each addition in float, rounded once, as the bf16 all-reduce does).
  DType values = DType::F32;
  // topk_start_device: the device buffers of this bucket, kept from step to step (nullptr: the request allocates
  // its own). The host path ignores it.
  TopkWorkspace* workspace = nullptr;
};

struct TopkResult {
  Transport transport = Transport::Dense;
  size_t k = 0;           // entries sent per rank
  double wire_bytes = 0;  // bytes this rank sent, by the formula of the chosen transport
};

// A started bucket: test() progresses its collectives, wait() completes them and writes grad[0..n) (the sum).
// grad and the ErrorFeedback's residual must stay alive until then; the residual is final already.
class TopkRequest : public Request {
 public:
  const TopkResult& result() const { return res_; }

 protected:
  TopkResult res_;
};

// Collective over c, called in the same order on every rank. grad[0..n): this rank's gradient in; after the
// request's wait(), the sum over ranks of the sent (compressed) gradients (not averaged), the same bits on
// every rank. Throws gt::Error on a density outside (0, 1], a leader outside the group or a bad value type.
// grad and the residual are host memory; topk_start_device (topk_device.hpp) is the same on device memory.
std::unique_ptr<TopkRequest> topk_start(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o);
// The checks topk_start makes (and topk_start_device): throws gt::Error naming the bad option.
void check_topk_options(const Comm& c, const TopkOptions& o);
TopkResult topk_allreduce(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o);

}  // namespace gt::compress
