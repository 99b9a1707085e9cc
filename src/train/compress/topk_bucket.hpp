#pragma once
// What the host path (topk_allreduce.cpp) and the device path (topk_device.cpp) of one compressed bucket share:
// the values' type on the wire, the collectives in flight, and the start on the type compress.values names. Apart
// from topk_allreduce.hpp, whose users include it without Kokkos (kernels/half.hpp needs it).
#include <memory>
#include <utility>
#include <vector>

#include "kernels/half.hpp"
#include "src/comm/comm.hpp"
#include "src/train/compress/topk_allreduce.hpp"

namespace gt::compress {

// The DType of values of type V (float, bf16_t, fp16_t) on the wire.
template <class V> constexpr DType wire_type() { return DType::F32; }
template <> constexpr DType wire_type<bf16_t>() { return DType::BF16; }
template <> constexpr DType wire_type<fp16_t>() { return DType::F16; }

// The collectives of one started bucket (both paths' requests): test() progresses them all, wait() completes them
// all. A request keeps its buffers: declare this after them (an unfinished request waits when destroyed).
class BucketCollectives {
 public:
  void push_back(RequestPtr r) { reqs_.push_back(std::move(r)); }
  bool test() {
    bool done = true;
    for (auto& r : reqs_) done = r->test() && done;
    return done;
  }
  void wait() {
    for (auto& r : reqs_) r->wait();
    reqs_.clear();
  }

 private:
  std::vector<RequestPtr> reqs_;
};

// topk_start and topk_start_device: the options checked, then Bucket<V> (their request type) started for the
// value type V that o.values names.
template <template <class> class Bucket>
std::unique_ptr<TopkRequest> start_bucket(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) {
  check_topk_options(c, o);
  switch (o.values) {
    case DType::BF16: return std::make_unique<Bucket<bf16_t>>(c, ef, grad, n, o);
    case DType::F16: return std::make_unique<Bucket<fp16_t>>(c, ef, grad, n, o);
    default: return std::make_unique<Bucket<float>>(c, ef, grad, n, o);
  }
}

}  // namespace gt::compress
