#pragma once
// Causal multi-head self-attention over NH local heads of size hd (Cl = NH*hd), llm.c layout:
//   qkv row (b,t) = [ q(Cl) | k(Cl) | v(Cl) ], head h at columns h*hd .. h*hd+hd-1 of each part.
// Per (b,h):  S = scale * Q K^T,  P = causal_softmax(S),  O = P V,  scale = 1/sqrt(hd).
// The products are GEMMs with leading dimension 3*Cl straight into qkv (no copies). Two work splits:
// - host (kHostBlocking): per (batch, head), queries in row blocks of kAttRowBlock so that a block only multiplies
//   against the keys it can see: the GEMMs skip most of the masked upper triangle (T=256: 62% of the full work
//   instead of 100%); on a CPU a GEMM call costs a function call.
// - device: per batch element, one strided-batched GEMM over the NH heads for each product (full T x T, the
//   upper triangle masked by the softmax) and one softmax kernel over every row of every head: 2 GEMM launches
//   and 1 kernel per batch element forward, 4 and 1 backward, instead of NH * ceil(T/64) times as many.
// No fences between the GEMMs and the softmax kernels: all of them run in order on one stream
// (kernels/device_stream.hpp).
// Storage type T for qkv, the probabilities and the outputs; with a 16-bit T the GEMMs take T inputs and
// accumulate in fp32 (kernels/gemm.hpp) and the softmax computes in fp32 (A = acc_t<T>), each stored value
// rounded once.
#include <cmath>

#include "kernels/fastmath.hpp"
#include "kernels/gemm.hpp"
#include "kernels/lanes.hpp"
#include "kernels/work_sizes.hpp"

namespace gt {

constexpr int kAttRowBlock = 64;

// Number of elements attention_backward needs as scratch on this build's split (kernels/work_sizes.hpp).
inline long attention_scratch_elems(int NH, int T_) { return attention_scratch_elems(NH, T_, !kHostBlocking); }

// S rows r0..r1-1 (row stride T_; row r is query t = r % T_, so rows of several T x T heads may be given) hold
// scaled scores for keys 0..t at least; each row becomes the softmax over keys 0..t, and every entry above the
// diagonal (to the end of the row) is set to 0.
template <class T>
void causal_softmax_rows(T* S, long r0, long r1, int T_) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("attention_softmax", row_teams(static_cast<int>(r1 - r0)), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long r = r0 + tm.league_rank();
      T* row = S + r * T_;
      const int n = static_cast<int>(r % T_) + 1;
      A m = row[0], sum = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a = A(row[j]) > a ? A(row[j]) : a; },
                              Kokkos::Max<A>(m));
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a += kexp(row[j] - m); }, sum);
      const A inv = A(1) / sum;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, T_), [&](int j) { row[j] = T(j < n ? kexp(row[j] - m) * inv : A(0)); });
    });
    return;
  }
  Kokkos::parallel_for("attention_softmax", range(r0, r1), KOKKOS_LAMBDA(long r) {
    T* row = S + r * T_;
    const int n = static_cast<int>(r % T_) + 1;
    const A m = lanes_max(row, n);
    for (int j = 0; j < n; ++j) row[j] = T(kexp(row[j] - m));
    const A inv = A(1) / lanes_sum(row, n);
    for (int j = 0; j < n; ++j) row[j] = T(row[j] * inv);
    for (int j = n; j < T_; ++j) row[j] = T(0);
  });
}

// dS rows r0..r1-1 (row r is query t = r % T_, as above) hold dP = dO V^T for keys 0..t at least; becomes
// dS = P o (dP - rowsum(P o dP)) for keys 0..t and 0 above the diagonal (softmax backward; the 1/sqrt(hd) is
// applied by the following GEMMs).
template <class T>
void causal_softmax_backward_rows(T* dS, const T* P, long r0, long r1, int T_) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("attention_softmax_backward", row_teams(static_cast<int>(r1 - r0)), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long r = r0 + tm.league_rank();
      T* d = dS + r * T_;
      const T* p = P + r * T_;
      const int n = static_cast<int>(r % T_) + 1;
      A dot = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a += A(p[j]) * A(d[j]); }, dot);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, T_), [&](int j) { d[j] = T(j < n ? p[j] * (d[j] - dot) : A(0)); });
    });
    return;
  }
  Kokkos::parallel_for("attention_softmax_backward", range(r0, r1), KOKKOS_LAMBDA(long r) {
    T* d = dS + r * T_;
    const T* p = P + r * T_;
    const int n = static_cast<int>(r % T_) + 1;
    const A dot = lanes_dot(p, d, n);
    for (int j = 0; j < n; ++j) d[j] = T(p[j] * (d[j] - dot));
    for (int j = n; j < T_; ++j) d[j] = T(0);
  });
}

namespace detail {

// Host split of attention_forward: per (batch, head), query row blocks against the keys they see.
template <class T>
void attention_forward_blocked(T* out, T* att, const T* qkv, int B, int T_, int NH, int hd, acc_t<T> scale) {
  using A = acc_t<T>;
  const int Cl = NH * hd, ld = 3 * Cl;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const T* Q = qkv + static_cast<long>(b) * T_ * ld + h * hd;
      const T* K = Q + Cl;
      const T* V = Q + 2 * Cl;
      T* P = att + (static_cast<long>(b) * NH + h) * T_ * T_;
      T* O = out + static_cast<long>(b) * T_ * Cl + h * hd;
      for (int r0 = 0; r0 < T_; r0 += kAttRowBlock) {
        const int r1 = r0 + kAttRowBlock < T_ ? r0 + kAttRowBlock : T_;
        // S[r0:r1, 0:r1] = scale * Q[r0:r1] K[0:r1]^T
        gemm(Op::N, Op::T, r1 - r0, r1, hd, scale, Q + static_cast<long>(r0) * ld, ld, K, ld, A(0),
             P + static_cast<long>(r0) * T_, T_);
        causal_softmax_rows(P, r0, r1, T_);
        // O[r0:r1] = P[r0:r1, 0:r1] V[0:r1]
        gemm(Op::N, Op::N, r1 - r0, hd, r1, A(1), P + static_cast<long>(r0) * T_, T_, V, ld, A(0),
             O + static_cast<long>(r0) * Cl, Cl);
      }
    }
}

// Device split of attention_forward: per batch element, each product one strided-batched GEMM over the heads
// (head h: columns h*hd of qkv and out, stride hd; its T x T block of att, stride T*T).
template <class T>
void attention_forward_batched(T* out, T* att, const T* qkv, int B, int T_, int NH, int hd, acc_t<T> scale) {
  using A = acc_t<T>;
  const int Cl = NH * hd, ld = 3 * Cl;
  const long TT = long(T_) * T_;
  for (int b = 0; b < B; ++b) {
    const T* Q = qkv + static_cast<long>(b) * T_ * ld;
    T* P = att + static_cast<long>(b) * NH * TT;
    // S_h = scale * Q_h K_h^T (all T keys; the softmax zeroes the masked ones)
    gemm_strided_batched(Op::N, Op::T, T_, T_, hd, scale, Q, ld, hd, Q + Cl, ld, hd, A(0), P, T_, TT, NH);
    causal_softmax_rows(P, 0, long(NH) * T_, T_);
    // O_h = P_h V_h
    gemm_strided_batched(Op::N, Op::N, T_, hd, T_, A(1), P, T_, TT, Q + 2 * Cl, ld, hd, A(0),
                         out + static_cast<long>(b) * T_ * Cl, Cl, hd, NH);
  }
}

// Host split of attention_backward: per (batch, head), one head's dS in scratch (T x T).
template <class T>
void attention_backward_blocked(T* dqkv, T* dS, const T* dout, const T* qkv, const T* att, int B, int T_, int NH,
                                int hd, acc_t<T> scale) {
  using A = acc_t<T>;
  const int Cl = NH * hd, ld = 3 * Cl;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      const long qoff = static_cast<long>(b) * T_ * ld + h * hd;
      const T* Q = qkv + qoff;
      const T* K = Q + Cl;
      const T* V = Q + 2 * Cl;
      T* dQ = dqkv + qoff;
      T* dK = dQ + Cl;
      T* dV = dQ + 2 * Cl;
      const T* P = att + (static_cast<long>(b) * NH + h) * T_ * T_;
      const T* dO = dout + static_cast<long>(b) * T_ * Cl + h * hd;
      // Query row blocks: dP, dS and dQ only need keys 0..r1-1.
      for (int r0 = 0; r0 < T_; r0 += kAttRowBlock) {
        const int r1 = r0 + kAttRowBlock < T_ ? r0 + kAttRowBlock : T_;
        gemm(Op::N, Op::T, r1 - r0, r1, hd, A(1), dO + static_cast<long>(r0) * Cl, Cl, V, ld, A(0),
             dS + static_cast<long>(r0) * T_, T_);
        causal_softmax_backward_rows(dS, P, r0, r1, T_);
        gemm(Op::N, Op::N, r1 - r0, hd, r1, scale, dS + static_cast<long>(r0) * T_, T_, K, ld, A(0),
             dQ + static_cast<long>(r0) * ld, ld);
      }
      // Key row blocks: key j is seen by queries j..T-1 only (dS and P are 0 above the diagonal).
      for (int c0 = 0; c0 < T_; c0 += kAttRowBlock) {
        const int c1 = c0 + kAttRowBlock < T_ ? c0 + kAttRowBlock : T_;
        const long diag = static_cast<long>(c0) * T_ + c0;
        gemm(Op::T, Op::N, c1 - c0, hd, T_ - c0, scale, dS + diag, T_, Q + static_cast<long>(c0) * ld, ld, A(0),
             dK + static_cast<long>(c0) * ld, ld);
        gemm(Op::T, Op::N, c1 - c0, hd, T_ - c0, A(1), P + diag, T_, dO + static_cast<long>(c0) * Cl, Cl, A(0),
             dV + static_cast<long>(c0) * ld, ld);
      }
    }
}

// Device split of attention_backward: per batch element, every head's dS in scratch (NH x T x T) and one
// strided-batched GEMM over the heads per product.
template <class T>
void attention_backward_batched(T* dqkv, T* dS, const T* dout, const T* qkv, const T* att, int B, int T_, int NH,
                                int hd, acc_t<T> scale) {
  using A = acc_t<T>;
  const int Cl = NH * hd, ld = 3 * Cl;
  const long TT = long(T_) * T_;
  for (int b = 0; b < B; ++b) {
    const long qoff = static_cast<long>(b) * T_ * ld;
    const T* Q = qkv + qoff;
    T* dQ = dqkv + qoff;
    const T* P = att + static_cast<long>(b) * NH * TT;
    const T* dO = dout + static_cast<long>(b) * T_ * Cl;
    gemm_strided_batched(Op::N, Op::T, T_, T_, hd, A(1), dO, Cl, hd, Q + 2 * Cl, ld, hd, A(0), dS, T_, TT, NH);  // dP
    causal_softmax_backward_rows(dS, P, 0, long(NH) * T_, T_);
    gemm_strided_batched(Op::N, Op::N, T_, hd, T_, scale, dS, T_, TT, Q + Cl, ld, hd, A(0), dQ, ld, hd, NH);
    gemm_strided_batched(Op::T, Op::N, T_, hd, T_, scale, dS, T_, TT, Q, ld, hd, A(0), dQ + Cl, ld, hd, NH);
    gemm_strided_batched(Op::T, Op::N, T_, hd, T_, A(1), P, T_, TT, dO, Cl, hd, A(0), dQ + 2 * Cl, ld, hd, NH);
  }
}

}  // namespace detail

// qkv: (B,T,3*Cl)  att: (B,NH,T,T) set (probabilities, 0 above the diagonal)  out: (B,T,Cl) set
template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int NH, int hd) {
  const acc_t<T> scale = acc_t<T>(1) / acc_t<T>(std::sqrt(double(hd)));
  if constexpr (kHostBlocking) detail::attention_forward_blocked(out, att, qkv, B, T_, NH, hd, scale);
  else detail::attention_forward_batched(out, att, qkv, B, T_, NH, hd, scale);
}

// dout: (B,T,Cl)  qkv: (B,T,3*Cl)  att: (B,NH,T,T) from attention_forward  dqkv: (B,T,3*Cl) set
// scratch: >= attention_scratch_elems(NH, T) elements (dP, then dS, of one head or of one batch element's heads)
//   dP = dO V^T,  dS = softmax_backward(P, dP),  dQ = scale dS K,  dK = scale dS^T Q,  dV = P^T dO
template <class T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B, int T_, int NH,
                        int hd) {
  const acc_t<T> scale = acc_t<T>(1) / acc_t<T>(std::sqrt(double(hd)));
  if constexpr (kHostBlocking) detail::attention_backward_blocked(dqkv, scratch, dout, qkv, att, B, T_, NH, hd, scale);
  else detail::attention_backward_batched(dqkv, scratch, dout, qkv, att, B, T_, NH, hd, scale);
}

}  // namespace gt
