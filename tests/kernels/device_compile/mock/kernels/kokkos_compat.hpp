#pragma once
// MOCK of kernels/kokkos_compat.hpp for tests/kernels/device_compile/check.sh (no Kokkos CUDA on this machine):
// parallel_for/parallel_reduce become __global__ launches, so every kernel body is compiled for the device.
#include <cmath>
#include <cuda_runtime.h>
#define KOKKOS_INLINE_FUNCTION __host__ __device__ inline
#define KOKKOS_LAMBDA [=] __host__ __device__
#define KOKKOS_VERSION 40400
#define GT_KOKKOS_AT_LEAST(major, minor) 1
namespace Kokkos {
struct MockRange { long b, e; };
template <class F> __global__ void mock_for(F f, long b, long e) {
  long i = b + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < e) f(i);
}
template <class F> __global__ void mock_reduce(F f, long b, long e, double* out) {
  long i = b + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < e) { double v = 0; f(i, v); out[i - b] = v; }
}
template <class F> void parallel_for(const char*, MockRange r, F f) {
  mock_for<<<(r.e - r.b + 127) / 128, 128>>>(f, r.b, r.e);
}
template <class F> void parallel_reduce(const char*, MockRange r, F f, double& out) {
  double* d = nullptr;
  mock_reduce<<<(r.e - r.b + 127) / 128, 128>>>(f, r.b, r.e, d);
  out = 0;
}
inline void fence() { cudaDeviceSynchronize(); }
}  // namespace Kokkos
namespace gt {
constexpr bool exec_on_host = false;
inline Kokkos::MockRange range(long b, long e) { return {b, e}; }
namespace math {
template <class T> __host__ __device__ T sqrt(T x) { return ::sqrt(x); }
template <class T> __host__ __device__ T exp(T x) { return ::exp(x); }
template <class T> __host__ __device__ T log(T x) { return ::log(x); }
template <class T> __host__ __device__ T tanh(T x) { return ::tanh(x); }
template <class T> __host__ __device__ T fabs(T x) { return ::fabs(x); }
}  // namespace math
}  // namespace gt
