#pragma once
// How a compressed bucket travels (issue 11), and which way moves the fewest bytes. Every function is
// collective over `c` and leaves the same sum, bit for bit, on every rank.
//   dense       all-reduce of all n values (fp32: Comm::allreduce; 16-bit V: dense_allreduce below)
//   all-gather  every rank's k (int32 index, V value) pairs to every rank, summed in rank order
//   shared      one index set (a leader's top-k) broadcast, the k values at those indices all-reduced
// Values travel as v = 4 (fp32) or 2 (bf16/fp16) bytes, indices as int32. Bytes each rank sends (ring
// collectives, P ranks, n entries, k = top-k count):
//   dense(v)    2(P-1)/P * v * n
//   all-gather  (P-1) * (v + 4) * k
//   shared      2(P-1)/P * 4 * k  (the index broadcast, as scatter + all-gather)  +  2(P-1)/P * v * k (values)
// So all-gather beats dense(v) while k/n < 2v / ((v + 4) P): 1/P with fp32 values, 0.67/P with 16-bit ones;
// shared beats it while k/n < v / (4 + v): 1/2 (fp32), 1/3 (16-bit). At P = 2, fp32 values, all-gather and
// shared move the same bytes. docs/compression.md derives them; test_compress checks the chooser.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/comm/comm.hpp"

namespace gt::compress {

enum class Transport { Dense, AllGather, Shared };
const char* transport_name(Transport t);

struct WireBytes {
  double dense = 0, allgather = 0, shared = 0;  // bytes each rank sends, formulas above
};
WireBytes wire_bytes(int ranks, size_t n, size_t k, size_t value_bytes);
// The transport that sends the fewest bytes among those allowed (shared only when allow_shared: it sends
// another set than each rank's own top-k); ties go to dense, then all-gather.
Transport choose_transport(int ranks, size_t n, size_t k, size_t value_bytes, bool allow_shared);

// out[0..n) = sum over ranks (in rank order) of the pairs (idx[j], val[j]), j < k; every rank passes the same
// k; idx < 0 is padding. Sends k * (4 + sizeof(V)) bytes per rank by all-gather.
template <class V>
void allgather_sum(Comm& c, const int32_t* idx, const V* val, size_t k, float* out, size_t n);

// Dense all-reduce with V on the wire: a ring (reduce-scatter, then all-gather) that adds in float at each
// hop and rounds to V before sending on, as a 16-bit NCCL ring does. buf is float in and out.
template <class V>
void dense_allreduce(Comm& c, float* buf, size_t n);

}  // namespace gt::compress
