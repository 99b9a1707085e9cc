#include "src/train/compress/transport.hpp"

#include <algorithm>

namespace gt::compress {

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::Dense: return "dense";
    case Transport::AllGather: return "allgather";
    case Transport::Shared: return "shared";
  }
  return "?";
}

WireBytes wire_bytes(int ranks, size_t n, size_t k, size_t value_bytes) {
  const double p = ranks, ring = 2.0 * (p - 1) / p;
  WireBytes w;
  w.dense = ring * double(value_bytes) * double(n);
  w.allgather = (p - 1) * double(value_bytes + 4) * double(k);
  w.shared = ring * 4.0 * double(k) + ring * double(value_bytes) * double(k);
  return w;
}

Transport choose_transport(int ranks, size_t n, size_t k, size_t value_bytes, bool allow_shared) {
  const WireBytes w = wire_bytes(ranks, n, k, value_bytes);
  Transport best = Transport::Dense;
  double bytes = w.dense;
  if (w.allgather < bytes) best = Transport::AllGather, bytes = w.allgather;
  if (allow_shared && w.shared < bytes) best = Transport::Shared;
  return best;
}

template <class V>
void allgather_sum(Comm& c, const int32_t* idx, const V* val, size_t k, float* out, size_t n) {
  const int p = c.size();
  std::vector<int32_t> all_idx(size_t(p) * k);
  std::vector<V> all_val(size_t(p) * k);
  c.allgather(idx, all_idx.data(), k, DType::I32);
  // values as bytes: the communicator has no 16-bit type, and nothing is reduced on the way
  c.allgather(val, all_val.data(), k * sizeof(V), DType::U8);
  std::fill(out, out + n, 0.0f);
  for (size_t j = 0; j < all_idx.size(); ++j)  // rank order: the same additions in the same order everywhere
    if (all_idx[j] >= 0) out[all_idx[j]] += static_cast<float>(all_val[j]);
}

template <class V>
void dense_allreduce(Comm& c, float* buf, size_t n) {
  const int p = c.size(), r = c.rank();
  if (p == 1 || n == 0) {
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(static_cast<V>(buf[i]));
    return;
  }
  // block b covers [n*b/p, n*(b+1)/p): any n, blocks differ by at most one element
  auto lo = [&](int b) { return n * size_t(b) / size_t(p); };
  std::vector<V> wire(n), in(n / size_t(p) + 1);
  for (size_t i = 0; i < n; ++i) wire[i] = static_cast<V>(buf[i]);
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  const int tag = 0x7c01;
  // reduce-scatter: after step s, block (r - s - 1) mod p holds the sum of s + 2 ranks' values
  for (int s = 0; s < p - 1; ++s) {
    const int sb = (r - s + p) % p, rb = (r - s - 1 + 2 * p) % p;
    const size_t rn = lo(rb + 1) - lo(rb);
    auto rq = c.irecv(in.data(), rn * sizeof(V), DType::U8, prev, tag);
    auto sq = c.isend(wire.data() + lo(sb), (lo(sb + 1) - lo(sb)) * sizeof(V), DType::U8, next, tag);
    rq->wait();
    sq->wait();
    V* dst = wire.data() + lo(rb);
    for (size_t i = 0; i < rn; ++i) dst[i] = static_cast<V>(static_cast<float>(dst[i]) + static_cast<float>(in[i]));
  }
  // all-gather: block (r + 1) mod p is complete here; pass the complete blocks around the ring
  for (int s = 0; s < p - 1; ++s) {
    const int sb = (r + 1 - s + p) % p, rb = (r - s + p) % p;
    auto rq = c.irecv(wire.data() + lo(rb), (lo(rb + 1) - lo(rb)) * sizeof(V), DType::U8, prev, tag + 1);
    auto sq = c.isend(wire.data() + lo(sb), (lo(sb + 1) - lo(sb)) * sizeof(V), DType::U8, next, tag + 1);
    rq->wait();
    sq->wait();
  }
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(wire[i]);
}

template void allgather_sum<float>(Comm&, const int32_t*, const float*, size_t, float*, size_t);
template void dense_allreduce<float>(Comm&, float*, size_t);

}  // namespace gt::compress
