#pragma once
// Token + position embedding. Vocab-parallel: this rank holds rows [v0, v0+Vl) of the token table; a token
// outside that range contributes zero here (another tensor-parallel rank adds it; the caller all-reduces).
// Tables and outputs in the storage type T; sums and the table gradients in A = acc_t<T> (fp32 for the
// 16-bit types: the gradients go to the fp32 gradient buffer).
#include <cstdint>

#include "kernels/lanes.hpp"

namespace gt {

// tokens: (BT) int32   wte: (Vl,C)   wpe: (T,C) or nullptr   out: (BT,C) set
// out[i,:] = (tok in [v0,v0+Vl) ? wte[tok-v0,:] : 0) + (wpe ? wpe[i % T,:] : 0)
// only_in_range (wpe null): rows of tokens outside [v0,v0+Vl) are left as they are, not zeroed: wte looked up
// chunk of rows by chunk of rows (ZeRO with a chunked wte, GPT::embedding_forward_chunked).
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, const no_deduce_t<T>* wpe, int BT, int T_, int C, int v0,
                       int Vl, bool only_in_range = false) {
  Kokkos::parallel_for("embedding_forward", range(0, BT), KOKKOS_LAMBDA(long i) {
    const long row = static_cast<long>(tokens[i]) - v0;
    const bool have_tok = row >= 0 && row < Vl;
    if (only_in_range && !have_tok) return;
    T* o = out + i * C;
    const T* w = wte + (have_tok ? row : 0) * C;
    if (wpe != nullptr) {
      const T* p = wpe + (i % T_) * C;
      if (have_tok)
        for (int c = 0; c < C; ++c) o[c] = T(acc_t<T>(w[c]) + acc_t<T>(p[c]));
      else
        for (int c = 0; c < C; ++c) o[c] = p[c];
    } else {
      if (have_tok)
        for (int c = 0; c < C; ++c) o[c] = w[c];
      else
        for (int c = 0; c < C; ++c) o[c] = T(0);
    }
  });
}

// dout: (BT,C)   dwte: (Vl,C) acc, or nullptr   dwpe: (T,C) acc, or nullptr
// Work items own disjoint column blocks (and positions, for dwpe), so repeated tokens never race and need
// no atomics; tokens are visited in order, so the sums are the same bits on every run.
template <class T>
void embedding_backward(acc_t<T>* dwte, acc_t<T>* dwpe, const T* dout, const int32_t* tokens, int BT, int T_, int C,
                        int v0, int Vl) {
  const int nblk = col_block_count(C);
  if (dwte != nullptr)
    Kokkos::parallel_for("embedding_backward_wte", range(0, nblk), KOKKOS_LAMBDA(long blk) {
      const int c0 = static_cast<int>(blk) * kColBlock;
      const int c1 = c0 + kColBlock < C ? c0 + kColBlock : C;
      for (long i = 0; i < BT; ++i) {
        const long row = static_cast<long>(tokens[i]) - v0;
        if (row < 0 || row >= Vl) continue;
        acc_t<T>* d = dwte + row * C;
        const T* g = dout + i * C;
        for (int c = c0; c < c1; ++c) d[c] += acc_t<T>(g[c]);
      }
    });
  if (dwpe == nullptr) return;
  const int B = BT / T_;
  Kokkos::parallel_for("embedding_backward_wpe", range(0, static_cast<long>(T_) * nblk), KOKKOS_LAMBDA(long item) {
    const long t = item / nblk;
    const int c0 = static_cast<int>(item % nblk) * kColBlock;
    const int c1 = c0 + kColBlock < C ? c0 + kColBlock : C;
    acc_t<T>* d = dwpe + t * C;
    for (long b = 0; b < B; ++b) {
      const T* g = dout + (b * T_ + t) * C;
      for (int c = c0; c < c1; ++c) d[c] += acc_t<T>(g[c]);
    }
  });
}

}  // namespace gt
