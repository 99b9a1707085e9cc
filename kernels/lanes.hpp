#pragma once
// Fixed-order reductions over one contiguous row, used inside kernels (one work item = one row).
// A single accumulator is a serial dependency that IEEE semantics forbid the compiler to reorder, so such a
// loop never vectorises without -ffast-math. Here kLanes independent partial results are kept instead
// (GCC turns them into one or two vector registers) and combined in a fixed tree at the end: fast, and the
// same bits on every call. The rows may hold a 16-bit storage type; the partial results are then float
// (acc_t<T>): each element widens exactly on load and nothing is rounded to 16 bits until the caller stores.
#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt {

constexpr int kLanes = 16;  // one AVX-512 register of floats, two AVX2 ones (more ILP there)

// Optional pointer arguments (nullptr allowed) and scalar arguments take their type from the array
// arguments, so that linear_forward(out, x, w, nullptr, ...) or adamw_update(p, ..., 1e-3 /* double */, ...)
// deduce T from the arrays (C++20's std::type_identity_t).
template <class T>
struct no_deduce { using type = T; };
template <class T>
using no_deduce_t = typename no_deduce<T>::type;

namespace detail {
// Pairwise tree over the lanes, always in the same order. Overwrites acc.
template <class T>
KOKKOS_INLINE_FUNCTION T combine_sum(T* acc) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}
template <class T>
KOKKOS_INLINE_FUNCTION T max2(T a, T b) { return a > b ? a : b; }
}  // namespace detail

// sum_j x[j], j < n
template <class T>
KOKKOS_INLINE_FUNCTION acc_t<T> lanes_sum(const T* x, int n) {
  acc_t<T> acc[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += x[j + k];
  for (int k = 0; j + k < n; ++k) acc[k] += x[j + k];
  return detail::combine_sum(acc);
}

// sum_j x[j] * y[j], j < n
template <class T>
KOKKOS_INLINE_FUNCTION acc_t<T> lanes_dot(const T* x, const T* y, int n) {
  acc_t<T> acc[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += x[j + k] * y[j + k];
  for (int k = 0; j + k < n; ++k) acc[k] += x[j + k] * y[j + k];
  return detail::combine_sum(acc);
}

// sum_j (x[j] - m)^2, j < n
template <class T>
KOKKOS_INLINE_FUNCTION acc_t<T> lanes_sum_sq_dev(const T* x, acc_t<T> m, int n) {
  using A = acc_t<T>;
  A acc[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const A d = x[j + k] - m;
      acc[k] += d * d;
    }
  for (int k = 0; j + k < n; ++k) {
    const A d = x[j + k] - m;
    acc[k] += d * d;
  }
  return detail::combine_sum(acc);
}

// max_j x[j], j < n (n >= 1)
template <class T>
KOKKOS_INLINE_FUNCTION acc_t<T> lanes_max(const T* x, int n) {
  using A = acc_t<T>;
  A acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = x[0];
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] = detail::max2(acc[k], A(x[j + k]));
  for (int k = 0; j + k < n; ++k) acc[k] = detail::max2(acc[k], A(x[j + k]));
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = detail::max2(acc[k], acc[k + w]);
  return acc[0];
}

// Work-splitting constants. On the host one work item takes a cache-friendly block (a run of columns, a
// chunk of a flat array) so that its inner loop vectorises; on a GPU one item per element is best.
// GT_KERNELS_DEVICE_BLOCKING makes a host build use the GPU split, so that the CPU tests cover it too.
#if defined(GT_KERNELS_DEVICE_BLOCKING)
constexpr bool kHostBlocking = false;
#else
constexpr bool kHostBlocking = exec_on_host;
#endif
constexpr int kColBlock = kHostBlocking ? 64 : 1;
constexpr long kChunk = kHostBlocking ? 4096 : 1;

// Row kernels on the device split: one team per row, its threads striding the row (consecutive threads read
// consecutive columns: coalesced) and combining with Kokkos' team reduction, a fixed tree for a given team size,
// so a run gives the same bits every time. The host split keeps one work item per row with lanes_* sums.
using RowTeams = Kokkos::TeamPolicy<exec_space>;
using RowTeam = RowTeams::member_type;
inline RowTeams row_teams(int rows) { return RowTeams(rows, Kokkos::AUTO); }

KOKKOS_INLINE_FUNCTION long chunk_count(long n) { return (n + kChunk - 1) / kChunk; }
KOKKOS_INLINE_FUNCTION int col_block_count(int c) { return (c + kColBlock - 1) / kColBlock; }

}  // namespace gt
