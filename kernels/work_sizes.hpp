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

// Fused attention (kernels/attention_fused.hpp). Host split: query tiles of kFaRows against key tiles of kFaCols,
// each product a GEMM on the head's rows gathered contiguously. 128 x 128 measured best of 32..256 x 64..1024 on
// gpt2-124m's attention (T = 1024, hd = 64; AMD EPYC Zen 5, oneDNN 2.6, 2026-12-04): 64 x 64 was 8-15% slower,
// (the tiles' GEMMs run on oneDNN's small-matrix path; larger key tiles gained nothing more).
constexpr int kFaRows = 128;
constexpr int kFaCols = 128;

// The fused attention's scratch, in elements of its accumulation type (fp32 for fp32 and 16-bit T). Host split:
// one key/value head's K, V, dK, dV and one query head's Q, dO, dQ (7 T hd), D (T) and four score tiles (P, dS
// and their 16-bit GEMM operands) in the backward; its K, V, Q (3 T hd), two score tiles, one output tile and the
// row maxima and sums in the forward; the larger of the two. Device split: D = rowsum(dO o O) of every (batch, head, query), B NH T (the tiles live in
// team scratch). Linear in T.
inline long attention_fused_scratch_elems(int B, int NH, int T_, int hd, bool device_split) {
  if (device_split) return long(B) * NH * T_;
  const long thd = long(T_) * hd;
  const long tile = long(kFaRows) * kFaCols;
  const long fwd = 3 * thd + 2 * tile + long(kFaRows) * hd + 2L * kFaRows;
  const long bwd = 7 * thd + T_ + 4 * tile;
  return fwd > bwd ? fwd : bwd;
}

// Device split: the team scratch of each fused-attention kernel for square tiles of `tile` queries x `tile` keys,
// in accumulation elements, and the largest tile (64, 32, ..., 1) whose scratch fits kFaTeamScratchBytes (CUDA's
// shared memory per block without opting in; 0 if none does). A function of hd and the element size only, so that
// the CPU test of the device split (GT_KERNELS_DEVICE_BLOCKING) runs the tiles a GPU runs.
enum class FaKernel { Forward, BackwardKV, BackwardQ };
constexpr long kFaTeamScratchBytes = 48 * 1024;
inline long fa_device_tile_elems(int tile, int hd, FaKernel k) {
  const long t = tile;
  switch (k) {
    case FaKernel::Forward: return 4 * t * hd + t * t + 3 * t;        // Q, O, K, V; S; max, sum, rescale
    case FaKernel::BackwardKV: return 6 * t * hd + 2 * t * t + 2 * t;  // K, V, dK, dV, Q, dO; P, dS; lse, D
    case FaKernel::BackwardQ: return 5 * t * hd + t * t + 2 * t;       // Q, dO, dQ, K, V; dS; lse, D
  }
  return 0;
}
inline int fa_device_tile(int hd, int elem_bytes, FaKernel k) {
  for (int t = 64; t >= 1; t /= 2)
    if (fa_device_tile_elems(t, hd, k) * elem_bytes <= kFaTeamScratchBytes) return t;
  return 0;
}

// The partial sums of a two-level column sum over N rows and `cols` columns in all (both outputs of LayerNorm's
// parameter gradients count: 2C): one per (row chunk, column) on the device split; the host split needs none.
inline long colsum_partials_elems(long N, long cols, bool device_split) {
  return device_split ? (N + kColsumRows - 1) / kColsumRows * cols : 0L;
}

}  // namespace gt
