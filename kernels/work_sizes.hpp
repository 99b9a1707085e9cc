#pragma once
// Element counts of the kernels' scratch buffers for either work split (kernels/lanes.hpp), without Kokkos: the
// model allocates these (through the wrappers in attention.hpp and colsum.hpp, which pass the build's own split)
// and the memory planner (src/plan/memory.cpp) counts the same numbers for the split of the device it plans for.

namespace gt {

// Rows one first-pass work item of a two-level column sum adds (kernels/colsum.hpp). 64 balances the passes for
// the usual B*T (4096-8192 rows): 64-128 partials per column, each item walking 64 rows.
constexpr long kColsumRows = 64;

// attention_backward's scratch (dP, then dS): one head's T x T on the host split, all NH heads' of one batch
// element on the device split (one strided-batched GEMM over the heads).
inline long attention_scratch_elems(int NH, int T_, bool device_split) {
  return (device_split ? long(NH) : 1L) * T_ * T_;
}

// The partial sums of a two-level column sum over N rows and `cols` columns in all (both outputs of LayerNorm's
// parameter gradients count: 2C): one per (row chunk, column) on the device split; the host split needs none.
inline long colsum_partials_elems(long N, long cols, bool device_split) {
  return device_split ? (N + kColsumRows - 1) / kColsumRows * cols : 0L;
}

}  // namespace gt
