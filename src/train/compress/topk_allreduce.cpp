#include "src/train/compress/topk_allreduce.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "src/core/error.hpp"

namespace gt::compress {

template <class V>
TopkResult topk_allreduce(Comm& c, ErrorFeedback& ef, float* grad, size_t n, const TopkOptions& o) {
  if (!(o.density > 0 && o.density <= 1))
    throw Error("compress.density must be in (0, 1], got " + std::to_string(o.density));
  if (o.leader < 0 || o.leader >= c.size()) throw Error("top-k leader rank " + std::to_string(o.leader) + " is not in the group");
  TopkResult res;
  res.k = topk_count(n, o.density);
  res.transport = o.force ? o.forced : choose_transport(c.size(), n, res.k, sizeof(V), o.allow_shared);
  const WireBytes w = wire_bytes(c.size(), n, res.k, sizeof(V));
  const float* acc = ef.accumulate(grad);
  std::vector<int32_t> idx;
  switch (res.transport) {
    case Transport::Dense: {
      res.k = n;
      res.wire_bytes = w.dense;
      std::vector<V> val(n);
      idx.resize(n);
      for (size_t i = 0; i < n; ++i) idx[i] = int32_t(i);
      ef.take(idx.data(), n, val.data());
      for (size_t i = 0; i < n; ++i) grad[i] = static_cast<float>(val[i]);
      if constexpr (std::is_same_v<V, float>) c.allreduce_sum(grad, n);
      else dense_allreduce<V>(c, grad, n);
      break;
    }
    case Transport::AllGather: {
      res.wire_bytes = w.allgather;
      select(o.select, acc, n, res.k, o.seed, idx);
      idx.resize(res.k, -1);  // the sampled selection may keep fewer: pad, every rank sends k pairs
      std::vector<V> val(res.k);
      ef.take(idx.data(), res.k, val.data());
      allgather_sum(c, idx.data(), val.data(), res.k, grad, n);
      break;
    }
    case Transport::Shared: {
      res.wire_bytes = w.shared;
      if (c.rank() == o.leader) {
        select(o.select, acc, n, res.k, o.seed, idx);
        idx.resize(res.k, -1);
      } else {
        idx.resize(res.k);
      }
      c.broadcast(idx.data(), res.k, DType::I32, o.leader);
      std::vector<float> val(res.k);
      ef.take(idx.data(), res.k, val.data());
      c.allreduce_sum(val.data(), res.k);
      std::fill(grad, grad + n, 0.0f);
      for (size_t j = 0; j < res.k; ++j)
        if (idx[j] >= 0) grad[idx[j]] = val[j];
      break;
    }
  }
  if (!o.error_feedback) ef.drop();
  return res;
}

template TopkResult topk_allreduce<float>(Comm&, ErrorFeedback&, float*, size_t, const TopkOptions&);

}  // namespace gt::compress
