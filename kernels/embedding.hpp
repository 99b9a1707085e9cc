#pragma once
// Token + position embedding. Vocab-parallel: this rank holds rows [v0, v0+Vl) of the token table; a token
// outside that range contributes zero here (another tensor-parallel rank adds it; the caller all-reduces).
// Tables and outputs in the storage type T; sums and the table gradients in A = acc_t<T> (fp32 for the
// 16-bit types: the gradients go to the fp32 gradient buffer).
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/lanes.hpp"
#include "kernels/token_groups.hpp"

namespace gt {

// tokens: (BT) int32   wte: (Vl,C)   wpe: (T,C) or nullptr   out: (BT,C) set
// out[i,:] = (tok in [v0,v0+Vl) ? wte[tok-v0,:] : 0) + (wpe ? wpe[i % T,:] : 0)
// only_in_range (wpe null): rows of tokens outside [v0,v0+Vl) are left as they are, not zeroed: wte looked up
// chunk of rows by chunk of rows (ZeRO with a chunked wte, GPT::embedding_forward_chunked).
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* wte, const no_deduce_t<T>* wpe, int BT, int T_, int C, int v0,
                       int Vl, bool only_in_range = false) {
  if constexpr (!kHostBlocking) {  // one work item per element: consecutive threads read consecutive columns
    Kokkos::parallel_for("embedding_forward", range(0, long(BT) * C), KOKKOS_LAMBDA(long e) {
      const long i = e / C;
      const long c = e - i * C;
      const long row = static_cast<long>(tokens[i]) - v0;
      const bool have_tok = row >= 0 && row < Vl;
      if (only_in_range && !have_tok) return;
      const T w = have_tok ? wte[row * C + c] : T(0);
      out[e] = wpe == nullptr ? w : have_tok ? T(acc_t<T>(w) + acc_t<T>(wpe[(i % T_) * C + c])) : wpe[(i % T_) * C + c];
    });
    return;
  }
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

namespace detail {
// dwte rows += the dout rows of their token, one team per group of equal tokens (token_groups.hpp), its threads
// striding the columns, each adding the group's rows in position order: the host split's order, so the same
// bits. Groups of tokens outside [v0, v0+Vl) return at once.
template <class T>
void embedding_backward_wte_groups(acc_t<T>* dwte, const T* dout, TokenGroups g, int C, int v0, int Vl) {
  if (g.n <= 0) return;
  const int32_t* pos = g.pos;
  const int32_t* start = g.start;
  const int32_t* token = g.token;
  Kokkos::parallel_for("embedding_backward_wte", row_teams(g.n), KOKKOS_LAMBDA(const RowTeam& team) {
    const int k = team.league_rank();
    const long row = static_cast<long>(token[k]) - v0;
    if (row < 0 || row >= Vl) return;
    const int j0 = start[k], j1 = start[k + 1];
    acc_t<T>* d = dwte + row * C;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, C), [&](int c) {
      acc_t<T> s = d[c];
      for (int j = j0; j < j1; ++j) s += acc_t<T>(dout[static_cast<long>(pos[j]) * C + c]);
      d[c] = s;
    });
  });
}
}  // namespace detail

// dout: (BT,C)   dwte: (Vl,C) acc, or nullptr   dwpe: (T,C) acc, or nullptr
// groups: the tokens grouped by id (token_groups.hpp, built once per micro-batch), read on the device split only.
// Every dwte and dwpe element is owned by one work item, which adds its rows in position order: repeated tokens
// never race and need no atomics, and the sums are the same bits on every run and on both splits.
// Host split: work items own column blocks of dwte (each walking the tokens in order) and (position, column
// block) pairs of dwpe. Device split: one team per distinct token for dwte (detail::embedding_backward_wte_groups:
// for gpt2-124m at B*T = 4096 about as many teams as distinct tokens, instead of C = 768 threads each walking all
// 4096 tokens), one item per (position, column) for dwpe.
template <class T>
void embedding_backward(acc_t<T>* dwte, acc_t<T>* dwpe, const T* dout, const int32_t* tokens, int BT, int T_, int C,
                        int v0, int Vl, const TokenGroups& groups) {
  const int nblk = col_block_count(C);
  if (dwte != nullptr && !kHostBlocking) {
    if (groups.n < 0) throw std::invalid_argument("embedding_backward: the device split needs the token groups");
    detail::embedding_backward_wte_groups(dwte, dout, groups, C, v0, Vl);
  } else if (dwte != nullptr) {
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
  }
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

// The same without prepared groups. On the device split (with dwte) it groups the tokens itself, through the
// host: one copy of the tokens there, one of the groups back (a sync each). For callers that run once (the kernel
// tests); the model prepares the groups with the tokens of each micro-batch and passes them.
template <class T>
void embedding_backward(acc_t<T>* dwte, acc_t<T>* dwpe, const T* dout, const int32_t* tokens, int BT, int T_, int C,
                        int v0, int Vl) {
  if (kHostBlocking || dwte == nullptr)
    return embedding_backward(dwte, dwpe, dout, tokens, BT, T_, C, v0, Vl, TokenGroups{});
  Kokkos::View<int32_t*, host_space> tok_h("tokens_host", size_t(BT));
  Kokkos::deep_copy(tok_h, Kokkos::View<const int32_t*, mem_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(tokens, size_t(BT)));
  std::vector<int32_t> packed;
  const int n = group_tokens(tok_h.data(), BT, packed);
  Kokkos::View<int32_t*, mem_space> packed_d("token_groups", packed.size());
  Kokkos::deep_copy(packed_d, Kokkos::View<const int32_t*, host_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                  packed.data(), packed.size()));
  embedding_backward(dwte, dwpe, dout, tokens, BT, T_, C, v0, Vl, token_groups_at(packed_d.data(), BT, n));
  Kokkos::fence();  // packed_d is freed on return: the kernel must be done with it
}

}  // namespace gt
