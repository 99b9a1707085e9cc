#pragma once
// One bucket's compressed all-reduce (issue 11): error feedback, top-k selection, and the transport that moves
// the fewest bytes (transport.hpp). The caller owns one ErrorFeedback per bucket per rank.
#include <cstddef>
#include <cstdint>

#include "src/comm/comm.hpp"
#include "src/train/compress/topk.hpp"
#include "src/train/compress/transport.hpp"

namespace gt::compress {

struct TopkOptions {
  double density = 0.04;
  Select select = Select::Exact;
  bool error_feedback = true;  // false: what is not sent is forgotten (to show what error feedback is worth)
  bool allow_shared = false;   // let the chooser pick the shared-index transport
  bool force = false;          // send by `forced` whatever the chooser says (compress.transport)
  Transport forced = Transport::AllGather;
  int leader = 0;              // whose top-k the shared transport uses (rotate it per step, as ScaleCom does)
  uint64_t seed = 0;           // for the sampled selection; vary per step and bucket
};

struct TopkResult {
  Transport transport = Transport::Dense;
  size_t k = 0;           // entries sent per rank
  double wire_bytes = 0;  // bytes this rank sent, by the formula of the chosen transport
};

// grad[0..n): this rank's gradient in, the sum over ranks of the sent (compressed) gradients out (not
// averaged), the same bits on every rank. V: the wire's value type for the dense and all-gather transports
// (the shared transport all-reduces fp32 values).
template <class V>
TopkResult topk_allreduce(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o);

}  // namespace gt::compress
