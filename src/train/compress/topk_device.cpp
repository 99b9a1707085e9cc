#include "src/train/compress/topk_device.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/elementwise.hpp"
#include "src/train/compress/topk_kernels.hpp"
#include "src/train/compress/topk_bucket.hpp"

namespace gt::compress {

// Byte buffers in the kernels' memory space, each grown to the largest request so far (never shrunk).
struct TopkWorkspace::Impl {
  Kokkos::View<uint8_t*, mem_space> idx, val, all_idx, all_val, sample;
  Kokkos::View<RadixState*, mem_space> state;  // allocated at the first selection

  template <class U>
  static U* grow(Kokkos::View<uint8_t*, mem_space>& v, size_t count) {
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(U);
    if (v.size() < bytes) v = Kokkos::View<uint8_t*, mem_space>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "topk_buffer"), bytes);
    return reinterpret_cast<U*>(v.data());
  }
  RadixState* radix() {
    if (state.size() == 0) state = Kokkos::View<RadixState*, mem_space>("topk_radix_state", 1);
    return state.data();
  }
};

TopkWorkspace::TopkWorkspace() : p_(std::make_unique<Impl>()) {}
TopkWorkspace::~TopkWorkspace() = default;

namespace {

// select_sampled's threshold search on device memory (the same sample, the same float arithmetic, the same
// counts as topk.cpp): how many entries the selection keeps, m in [ceil(0.8k), k], or k when it falls back to
// the exact top-k. One copy to the host for the sample's threshold and one per counting round.
size_t sampled_count(const float* acc, size_t n, size_t k, uint64_t seed, TopkWorkspace::Impl& w) {
  const size_t lower = (k * 4 + 4) / 5;
  const size_t s = std::max<size_t>(n / 100, 1024);
  float* sample = TopkWorkspace::Impl::grow<float>(w.sample, s);
  sample_keys(sample, long(s), acc, long(n), seed);
  const size_t ks = std::min(s - 1, size_t(std::ceil(double(k) * double(s) / double(n))));
  radix_select(w.radix(), sample, long(s), long(ks + 1));  // the (ks+1)-th largest: nth_element's sample[ks]
  const auto state_h = Kokkos::create_mirror_view_and_copy(host_space(), w.state);
  float thr = half_detail::bits_float(state_h(0).prefix);
  float lo = 0, hi = std::numeric_limits<float>::infinity();
  for (int round = 0; round < 10 && thr > 0; ++round) {
    const size_t count = size_t(count_at_least(acc, long(n), thr));
    if (count > k + (k * 3 + 9) / 10) lo = thr;
    else if (count < lower) hi = thr;
    else return std::min(k, count);
    thr = std::isinf(hi) ? thr * 1.3f : (lo > 0 ? 0.5f * (lo + hi) : thr * 0.8f);
  }
  return k;
}

// One bucket in flight, as topk_allreduce.cpp's InFlight, on device buffers (the workspace's).
template <class V>
class DeviceInFlight final : public TopkRequest {
 public:
  DeviceInFlight(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) : grad_(grad), n_(n), p_(c.size()) {
    if (!o.workspace) own_ = std::make_unique<TopkWorkspace>();
    TopkWorkspace& ws = o.workspace ? *o.workspace : *own_;
    TopkWorkspace::Impl& w = ws.impl();
    res_.k = topk_count(n, o.density);
    res_.transport = o.force ? o.forced : choose_transport(c.size(), n, res_.k, sizeof(V), o.allow_shared);
    const WireBytes wb = wire_bytes(c.size(), n, res_.k, sizeof(V));
    float* acc = ef.residual();
    add_inplace(acc, static_cast<const float*>(grad), long(n));  // acc = grad + residual, in the residual
    const long k = long(res_.k);
    switch (res_.transport) {
      case Transport::Dense:
        res_.k = n;
        res_.wire_bytes = wb.dense;
        if constexpr (std::is_same_v<V, float>) {
          take<float>(acc, nullptr, long(n), grad);
          reqs_.push_back(c.iallreduce(grad, n, DType::F32, ReduceOp::Sum));
        } else {
          val_ = TopkWorkspace::Impl::grow<V>(w.val, n);
          take<V>(acc, nullptr, long(n), val_);
          reqs_.push_back(c.iallreduce(val_, n, wire_type<V>(), ReduceOp::Sum));
        }
        break;
      case Transport::AllGather:
        res_.wire_bytes = wb.allgather;
        idx_ = TopkWorkspace::Impl::grow<int32_t>(w.idx, res_.k);
        val_ = TopkWorkspace::Impl::grow<V>(w.val, res_.k);
        select_device(o.select, acc, n, res_.k, o.seed, idx_, ws);
        take<V>(acc, idx_, k, val_);
        all_idx_ = TopkWorkspace::Impl::grow<int32_t>(w.all_idx, size_t(p_) * res_.k);
        all_val_ = TopkWorkspace::Impl::grow<V>(w.all_val, size_t(p_) * res_.k);
        reqs_.push_back(c.iallgather(idx_, all_idx_, res_.k, DType::I32));
        reqs_.push_back(c.iallgather(val_, all_val_, res_.k * sizeof(V), DType::U8));  // bytes: nothing is reduced
        break;
      case Transport::Shared:
        res_.wire_bytes = wb.shared;
        idx_ = TopkWorkspace::Impl::grow<int32_t>(w.idx, res_.k);
        val_ = TopkWorkspace::Impl::grow<V>(w.val, res_.k);
        if (c.rank() == o.leader) select_device(o.select, acc, n, res_.k, o.seed, idx_, ws);
        c.broadcast(idx_, res_.k, DType::I32, o.leader);
        take<V>(acc, idx_, k, val_);
        reqs_.push_back(c.iallreduce(val_, res_.k, wire_type<V>(), ReduceOp::Sum));
        break;
    }
    if (!o.error_feedback) fill(acc, long(n), 0.0f);
  }

  bool test() override { return reqs_.test(); }

  void wait() override {
    reqs_.wait();
    const long k = long(res_.k);
    switch (res_.transport) {
      case Transport::Dense:
        if constexpr (!std::is_same_v<V, float>) convert(grad_, static_cast<const V*>(val_), long(n_));
        break;
      case Transport::AllGather:
        fill(grad_, long(n_), 0.0f);
        for (int r = 0; r < p_; ++r)  // rank order: the host loop's additions, one launch per rank
          scatter_add<V>(grad_, all_idx_ + long(r) * k, all_val_ + long(r) * k, k);
        break;
      case Transport::Shared:
        fill(grad_, long(n_), 0.0f);
        scatter_set<V>(grad_, idx_, val_, k);
        break;
    }
  }

 private:
  float* grad_;
  size_t n_;
  int p_;
  std::unique_ptr<TopkWorkspace> own_;  // when the options bring none
  int32_t *idx_ = nullptr, *all_idx_ = nullptr;
  V *val_ = nullptr, *all_val_ = nullptr;
  BucketCollectives reqs_;  // last: destroyed before the buffers it writes
};

}  // namespace

size_t select_device(Select how, const float* acc, size_t n, size_t k, uint64_t seed, int32_t* idx, TopkWorkspace& w) {
  k = std::min(k, n);
  if (k == 0) return 0;
  // below 65536 entries the host selects exactly too (topk.cpp)
  const size_t m = how == Select::Sampled && n >= 65536 ? sampled_count(acc, n, k, seed, w.impl()) : k;
  radix_select(w.impl().radix(), acc, long(n), long(m));
  compact_selected(idx, w.impl().radix(), acc, long(n));
  if (m < k) fill(idx + m, long(k - m), int32_t(-1));
  return m;
}

std::unique_ptr<TopkRequest> topk_start_device(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) {
  return start_bucket<DeviceInFlight>(c, ef, grad, n, o);
}

double norm2_device(const ErrorFeedback& ef) { return sum_squares(ef.residual(), long(ef.size())); }

}  // namespace gt::compress
