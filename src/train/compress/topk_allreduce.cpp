#include "src/train/compress/topk_allreduce.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/half.hpp"
#include "src/core/error.hpp"
#include "src/train/compress/topk_bucket.hpp"

namespace gt::compress {
namespace {

// The collectives of one bucket in flight and the buffers they read and write (kept here until wait()).
//   dense      val (n values) all-reduced in V, in place (fp32: straight in grad, as the dense buckets do)
//   all-gather idx and val all-gathered into all_idx / all_val, summed in rank order on wait()
//   shared     the leader's idx broadcast at start (blocking: the communicator has no non-blocking
//              broadcast), then the k values all-reduced in V; scattered into grad on wait()
template <class V>
class InFlight final : public TopkRequest {
 public:
  InFlight(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) : grad_(grad), n_(n) {
    res_.k = topk_count(n, o.density);
    res_.transport = o.force ? o.forced : choose_transport(c.size(), n, res_.k, sizeof(V), o.allow_shared);
    const WireBytes w = wire_bytes(c.size(), n, res_.k, sizeof(V));
    const float* acc = ef.accumulate(grad);
    switch (res_.transport) {
      case Transport::Dense:
        res_.k = n;
        res_.wire_bytes = w.dense;
        idx_.resize(n);
        for (size_t i = 0; i < n; ++i) idx_[i] = int32_t(i);
        if constexpr (std::is_same_v<V, float>) {
          ef.take(idx_.data(), n, grad);
          reqs_.push_back(c.iallreduce(grad, n, DType::F32, ReduceOp::Sum));
        } else {
          val_.resize(n);
          ef.take(idx_.data(), n, val_.data());
          reqs_.push_back(c.iallreduce(val_.data(), n, wire_type<V>(), ReduceOp::Sum));
        }
        break;
      case Transport::AllGather: {
        res_.wire_bytes = w.allgather;
        select(o.select, acc, n, res_.k, o.seed, idx_);
        idx_.resize(res_.k, -1);  // the sampled selection may keep fewer: pad, every rank sends k pairs
        val_.resize(res_.k);
        ef.take(idx_.data(), res_.k, val_.data());
        const size_t p = size_t(c.size());
        all_idx_.resize(p * res_.k);
        all_val_.resize(p * res_.k);
        reqs_.push_back(c.iallgather(idx_.data(), all_idx_.data(), res_.k, DType::I32));
        // values as bytes: nothing is reduced on the way, whatever V is
        reqs_.push_back(c.iallgather(val_.data(), all_val_.data(), res_.k * sizeof(V), DType::U8));
        break;
      }
      case Transport::Shared:
        res_.wire_bytes = w.shared;
        if (c.rank() == o.leader) {
          select(o.select, acc, n, res_.k, o.seed, idx_);
          idx_.resize(res_.k, -1);
        } else {
          idx_.resize(res_.k);
        }
        c.broadcast(idx_.data(), res_.k, DType::I32, o.leader);
        val_.resize(res_.k);
        ef.take(idx_.data(), res_.k, val_.data());
        reqs_.push_back(c.iallreduce(val_.data(), res_.k, wire_type<V>(), ReduceOp::Sum));
        break;
    }
    if (!o.error_feedback) ef.drop();
  }

  bool test() override { return reqs_.test(); }

  void wait() override {
    reqs_.wait();
    switch (res_.transport) {
      case Transport::Dense:
        if constexpr (!std::is_same_v<V, float>)
          for (size_t i = 0; i < n_; ++i) grad_[i] = static_cast<float>(val_[i]);
        break;
      case Transport::AllGather:
        std::fill(grad_, grad_ + n_, 0.0f);
        for (size_t j = 0; j < all_idx_.size(); ++j)  // rank order: the same additions everywhere
          if (all_idx_[j] >= 0) grad_[all_idx_[j]] += static_cast<float>(all_val_[j]);
        break;
      case Transport::Shared:
        std::fill(grad_, grad_ + n_, 0.0f);
        for (size_t j = 0; j < idx_.size(); ++j)
          if (idx_[j] >= 0) grad_[idx_[j]] = static_cast<float>(val_[j]);
        break;
    }
  }

 private:
  float* grad_;
  size_t n_;
  std::vector<int32_t> idx_, all_idx_;
  std::vector<V> val_, all_val_;
  BucketCollectives reqs_;  // last: destroyed before the buffers it writes
};

}  // namespace

void check_topk_options(const Comm& c, const TopkOptions& o) {
  if (!(o.density > 0 && o.density <= 1))
    throw Error("compress.density must be in (0, 1], got " + std::to_string(o.density));
  if (o.leader < 0 || o.leader >= c.size()) throw Error("top-k leader rank " + std::to_string(o.leader) + " is not in the group");
  if (o.values != DType::F32 && o.values != DType::BF16 && o.values != DType::F16)
    throw Error("compress.values: top-k values travel as fp32, bf16 or fp16");
}

std::unique_ptr<TopkRequest> topk_start(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) {
  return start_bucket<InFlight>(c, ef, grad, n, o);
}

TopkResult topk_allreduce(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) {
  auto r = topk_start(c, ef, grad, n, o);
  r->wait();
  return r->result();
}

}  // namespace gt::compress
