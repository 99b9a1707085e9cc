#pragma once
// One place for the differences between Kokkos 3.4 (Debian 12) and Kokkos 4.x (upstream, CUDA builds).
// Kernels include this instead of <Kokkos_Core.hpp> and use gt::exec_space / gt::mem_space / gt::math::*.
#include <Kokkos_Core.hpp>
#include <cmath>

#if !defined(KOKKOS_VERSION)
#error "Kokkos does not define KOKKOS_VERSION"
#endif

#define GT_KOKKOS_AT_LEAST(major, minor) (KOKKOS_VERSION >= ((major)*10000 + (minor)*100))

// GT_IVDEP goes before an element-wise inner loop over a row whose output never overlaps its inputs (other than
// element for element). Without it GCC 12 at -O3 unroll-and-jams the Serial row loop around such a loop and leaves
// the 16-bit conversions scalar: residual_bias_forward in bf16 took 1.0 ms per 1024 x 384 call instead of 0.05 ms
// (measured 2026-12-04, AMD EPYC Zen 5), the fp32 instantiation was unaffected. Host GCC only: nvcc and clang
// get nothing (they neither need nor all accept the pragma).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && !defined(__CUDA_ARCH__)
#define GT_IVDEP _Pragma("GCC ivdep")
#else
#define GT_IVDEP
#endif

namespace gt {

using exec_space = Kokkos::DefaultExecutionSpace;
using mem_space = exec_space::memory_space;
using host_space = Kokkos::HostSpace;

// True when the default execution space runs on the host (Serial, OpenMP, Threads): GEMMs go to BLAS.
constexpr bool exec_on_host =
    Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, mem_space>::accessible;

template <class T>
using DeviceView = Kokkos::View<T*, mem_space>;
template <class T>
using HostView = Kokkos::View<T*, host_space>;

namespace math {
// Kokkos 4 has Kokkos::sqrt etc.; 3.4 has them in Kokkos::Experimental.
#if GT_KOKKOS_AT_LEAST(3, 7)
#define GT_KMATH Kokkos
#else
#define GT_KMATH Kokkos::Experimental
#endif
template <class T> KOKKOS_INLINE_FUNCTION T sqrt(T x) { return GT_KMATH::sqrt(x); }
template <class T> KOKKOS_INLINE_FUNCTION T exp(T x) { return GT_KMATH::exp(x); }
template <class T> KOKKOS_INLINE_FUNCTION T log(T x) { return GT_KMATH::log(x); }
template <class T> KOKKOS_INLINE_FUNCTION T tanh(T x) { return GT_KMATH::tanh(x); }
template <class T> KOKKOS_INLINE_FUNCTION T cos(T x) { return GT_KMATH::cos(x); }
template <class T> KOKKOS_INLINE_FUNCTION T sin(T x) { return GT_KMATH::sin(x); }
template <class T> KOKKOS_INLINE_FUNCTION T fabs(T x) { return GT_KMATH::fabs(x); }
template <class T> KOKKOS_INLINE_FUNCTION T pow(T x, T y) { return GT_KMATH::pow(x, y); }
template <class T> KOKKOS_INLINE_FUNCTION T fmax(T x, T y) { return x > y ? x : y; }
template <class T> KOKKOS_INLINE_FUNCTION T fmin(T x, T y) { return x < y ? x : y; }
// x * y + z rounded once. Kokkos 3.4 (Debian's, host builds only) has no fma: the host's std::fma there.
#if GT_KOKKOS_AT_LEAST(3, 7)
template <class T> KOKKOS_INLINE_FUNCTION T fma(T x, T y, T z) { return Kokkos::fma(x, y, z); }
#else
template <class T> KOKKOS_INLINE_FUNCTION T fma(T x, T y, T z) { return std::fma(x, y, z); }
#endif
#undef GT_KMATH
}  // namespace math

// Reduced-precision storage types (gt::bf16_t, gt::fp16_t): kernels/half.hpp, the same on every Kokkos version.

// RangePolicy over the default execution space with an integer index type that fits every size we use.
inline Kokkos::RangePolicy<exec_space, Kokkos::IndexType<long>> range(long begin, long end) {
  return Kokkos::RangePolicy<exec_space, Kokkos::IndexType<long>>(begin, end);
}

}  // namespace gt
