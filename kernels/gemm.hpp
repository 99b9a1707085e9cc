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
// run logs and benchmarks.
const char* blas_core_name();

// Debian's OpenBLAS 0.3.21 does not know recent CPUs: on Intel Emerald Rapids it falls back to its SSE3
// "Prescott" kernels (sgemm 25-30 instead of ~110 GFLOP/s on one core) and on AMD Zen 4 it picks the AVX2
// "Haswell" ones (half the AVX-512 rate). The choice is made once, when the library loads, from
// OPENBLAS_CORETYPE. blas_kernels_wanted() names the kernels this CPU should get ("SkylakeX" with AVX-512,
// "Haswell" with AVX2+FMA) when the loaded ones are older, else nullptr. select_blas_kernels(argv), called
// first thing in main (before MPI_Init), sets OPENBLAS_CORETYPE and executes the program again in the same
// process (same PID, so mpiexec and srun see nothing); it does nothing when OPENBLAS_CORETYPE is already set or
// GRIDTRAIN_BLAS_AUTO=0, and GRIDTRAIN_BLAS_FALLBACK then holds the core the library had picked.
const char* blas_kernels_wanted();
void select_blas_kernels(char** argv);

// Whether the cuBLAS backend was compiled in, and a probe that creates a handle: returns an empty string on
// success or the reason it failed (no device, no driver). Lets CPU-only CI check that cuBLAS links.
bool cublas_compiled();
const char* cublas_probe();

}  // namespace gt
