#pragma once
// Causal multi-head self-attention over NH local heads of size hd (Cl = NH*hd), llm.c layout:
//   qkv row (b,t) = [ q(Cl) | k(Cl) | v(Cl) ], head h at columns h*hd .. h*hd+hd-1 of each part.
// Per (b,h):  S = scale * Q K^T,  P = causal_softmax(S),  O = P V,  scale = 1/sqrt(hd).
// The products are gt::gemm calls with leading dimension 3*Cl straight into qkv (no copies). Queries are
// taken in row blocks of kAttRowBlock so that a block only multiplies against the keys it can see: the
// GEMMs skip most of the masked upper triangle (T=256: 62% of the full work instead of 100%). No fences between
// the GEMMs and the softmax kernels: all of them run in order on one stream (kernels/device_stream.hpp).
// Storage type T for qkv, the probabilities and the outputs; with a 16-bit T the GEMMs take T inputs and
// accumulate in fp32 (kernels/gemm.hpp) and the softmax computes in fp32 (A = acc_t<T>), each stored value
// rounded once.
#include <cmath>

#include "kernels/fastmath.hpp"
#include "kernels/gemm.hpp"
#include "kernels/lanes.hpp"

namespace gt {

constexpr int kAttRowBlock = 64;

// S rows r0..r1-1 (row stride T_) hold scaled scores for keys 0..r1-1; each row t becomes the softmax over
// keys 0..t, and every entry above the diagonal (to the end of the row) is set to 0.
template <class T>
void causal_softmax_rows(T* S, int r0, int r1, int T_) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("attention_softmax", row_teams(r1 - r0), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long t = r0 + tm.league_rank();
      T* row = S + t * T_;
      const int n = static_cast<int>(t) + 1;
      A m = row[0], sum = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a = A(row[j]) > a ? A(row[j]) : a; },
                              Kokkos::Max<A>(m));
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a += kexp(row[j] - m); }, sum);
      const A inv = A(1) / sum;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, T_), [&](int j) { row[j] = T(j < n ? kexp(row[j] - m) * inv : A(0)); });
    });
    return;
  }
  Kokkos::parallel_for("attention_softmax", range(r0, r1), KOKKOS_LAMBDA(long t) {
    T* row = S + t * T_;
    const int n = static_cast<int>(t) + 1;
    const A m = lanes_max(row, n);
    for (int j = 0; j < n; ++j) row[j] = T(kexp(row[j] - m));
    const A inv = A(1) / lanes_sum(row, n);
    for (int j = 0; j < n; ++j) row[j] = T(row[j] * inv);
    for (int j = n; j < T_; ++j) row[j] = T(0);
  });
}

// dS rows r0..r1-1 hold dP = dO V^T for keys 0..r1-1; becomes dS = P o (dP - rowsum(P o dP)) for keys
// 0..t and 0 above the diagonal (softmax backward; the 1/sqrt(hd) is applied by the following GEMMs).
template <class T>
void causal_softmax_backward_rows(T* dS, const T* P, int r0, int r1, int T_) {
  using A = acc_t<T>;
  if constexpr (!kHostBlocking) {  // one team per row (lanes.hpp)
    Kokkos::parallel_for("attention_softmax_backward", row_teams(r1 - r0), KOKKOS_LAMBDA(const RowTeam& tm) {
      const long t = r0 + tm.league_rank();
      T* d = dS + t * T_;
      const T* p = P + t * T_;
      const int n = static_cast<int>(t) + 1;
      A dot = 0;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(tm, n), [&](int j, A& a) { a += A(p[j]) * A(d[j]); }, dot);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, T_), [&](int j) { d[j] = T(j < n ? p[j] * (d[j] - dot) : A(0)); });
    });
    return;
  }
  Kokkos::parallel_for("attention_softmax_backward", range(r0, r1), KOKKOS_LAMBDA(long t) {
    T* d = dS + t * T_;
    const T* p = P + t * T_;
    const int n = static_cast<int>(t) + 1;
    const A dot = lanes_dot(p, d, n);
    for (int j = 0; j < n; ++j) d[j] = T(p[j] * (d[j] - dot));
    for (int j = n; j < T_; ++j) d[j] = T(0);
  });
}

// qkv: (B,T,3*Cl)  att: (B,NH,T,T) set (probabilities, 0 above the diagonal)  out: (B,T,Cl) set
template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int NH, int hd) {
  const int Cl = NH * hd;
  const int ld = 3 * Cl;
  using A = acc_t<T>;
  const A scale = A(1) / A(std::sqrt(double(hd)));
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

// dout: (B,T,Cl)  qkv: (B,T,3*Cl)  att: (B,NH,T,T) from attention_forward  dqkv: (B,T,3*Cl) set
// scratch: >= T*T elements (dP, then dS, of one head at a time)
//   dP = dO V^T,  dS = softmax_backward(P, dP),  dQ = scale dS K,  dK = scale dS^T Q,  dV = P^T dO
template <class T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B, int T_, int NH,
                        int hd) {
  const int Cl = NH * hd;
  const int ld = 3 * Cl;
  using A = acc_t<T>;
  const A scale = A(1) / A(std::sqrt(double(hd)));
  T* dS = scratch;
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

}  // namespace gt
