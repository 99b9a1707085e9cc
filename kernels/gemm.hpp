#pragma once
// The one GEMM entry point. Row-major, like the rest of the code:
//   C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C(M,N)
// op(X) = X or X^T; lda/ldb/ldc are row strides (elements between consecutive rows as stored).
// Host execution spaces call BLAS (OpenBLAS); CUDA builds call cuBLAS on device pointers.
#include "kernels/kokkos_compat.hpp"

namespace gt {

enum class Op { N, T };

namespace detail {
void blas_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
               int ldb, float beta, float* C, int ldc);
void blas_gemm(Op ta, Op tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc);
#if defined(GRIDTRAIN_HAVE_CUBLAS)
void cublas_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc);
void cublas_gemm(Op ta, Op tb, int M, int N, int K, double alpha, const double* A, int lda,
                 const double* B, int ldb, double beta, double* C, int ldc);
#endif
}  // namespace detail

template <class T>
void gemm(Op ta, Op tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
          int ldc) {
  if (M == 0 || N == 0) return;
  if constexpr (exec_on_host) {
    detail::blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
#if defined(GRIDTRAIN_HAVE_CUBLAS)
    detail::cublas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    static_assert(exec_on_host, "device execution space without cuBLAS: configure with GRIDTRAIN_ENABLE_CUBLAS");
#endif
  }
}

// Number of BLAS threads per rank (one rank drives one core on CPU builds). No-op for cuBLAS.
void gemm_set_threads(int n);

// The kernel family the host BLAS chose at load time (OpenBLAS core name, e.g. "SkylakeX", "Haswell"), for
// run logs and benchmarks. OpenBLAS 0.3.21 picks the AVX2 "Haswell" kernels on AVX-512 AMD Zen 4; setting
// OPENBLAS_CORETYPE=SkylakeX in the environment before the program starts roughly doubles sgemm there.
const char* blas_core_name();

// Whether the cuBLAS backend was compiled in, and a probe that creates a handle: returns an empty string on
// success or the reason it failed (no device, no driver). Lets CPU-only CI check that cuBLAS links.
bool cublas_compiled();
const char* cublas_probe();

}  // namespace gt
