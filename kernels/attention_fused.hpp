#pragma once
// Fused causal self-attention (FlashAttention-2's algorithm, Dao 2023), never storing the T x T matrix.
//
// Layout (llm.c's, as kernels/attention.hpp, with grouped-query heads): row (b,t) of qkv holds
//   [ q (NH*hd) | k (NKV*hd) | v (NKV*hd) ],  query head h reads key/value head h / (NH/NKV);
// NKV == NH is plain multi-head attention (qkv rows of 3*NH*hd). Or (grouped = true) per key/value head j its G =
// NH/NKV query heads, its key and its value: [ q_{jG} .. q_{jG+G-1} k_j v_j ] for j < NKV (the Llama model's).
// out (B,T,NH*hd), lse (B,NH,T) in A = acc_t<T>.
//
// Forward, per query tile: for each key tile at or left of the diagonal, S = scale Q K^T, the online softmax
//   m' = max(m, rowmax S),  P = exp(S - m'),  l' = e^(m-m') l + rowsum P,  O' = e^(m-m') O + P V,
// then O /= l and lse = m + log l (kept for backward). Tiles wholly above the diagonal are skipped, the
// diagonal tile is masked (key j > query t contributes 0).
// Backward recomputes P = exp(scale Q K^T - lse) tile by tile: D = rowsum(dO o O), dV += P^T dO,
// dP = dO V^T, dS = P o (dP - D), dK += scale dS^T Q, dQ += scale dS K.
// Counted work (the causal half, per (b, h)): forward 2 T^2 hd flops, backward 5 T^2 hd flops (S again,
// dV, dP, dK, dQ) against 2 T^2 hd and 4 T^2 hd of the materialized path; memory per (b, h) is O(T) (lse),
// not O(T^2).
//
// Two work splits (kernels/lanes.hpp):
// - host: per (batch, key/value head) the head's Q, K, V (and dO) are gathered into contiguous buffers, and each
//   tile product is a gt::gemm on them (tile sizes kFaRows x kFaCols) accumulating in A; 16-bit inputs stay
//   16-bit (the backend's native bf16 GEMM where the CPU has one), with P and dS rounded to 16 bits as GEMM
//   operands (their A values are what the softmax and the accumulators use). The softmax rows are vectorised
//   loops (lanes.hpp). Backward walks key tiles outside and query tiles inside, accumulating dK, dV of the key
//   head and dQ of the query head in A.
// - device: forward one Kokkos team per (batch, head, query tile), keys and values streamed tile by tile
//   through team scratch; backward one team per (batch, kv head, key tile) for dK, dV (queries streamed) and
//   one per (batch, head, query tile) for dQ (keys streamed), so that every output element has one writer and
//   no atomics are needed. Tile sizes: fa_device_tile (work_sizes.hpp), within kFaTeamScratchBytes.
// Every sum has a fixed order: two runs give the same bits.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "kernels/fastmath.hpp"
#include "kernels/gemm.hpp"
#include "kernels/lanes.hpp"
#include "kernels/work_sizes.hpp"

namespace gt {

// Scratch (elements of acc_t<T>) that attention_fused_forward and _backward need on this build's split.
inline long attention_fused_scratch_elems(int B, int NH, int T_, int hd) {
  return attention_fused_scratch_elems(B, NH, T_, hd, !kHostBlocking);
}

namespace detail {

// Where head h's q, k and v start within a qkv row, and the row's width. Two layouts: [q heads | k heads | v heads]
// (GPT-2's), or grouped per key/value head, [q (G heads) k v] for each (Megatron's, Llama in gridtrain: a TP shard of
// key/value heads is then one hyperslab of the weight).
struct FaHeads {
  int NH, NKV, hd;
  bool grouped;
  KOKKOS_INLINE_FUNCTION int group() const { return NH / NKV; }
  KOKKOS_INLINE_FUNCTION int ld() const { return (NH + 2 * NKV) * hd; }
  KOKKOS_INLINE_FUNCTION int q(int h) const {
    return grouped ? (h / group() * (group() + 2) + h % group()) * hd : h * hd;
  }
  KOKKOS_INLINE_FUNCTION int k(int kvh) const { return grouped ? (kvh * (group() + 2) + group()) * hd : (NH + kvh) * hd; }
  KOKKOS_INLINE_FUNCTION int v(int kvh) const {
    return grouped ? (kvh * (group() + 2) + group() + 1) * hd : (NH + NKV + kvh) * hd;
  }
};

// Keys of the tile starting at c0 (nc of them) that query t sees: keys c0 .. min(t, c0 + nc - 1).
KOKKOS_INLINE_FUNCTION int fa_visible(int t, int c0, int nc) {
  const int n = t + 1 - c0;
  return n < 0 ? 0 : (n > nc ? nc : n);
}

// The tiles' GEMM operand type: the storage type for 16-bit inputs (the GEMM backend multiplies bf16/fp16 natively
// where the CPU can, accumulating in fp32; the probabilities and dS are rounded to it for their products, as the
// materialized path stores them), A otherwise.
template <class T>
using fa_operand_t = std::conditional_t<is_half_v<T>, T, acc_t<T>>;

// dst (T_ x hd, contiguous) = the T_ rows of src (row stride ld), converted to G (exact: G is T or wider).
template <class G, class T>
void fa_gather(G* dst, const T* src, int T_, int hd, long ld) {
  for (int t = 0; t < T_; ++t) {
    const T* s = src + t * ld;
    G* d = dst + long(t) * hd;
    GT_IVDEP for (int i = 0; i < hd; ++i) d[i] = G(acc_t<T>(s[i]));
  }
}

// dst rows (stride ld) = scale * src (T_ x hd, contiguous), rounded once to T.
template <class T, class A>
void fa_scatter(T* dst, const A* src, int T_, int hd, long ld, A scale) {
  for (int t = 0; t < T_; ++t) {
    const A* s = src + long(t) * hd;
    T* d = dst + t * ld;
    GT_IVDEP for (int i = 0; i < hd; ++i) d[i] = T(scale * s[i]);
  }
}

// x (n elements, A) as a GEMM operand of type G: x itself when G is A, else rounded into buf.
template <class G, class A>
const G* fa_operand(const A* x, G* buf, long n) {
  if constexpr (std::is_same_v<G, A>) {
    return x;
  } else {
    GT_IVDEP for (long i = 0; i < n; ++i) buf[i] = G(x[i]);
    return buf;
  }
}

// One row of the forward's online softmax: S row (n visible scores of nc) becomes P = exp(S - m') (0 past n);
// m, l updated; returns the factor e^(m - m') that the row's output accumulator must be multiplied by.
template <class A>
A fa_online_row(A* s, int n, int nc, A& m, A& l) {
  if (n == 0) {
    for (int j = 0; j < nc; ++j) s[j] = A(0);
    return A(1);
  }
  const A rm = lanes_max(s, n);
  const A mx = rm > m ? rm : m;
  const A alpha = m == -std::numeric_limits<A>::infinity() ? A(0) : A(kexp(m - mx));
  for (int j = 0; j < n; ++j) s[j] = kexp(s[j] - mx);
  for (int j = n; j < nc; ++j) s[j] = A(0);
  l = alpha * l + lanes_sum(s, n);
  m = mx;
  return alpha;
}

// Host split, forward of one query head, given its K and V gathered (T_ x hd each, operand type G).
template <class T, class A, class G>
void fa_forward_head_host(T* out, A* lse, A* work, const T* qsrc, const G* K, const G* V, int T_, int hd, long ld,
                          long ldo, A scale) {
  constexpr int Br = kFaRows, Bc = kFaCols;
  G* Q = reinterpret_cast<G*>(work);                 // T_ x hd (in A-sized slots)
  A* S = work + long(T_) * hd;                       // Br x Bc
  G* Sg = reinterpret_cast<G*>(S + Br * Bc);         // Br x Bc: P as a GEMM operand (16-bit T)
  A* O = S + 2 * Br * Bc;                            // Br x hd
  A* m = O + Br * hd;                                // Br
  A* l = m + Br;                                     // Br
  fa_gather(Q, qsrc, T_, hd, ld);
  for (int r0 = 0; r0 < T_; r0 += Br) {
    const int nr = T_ - r0 < Br ? T_ - r0 : Br;
    for (int i = 0; i < nr; ++i) {
      m[i] = -std::numeric_limits<A>::infinity();
      l[i] = A(0);
    }
    for (int c0 = 0; c0 < r0 + nr; c0 += Bc) {  // key tiles at or left of the diagonal
      const int nc = r0 + nr - c0 < Bc ? r0 + nr - c0 : Bc;  // keys past the tile's last query are all masked
      gemm(Op::N, Op::T, nr, nc, hd, scale, Q + long(r0) * hd, hd, K + long(c0) * hd, hd, A(0), S, Bc);
      for (int i = 0; i < nr; ++i) {
        const A alpha = fa_online_row(S + i * Bc, fa_visible(r0 + i, c0, nc), nc, m[i], l[i]);
        A* o = O + i * hd;
        if (c0 == 0) for (int d = 0; d < hd; ++d) o[d] = A(0);
        else if (alpha != A(1)) for (int d = 0; d < hd; ++d) o[d] *= alpha;
      }
      const G* P = fa_operand(S, Sg, long(nr) * Bc);
      gemm(Op::N, Op::N, nr, hd, nc, A(1), P, Bc, V + long(c0) * hd, hd, A(1), O, hd);
    }
    for (int i = 0; i < nr; ++i) {
      const A inv = A(1) / l[i];
      T* o = out + (r0 + i) * ldo;
      GT_IVDEP for (int d = 0; d < hd; ++d) o[d] = T(O[i * hd + d] * inv);
      lse[r0 + i] = m[i] + A(math::log(l[i]));
    }
  }
}

template <class T>
void fa_forward_host(T* out, acc_t<T>* lse, acc_t<T>* scratch, const T* qkv, int B, int T_, FaHeads hs, acc_t<T> scale) {
  using G = fa_operand_t<T>;
  const long ld = hs.ld(), ldo = long(hs.NH) * hs.hd, Thd = long(T_) * hs.hd;
  G* K = reinterpret_cast<G*>(scratch);
  G* V = reinterpret_cast<G*>(scratch + Thd);
  for (int b = 0; b < B; ++b)
    for (int kvh = 0; kvh < hs.NKV; ++kvh) {
      const T* row0 = qkv + long(b) * T_ * ld;
      fa_gather(K, row0 + hs.k(kvh), T_, hs.hd, ld);
      fa_gather(V, row0 + hs.v(kvh), T_, hs.hd, ld);
      for (int h = kvh * hs.group(); h < (kvh + 1) * hs.group(); ++h)
        fa_forward_head_host(out + long(b) * T_ * ldo + long(h) * hs.hd, lse + (long(b) * hs.NH + h) * T_,
                             scratch + 2 * Thd, row0 + hs.q(h), K, V, T_, hs.hd, ld, ldo, scale);
    }
}

// The backward's buffers for one key/value head (host split), carved out of the scratch: the operands K, V, Q, dO
// in G (in A-sized slots), the accumulators dK, dV, dQ, D and the tiles P, dS in A, P and dS as operands in G.
template <class A, class G>
struct FaBackHost {
  G *K, *V, *Q, *dO, *Pg, *dSg;
  A *dK, *dV, *dQ, *D, *P, *dS;
  FaBackHost(A* s, int T_, int hd) {
    const long n = long(T_) * hd, tile = long(kFaRows) * kFaCols;
    K = reinterpret_cast<G*>(s);
    V = reinterpret_cast<G*>(s + n);
    Q = reinterpret_cast<G*>(s + 2 * n);
    dO = reinterpret_cast<G*>(s + 3 * n);
    dK = s + 4 * n; dV = dK + n; dQ = dV + n; D = dQ + n; P = D + T_; dS = P + tile;
    Pg = reinterpret_cast<G*>(dS + tile);
    dSg = reinterpret_cast<G*>(dS + 2 * tile);
  }
};

// Key tile [c0, c0+nc) against query tile [r0, r0+nr) of one query head: dV, dK of the keys and dQ of the
// queries accumulate (unscaled; dK and dQ take the scale when written).
template <class A, class G>
void fa_backward_tile_host(const FaBackHost<A, G>& w, const A* lse, int r0, int nr, int c0, int nc, int hd, A scale) {
  constexpr int Bc = kFaCols;
  gemm(Op::N, Op::T, nr, nc, hd, scale, w.Q + long(r0) * hd, hd, w.K + long(c0) * hd, hd, A(0), w.P, Bc);
  gemm(Op::N, Op::T, nr, nc, hd, A(1), w.dO + long(r0) * hd, hd, w.V + long(c0) * hd, hd, A(0), w.dS, Bc);
  for (int i = 0; i < nr; ++i) {
    A* p = w.P + i * Bc;
    A* ds = w.dS + i * Bc;
    const int n = fa_visible(r0 + i, c0, nc);
    const A L = lse[r0 + i], D = w.D[r0 + i];
    for (int j = 0; j < n; ++j) p[j] = kexp(p[j] - L);
    for (int j = n; j < nc; ++j) p[j] = A(0);
    for (int j = 0; j < nc; ++j) ds[j] = p[j] * (ds[j] - D);
  }
  const G* P = fa_operand(w.P, w.Pg, long(nr) * Bc);
  const G* dS = fa_operand(w.dS, w.dSg, long(nr) * Bc);
  gemm(Op::T, Op::N, nc, hd, nr, A(1), P, Bc, w.dO + long(r0) * hd, hd, A(1), w.dV + long(c0) * hd, hd);
  gemm(Op::T, Op::N, nc, hd, nr, A(1), dS, Bc, w.Q + long(r0) * hd, hd, A(1), w.dK + long(c0) * hd, hd);
  gemm(Op::N, Op::N, nr, hd, nc, A(1), dS, Bc, w.K + long(c0) * hd, hd, A(1), w.dQ + long(r0) * hd, hd);
}

// Query head h's share of the backward: D, then every (key tile, query tile) pair at or below the diagonal.
template <class T, class A, class G>
void fa_backward_head_host(const FaBackHost<A, G>& w, T* dq, const T* qsrc, const T* dout, const T* out, const A* lse,
                           int T_, int hd, long ld, long ldo, A scale) {
  fa_gather(w.Q, qsrc, T_, hd, ld);
  fa_gather(w.dO, dout, T_, hd, ldo);
  for (int t = 0; t < T_; ++t) {
    A acc = A(0);
    for (int d = 0; d < hd; ++d) acc += A(dout[t * ldo + d]) * A(out[t * ldo + d]);
    w.D[t] = acc;
  }
  for (long i = 0; i < long(T_) * hd; ++i) w.dQ[i] = A(0);
  for (int c0 = 0; c0 < T_; c0 += kFaCols) {
    const int nc = T_ - c0 < kFaCols ? T_ - c0 : kFaCols;
    for (int r0 = c0 / kFaRows * kFaRows; r0 < T_; r0 += kFaRows) {
      const int nr = T_ - r0 < kFaRows ? T_ - r0 : kFaRows;
      const int vis = r0 + nr - c0 < nc ? r0 + nr - c0 : nc;  // keys past the query tile's last row are all masked
      fa_backward_tile_host(w, lse, r0, nr, c0, vis, hd, scale);
    }
  }
  fa_scatter(dq, w.dQ, T_, hd, ld, scale);
}

template <class T>
void fa_backward_host(T* dqkv, acc_t<T>* scratch, const T* dout, const T* qkv, const T* out, const acc_t<T>* lse,
                      int B, int T_, FaHeads hs, acc_t<T> scale) {
  using A = acc_t<T>;
  const long ld = hs.ld(), ldo = long(hs.NH) * hs.hd, Thd = long(T_) * hs.hd;
  const FaBackHost<A, fa_operand_t<T>> w(scratch, T_, hs.hd);
  for (int b = 0; b < B; ++b)
    for (int kvh = 0; kvh < hs.NKV; ++kvh) {
      const T* row0 = qkv + long(b) * T_ * ld;
      T* drow0 = dqkv + long(b) * T_ * ld;
      fa_gather(w.K, row0 + hs.k(kvh), T_, hs.hd, ld);
      fa_gather(w.V, row0 + hs.v(kvh), T_, hs.hd, ld);
      for (long i = 0; i < Thd; ++i) w.dK[i] = w.dV[i] = A(0);
      for (int h = kvh * hs.group(); h < (kvh + 1) * hs.group(); ++h) {
        const long o = long(b) * T_ * ldo + long(h) * hs.hd;
        fa_backward_head_host(w, drow0 + hs.q(h), row0 + hs.q(h), dout + o, out + o,
                              lse + (long(b) * hs.NH + h) * T_, T_, hs.hd, ld, ldo, scale);
      }
      fa_scatter(drow0 + hs.k(kvh), w.dK, T_, hs.hd, ld, scale);
      fa_scatter(drow0 + hs.v(kvh), w.dV, T_, hs.hd, ld, A(1));
    }
}

// ---- device split: teams with scratch ----

using FaTeams = Kokkos::TeamPolicy<exec_space>;
using FaTeam = FaTeams::member_type;

inline FaTeams fa_teams(long league, long scratch_elems, int elem_bytes) {
  return FaTeams(static_cast<int>(league), Kokkos::AUTO)
      .set_scratch_size(0, Kokkos::PerTeam(size_t(scratch_elems) * size_t(elem_bytes)));
}

// dst (n x hd, scratch) = rows r0.. of src (stride ld), widened; the team's threads share the elements.
template <class A, class T>
KOKKOS_INLINE_FUNCTION void fa_team_load(const FaTeam& tm, A* dst, const T* src, int r0, int n, int hd, long ld) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, n * hd), [&](int e) {
    const int i = e / hd, d = e - i * hd;
    dst[e] = A(src[(r0 + i) * ld + d]);
  });
}

// A team's scratch handed out piece by piece, in the order fa_device_tile_elems counts the pieces.
template <class A>
struct FaScratch {
  A* next;
  KOKKOS_INLINE_FUNCTION A* take(long n) {
    A* p = next;
    next += n;
    return p;
  }
};

// L, Dq (nr, scratch) = the backward's per-query statistics lse and D of nr query rows, from index at.
template <class A>
KOKKOS_INLINE_FUNCTION void fa_team_load_stats(const FaTeam& tm, A* L, A* Dq, const A* lse, const A* D, long at,
                                               int nr) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr), [&](int i) {
    L[i] = lse[at + i];
    Dq[i] = D[at + i];
  });
}

template <class A>
KOKKOS_INLINE_FUNCTION A fa_dot(const A* x, const A* y, int n) {
  A s = A(0);
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

template <class T>
void fa_forward_device(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, FaHeads hs, acc_t<T> scale) {
  using A = acc_t<T>;
  const int hd = hs.hd, Bt = fa_device_tile(hd, int(sizeof(A)), FaKernel::Forward);
  const int tiles = (T_ + Bt - 1) / Bt, NH = hs.NH;
  const long ld = hs.ld(), ldo = long(NH) * hd;
  const long elems = fa_device_tile_elems(Bt, hd, FaKernel::Forward);
  const A ninf = -std::numeric_limits<A>::infinity();
  Kokkos::parallel_for("attention_fused_forward", fa_teams(long(B) * NH * tiles, elems, sizeof(A)),
                       KOKKOS_LAMBDA(const FaTeam& tm) {
    const int qt = tm.league_rank() % tiles, bh = tm.league_rank() / tiles, h = bh % NH, b = bh / NH;
    const int r0 = qt * Bt, nr = T_ - r0 < Bt ? T_ - r0 : Bt, kvh = h / hs.group();
    FaScratch<A> sc{static_cast<A*>(tm.team_scratch(0).get_shmem(size_t(elems) * sizeof(A)))};
    A *Q = sc.take(Bt * hd), *O = sc.take(Bt * hd), *K = sc.take(Bt * hd), *V = sc.take(Bt * hd);
    A *S = sc.take(Bt * Bt), *m = sc.take(Bt), *l = sc.take(Bt), *alpha = sc.take(Bt);
    const T* row0 = qkv + long(b) * T_ * ld;
    fa_team_load(tm, Q, row0 + hs.q(h), r0, nr, hd, ld);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) { O[e] = A(0); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr), [&](int i) {
      m[i] = ninf;
      l[i] = A(0);
    });
    for (int c0 = 0; c0 < r0 + nr; c0 += Bt) {
      const int nc = T_ - c0 < Bt ? T_ - c0 : Bt;
      tm.team_barrier();  // the previous tile's K, V and S are read no more
      fa_team_load(tm, K, row0 + hs.k(kvh), c0, nc, hd, ld);
      fa_team_load(tm, V, row0 + hs.v(kvh), c0, nc, hd, ld);
      tm.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * nc), [&](int e) {
        const int i = e / nc, j = e - i * nc;
        S[i * Bt + j] = scale * fa_dot(Q + i * hd, K + j * hd, hd);
      });
      tm.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr), [&](int i) {  // one thread per row: online softmax
        A* s = S + i * Bt;
        const int n = fa_visible(r0 + i, c0, nc);
        A mx = m[i];
        for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
        const A a = n == 0 ? A(1) : (m[i] == ninf ? A(0) : A(kexp(m[i] - mx)));
        A sum = A(0);
        for (int j = 0; j < nc; ++j) {
          s[j] = j < n ? A(kexp(s[j] - mx)) : A(0);
          sum += s[j];
        }
        l[i] = a * l[i] + sum;
        m[i] = mx;
        alpha[i] = a;
      });
      tm.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) {
        const int i = e / hd, d = e - i * hd;
        A acc = A(0);
        for (int j = 0; j < nc; ++j) acc += S[i * Bt + j] * V[j * hd + d];
        O[e] = alpha[i] * O[e] + acc;
      });
    }
    tm.team_barrier();
    T* o0 = out + long(b) * T_ * ldo + long(h) * hd;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) {
      const int i = e / hd, d = e - i * hd;
      o0[(r0 + i) * ldo + d] = T(O[e] / l[i]);
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr), [&](int i) {
      lse[(long(b) * NH + h) * T_ + r0 + i] = m[i] + math::log(l[i]);
    });
  });
}

// D[b,h,t] = rowsum(dO o O) over the head's hd columns, one work item per (b, h, t).
template <class T>
void fa_rowdot_device(acc_t<T>* D, const T* dout, const T* out, int B, int T_, int NH, int hd) {
  using A = acc_t<T>;
  const long ldo = long(NH) * hd;
  Kokkos::parallel_for("attention_fused_rowdot", range(0, long(B) * NH * T_), KOKKOS_LAMBDA(long r) {
    const long t = r % T_, bh = r / T_, h = bh % NH, b = bh / NH;
    const long off = (b * T_ + t) * ldo + h * hd;
    A acc = A(0);
    for (int d = 0; d < hd; ++d) acc += A(dout[off + d]) * A(out[off + d]);
    D[r] = acc;
  });
}

// P and dS of query rows i < nr (scratch Q, dO; their lse L and D) against keys j < nc (scratch K, V): P into
// P (if given) and dS = P o (dP - D) into dS, both Bt wide.
template <class A>
KOKKOS_INLINE_FUNCTION void fa_team_p_ds(const FaTeam& tm, A* P, A* dS, const A* Q, const A* dO, const A* K,
                                         const A* V, const A* L, const A* D, int r0, int nr, int c0, int nc, int Bt,
                                         int hd, A scale) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * nc), [&](int e) {
    const int i = e / nc, j = e - i * nc;
    const A p = c0 + j <= r0 + i ? A(kexp(scale * fa_dot(Q + i * hd, K + j * hd, hd) - L[i])) : A(0);
    if (P) P[i * Bt + j] = p;
    dS[i * Bt + j] = p * (fa_dot(dO + i * hd, V + j * hd, hd) - D[i]);
  });
}

// dK, dV: one team per (b, kv head, key tile), the query tiles of the group's heads streamed.
template <class T>
void fa_backward_dkdv_device(T* dqkv, const acc_t<T>* D, const T* dout, const T* qkv, const acc_t<T>* lse, int B,
                             int T_, FaHeads hs, acc_t<T> scale) {
  using A = acc_t<T>;
  const int hd = hs.hd, Bt = fa_device_tile(hd, int(sizeof(A)), FaKernel::BackwardKV);
  const int tiles = (T_ + Bt - 1) / Bt, NH = hs.NH, NKV = hs.NKV, G = hs.group();
  const long ld = hs.ld(), ldo = long(NH) * hd;
  const long elems = fa_device_tile_elems(Bt, hd, FaKernel::BackwardKV);
  Kokkos::parallel_for("attention_fused_backward_kv", fa_teams(long(B) * NKV * tiles, elems, sizeof(A)),
                       KOKKOS_LAMBDA(const FaTeam& tm) {
    const int kt = tm.league_rank() % tiles, bk = tm.league_rank() / tiles, kvh = bk % NKV, b = bk / NKV;
    const int c0 = kt * Bt, nc = T_ - c0 < Bt ? T_ - c0 : Bt;
    FaScratch<A> sc{static_cast<A*>(tm.team_scratch(0).get_shmem(size_t(elems) * sizeof(A)))};
    A *K = sc.take(Bt * hd), *V = sc.take(Bt * hd), *dK = sc.take(Bt * hd), *dV = sc.take(Bt * hd);
    A *Q = sc.take(Bt * hd), *dO = sc.take(Bt * hd), *P = sc.take(Bt * Bt), *dS = sc.take(Bt * Bt);
    A *L = sc.take(Bt), *Dq = sc.take(Bt);
    const T* row0 = qkv + long(b) * T_ * ld;
    fa_team_load(tm, K, row0 + hs.k(kvh), c0, nc, hd, ld);
    fa_team_load(tm, V, row0 + hs.v(kvh), c0, nc, hd, ld);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nc * hd), [&](int e) { dK[e] = dV[e] = A(0); });
    for (int h = kvh * G; h < (kvh + 1) * G; ++h)
      for (int r0 = c0; r0 < T_; r0 += Bt) {  // query tiles at or below the diagonal
        const int nr = T_ - r0 < Bt ? T_ - r0 : Bt;
        tm.team_barrier();  // the previous tile's Q, dO, P, dS are read no more
        fa_team_load(tm, Q, row0 + hs.q(h), r0, nr, hd, ld);
        fa_team_load(tm, dO, dout + long(b) * T_ * ldo + long(h) * hd, r0, nr, hd, ldo);
        fa_team_load_stats(tm, L, Dq, lse, D, (long(b) * NH + h) * T_ + r0, nr);
        tm.team_barrier();
        fa_team_p_ds(tm, P, dS, Q, dO, K, V, L, Dq, r0, nr, c0, nc, Bt, hd, scale);
        tm.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nc * hd), [&](int e) {
          const int j = e / hd, d = e - j * hd;
          A v = A(0), k = A(0);
          for (int i = 0; i < nr; ++i) {
            v += P[i * Bt + j] * dO[i * hd + d];
            k += dS[i * Bt + j] * Q[i * hd + d];
          }
          dV[e] += v;
          dK[e] += k;
        });
      }
    tm.team_barrier();
    T* d0 = dqkv + long(b) * T_ * ld;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nc * hd), [&](int e) {
      const int j = e / hd, d = e - j * hd;
      d0[(c0 + j) * ld + hs.k(kvh) + d] = T(scale * dK[e]);
      d0[(c0 + j) * ld + hs.v(kvh) + d] = T(dV[e]);
    });
  });
}

// dQ: one team per (b, head, query tile), the key tiles at or left of the diagonal streamed.
template <class T>
void fa_backward_dq_device(T* dqkv, const acc_t<T>* D, const T* dout, const T* qkv, const acc_t<T>* lse, int B,
                           int T_, FaHeads hs, acc_t<T> scale) {
  using A = acc_t<T>;
  const int hd = hs.hd, Bt = fa_device_tile(hd, int(sizeof(A)), FaKernel::BackwardQ);
  const int tiles = (T_ + Bt - 1) / Bt, NH = hs.NH;
  const long ld = hs.ld(), ldo = long(NH) * hd;
  const long elems = fa_device_tile_elems(Bt, hd, FaKernel::BackwardQ);
  Kokkos::parallel_for("attention_fused_backward_q", fa_teams(long(B) * NH * tiles, elems, sizeof(A)),
                       KOKKOS_LAMBDA(const FaTeam& tm) {
    const int qt = tm.league_rank() % tiles, bh = tm.league_rank() / tiles, h = bh % NH, b = bh / NH;
    const int r0 = qt * Bt, nr = T_ - r0 < Bt ? T_ - r0 : Bt, kvh = h / hs.group();
    FaScratch<A> sc{static_cast<A*>(tm.team_scratch(0).get_shmem(size_t(elems) * sizeof(A)))};
    A *Q = sc.take(Bt * hd), *dO = sc.take(Bt * hd), *dQ = sc.take(Bt * hd), *K = sc.take(Bt * hd);
    A *V = sc.take(Bt * hd), *dS = sc.take(Bt * Bt), *L = sc.take(Bt), *Dq = sc.take(Bt);
    const T* row0 = qkv + long(b) * T_ * ld;
    fa_team_load(tm, Q, row0 + hs.q(h), r0, nr, hd, ld);
    fa_team_load(tm, dO, dout + long(b) * T_ * ldo + long(h) * hd, r0, nr, hd, ldo);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) { dQ[e] = A(0); });
    fa_team_load_stats(tm, L, Dq, lse, D, (long(b) * NH + h) * T_ + r0, nr);
    for (int c0 = 0; c0 < r0 + nr; c0 += Bt) {
      const int nc = T_ - c0 < Bt ? T_ - c0 : Bt;
      tm.team_barrier();  // the previous tile's K, V, dS are read no more
      fa_team_load(tm, K, row0 + hs.k(kvh), c0, nc, hd, ld);
      fa_team_load(tm, V, row0 + hs.v(kvh), c0, nc, hd, ld);
      tm.team_barrier();
      fa_team_p_ds(tm, static_cast<A*>(nullptr), dS, Q, dO, K, V, L, Dq, r0, nr, c0, nc, Bt, hd, scale);
      tm.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) {
        const int i = e / hd, d = e - i * hd;
        A acc = A(0);
        for (int j = 0; j < nc; ++j) acc += dS[i * Bt + j] * K[j * hd + d];
        dQ[e] += acc;
      });
    }
    tm.team_barrier();
    T* d0 = dqkv + long(b) * T_ * ld + hs.q(h);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, nr * hd), [&](int e) {
      const int i = e / hd, d = e - i * hd;
      d0[(r0 + i) * ld + d] = T(scale * dQ[e]);
    });
  });
}

template <class A>
FaHeads fa_heads(int NH, int hd, int NKV, bool grouped) {
  if (NKV <= 0) NKV = NH;
  if (NH % NKV != 0) throw std::invalid_argument("attention_fused: NH is not a multiple of NKV");
  if (!kHostBlocking && fa_device_tile(hd, int(sizeof(A)), FaKernel::BackwardKV) == 0)
    throw std::invalid_argument("attention_fused: head dimension too large for the device split's team scratch");
  return FaHeads{NH, NKV, hd, grouped};
}

}  // namespace detail

// qkv (B,T,(NH+2NKV)hd)  out (B,T,NH*hd) set  lse (B,NH,T) set (log-sum-exp of each query's scaled scores)
// scratch >= attention_fused_scratch_elems(B, NH, T, hd) elements of acc_t<T>. NKV <= 0 means NKV = NH; grouped:
// qkv rows in the grouped layout (FaHeads).
template <class T>
void attention_fused_forward(T* out, acc_t<T>* lse, acc_t<T>* scratch, const T* qkv, int B, int T_, int NH, int hd,
                             int NKV = 0, bool grouped = false) {
  const detail::FaHeads hs = detail::fa_heads<acc_t<T>>(NH, hd, NKV, grouped);
  const acc_t<T> scale = acc_t<T>(1) / acc_t<T>(std::sqrt(double(hd)));
  if constexpr (kHostBlocking) detail::fa_forward_host(out, lse, scratch, qkv, B, T_, hs, scale);
  else detail::fa_forward_device(out, lse, qkv, B, T_, hs, scale);
}

// dout, out (B,T,NH*hd) (out and lse from attention_fused_forward on the same qkv)  dqkv (B,T,(NH+2NKV)hd) set
template <class T>
void attention_fused_backward(T* dqkv, acc_t<T>* scratch, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int NH, int hd, int NKV = 0, bool grouped = false) {
  const detail::FaHeads hs = detail::fa_heads<acc_t<T>>(NH, hd, NKV, grouped);
  const acc_t<T> scale = acc_t<T>(1) / acc_t<T>(std::sqrt(double(hd)));
  if constexpr (kHostBlocking) {
    detail::fa_backward_host(dqkv, scratch, dout, qkv, out, lse, B, T_, hs, scale);
  } else {
    detail::fa_rowdot_device(scratch, dout, out, B, T_, NH, hd);
    detail::fa_backward_dkdv_device(dqkv, scratch, dout, qkv, lse, B, T_, hs, scale);
    detail::fa_backward_dq_device(dqkv, scratch, dout, qkv, lse, B, T_, hs, scale);
  }
}

}  // namespace gt
