#pragma once
// Flat elementwise kernels over N elements (long), and a deterministic sum of squares for gradient norms.
// Host builds give each work item a chunk of kChunk elements so that its plain inner loop vectorises.
// The arithmetic is in A = acc_t<T> (float for the 16-bit storage types), each result rounded to T once.
#include "kernels/lanes.hpp"

namespace gt {

namespace detail {
KOKKOS_INLINE_FUNCTION long chunk_end(long ch, long N) { return (ch + 1) * kChunk < N ? (ch + 1) * kChunk : N; }
}  // namespace detail

// out = a + b   (N) set
template <class T>
void residual_forward(T* out, const T* a, const T* b, long N) {
  Kokkos::parallel_for("residual_forward", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) out[i] = T(acc_t<T>(a[i]) + acc_t<T>(b[i]));
  });
}

// y += x   (N)
template <class T>
void add_inplace(T* y, const T* x, long N) {
  Kokkos::parallel_for("add_inplace", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) y[i] = T(acc_t<T>(y[i]) + acc_t<T>(x[i]));
  });
}

// y += a * x   (N): a micro-batch's gradients added into an accumulating buffer with its weight
template <class T>
void add_scaled(T* y, const T* x, acc_t<T> a, long N) {
  Kokkos::parallel_for("add_scaled", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) y[i] = T(acc_t<T>(y[i]) + a * acc_t<T>(x[i]));
  });
}

// y *= s   (N)
template <class T>
void scale_inplace(T* y, long N, acc_t<T> s) {
  Kokkos::parallel_for("scale_inplace", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) y[i] = T(y[i] * s);
  });
}

// y = v   (N) set
template <class T>
void fill(T* y, long N, no_deduce_t<T> v) {
  Kokkos::parallel_for("fill", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) y[i] = v;
  });
}

// dst = src   (N) set
template <class T>
void copy(T* dst, const T* src, long N) {
  Kokkos::parallel_for("copy", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) dst[i] = src[i];
  });
}

// dst = src converted (N) set: widening to float is exact, narrowing rounds to nearest even (kernels/half.hpp).
// The refresh of a half working copy from the fp32 master, and the fp32 staging of half buffers.
template <class D, class S>
void convert(D* dst, const S* src, long N) {
  Kokkos::parallel_for("convert", range(0, chunk_count(N)), KOKKOS_LAMBDA(long ch) {
    const long i1 = detail::chunk_end(ch, N);
    for (long i = ch * kChunk; i < i1; ++i) dst[i] = D(acc_t<S>(src[i]));
  });
}

// sum_i x[i]^2 in double. Fixed blocks of kSumBlock elements are each summed in a fixed order (kLanes
// partial sums), then the block sums are combined by parallel_reduce, whose order is fixed for a given
// backend and size (sequential on Serial): two runs give the same bits.
constexpr long kSumBlock = 4096;
namespace detail {
// sum of x[i]^2 over i0 <= i < i1 in double: kLanes partial sums in a fixed order, then combined.
template <class T>
KOKKOS_INLINE_FUNCTION double block_sum_squares(const T* x, long i0, long i1) {
  double lane[kLanes] = {};
  long i = i0;
  for (; i + kLanes <= i1; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const double v = static_cast<double>(x[i + k]);
      lane[k] += v * v;
    }
  for (int k = 0; i + k < i1; ++k) {
    const double v = static_cast<double>(x[i + k]);
    lane[k] += v * v;
  }
  return combine_sum(lane);
}
}  // namespace detail

template <class T>
double sum_squares(const T* x, long N) {
  const long nblk = (N + kSumBlock - 1) / kSumBlock;
  double total = 0.0;
  Kokkos::parallel_reduce("sum_squares", range(0, nblk), KOKKOS_LAMBDA(long blk, double& acc) {
    const long i0 = blk * kSumBlock;
    acc += detail::block_sum_squares(x, i0, i0 + kSumBlock < N ? i0 + kSumBlock : N);
  }, total);
  return total;
}

}  // namespace gt
