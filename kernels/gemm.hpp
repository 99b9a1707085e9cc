#pragma once
// The one GEMM entry point. Row-major, like the rest of the code:
//   C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C(M,N)
// op(X) = X or X^T; lda/ldb/ldc are row strides (elements between consecutive rows as stored).
// Host execution spaces call BLAS (OpenBLAS); CUDA builds call cuBLAS on device pointers.
// Mixed precision: A and B in a 16-bit type H (bf16_t or fp16_t), alpha/beta in float, products accumulated in
// fp32, C in float or in H (then rounded once, at the end, to nearest even).
#include <string>
#include <type_traits>

#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt {

enum class Op { N, T };

// The host GEMM library (`kernels.gemm`). auto: oneDNN when compiled in, else OpenBLAS. fp64 always runs on
// OpenBLAS (oneDNN has no f64 matmul). One choice per process, made once at start-up (before the first GEMM;
// the default is auto): a process-wide setting like the BLAS thread count, not state a kernel carries.
enum class GemmBackend { Auto, OneDNN, OpenBLAS };
// Throws std::runtime_error naming the problem when onednn is asked for but not compiled in.
void gemm_select(GemmBackend b);
GemmBackend gemm_backend();           // the resolved backend (never Auto)
const char* gemm_backend_name(GemmBackend b);
bool onednn_compiled();
// One line for the run's start line: the library, the ISA it dispatches to and, per dtype, which path runs,
// e.g. "oneDNN 2.6.3 avx512_core_bf16: fp32 brg:avx512_core, bf16 native (brg:avx512_core_bf16), fp16 via fp32
// conversion" or "OpenBLAS Haswell: fp32 sgemm, bf16 and fp16 via fp32 conversion". No silent slow path.
std::string gemm_describe();

namespace detail {
// fp32 GEMM of the selected host backend.
void fp32_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc);
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
// The (input, output) type pairs of the half GEMMs and their common signature: each backend declares and
// defines one function per pair with GT_HALF_GEMM_TYPES(X).
#define GT_HALF_GEMM_TYPES(X) X(bf16_t, float) X(bf16_t, bf16_t) X(fp16_t, float) X(fp16_t, fp16_t)
#define GT_HALF_GEMM_SIGNATURE(fn, H, CT)                                                                     \
  void fn(Op ta, Op tb, int M, int N, int K, float alpha, const H* A, int lda, const H* B, int ldb, float beta, \
          CT* C, int ldc)
#define GT_HALF_GEMM_ARGS ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc
// Host half-input GEMMs (fp32 accumulation) and their cuBLAS counterparts.
#define GT_DECLARE_HOST_HALF(H, CT) GT_HALF_GEMM_SIGNATURE(host_gemm_half, H, CT);
GT_HALF_GEMM_TYPES(GT_DECLARE_HOST_HALF)
#undef GT_DECLARE_HOST_HALF
#if defined(GRIDTRAIN_HAVE_CUBLAS)
#define GT_DECLARE_CUBLAS_HALF(H, CT) GT_HALF_GEMM_SIGNATURE(cublas_gemm_half, H, CT);
GT_HALF_GEMM_TYPES(GT_DECLARE_CUBLAS_HALF)
#undef GT_DECLARE_CUBLAS_HALF
// Strided-batched GEMM (cublasGemmStridedBatchedEx), C in the input type: float and double compute in their
// type, bf16_t and fp16_t in fp32 (S = acc_t<T> is the type of alpha and beta). Defined for those four types.
template <class T, class S>
void cublas_gemm_strided_batched(Op ta, Op tb, int M, int N, int K, S alpha, const T* A, int lda, long sA, const T* B,
                                 int ldb, long sB, S beta, T* C, int ldc, long sC, int batch);
#endif
}  // namespace detail

template <class T>
void gemm(Op ta, Op tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C,
          int ldc) {
  if (M == 0 || N == 0) return;
  if constexpr (exec_on_host) {
    if constexpr (std::is_same_v<T, float>) detail::fp32_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else detail::blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
#if defined(GRIDTRAIN_HAVE_CUBLAS)
    detail::cublas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    static_assert(exec_on_host, "device execution space without cuBLAS: configure with GRIDTRAIN_ENABLE_CUBLAS");
#endif
  }
}

// Half inputs (H = bf16_t or fp16_t), fp32 accumulation, C in float or H. Same conventions as above; with
// beta == 0 C is not read (it may hold NaN).
template <class H, class CT, std::enable_if_t<is_half_v<H> && (std::is_same_v<CT, float> || std::is_same_v<CT, H>), int> = 0>
void gemm(Op ta, Op tb, int M, int N, int K, float alpha, const H* A, int lda, const H* B, int ldb, float beta,
          CT* C, int ldc) {
  if (M == 0 || N == 0) return;
  if constexpr (exec_on_host) {
    detail::host_gemm_half(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
#if defined(GRIDTRAIN_HAVE_CUBLAS)
    detail::cublas_gemm_half(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    static_assert(exec_on_host, "device execution space without cuBLAS: configure with GRIDTRAIN_ENABLE_CUBLAS");
#endif
  }
}

// `batch` independent GEMMs of one shape, C_i = alpha op(A_i) op(B_i) + beta C_i, where X_i = X + i * sX (sX in
// elements): the heads of attention in one call. T: float, double, bf16_t or fp16_t (inputs and C in T, fp32
// accumulation for the 16-bit types; alpha and beta in acc_t<T>). CUDA: one cublasGemmStridedBatchedEx launch.
// Host: a loop of gt::gemm (the per-call cost there is a function call, not a launch).
template <class T>
void gemm_strided_batched(Op ta, Op tb, int M, int N, int K, acc_t<T> alpha, const T* A, int lda, long sA, const T* B,
                          int ldb, long sB, acc_t<T> beta, T* C, int ldc, long sC, int batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if constexpr (exec_on_host) {
    for (int i = 0; i < batch; ++i)
      gemm(ta, tb, M, N, K, alpha, A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC, ldc);
  } else {
#if defined(GRIDTRAIN_HAVE_CUBLAS)
    detail::cublas_gemm_strided_batched(ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
#else
    static_assert(exec_on_host, "device execution space without cuBLAS: configure with GRIDTRAIN_ENABLE_CUBLAS");
#endif
  }
}

// Number of GEMM threads per rank (one rank drives one core on CPU builds): OpenBLAS's and oneDNN's (OpenMP
// runtime in Debian's build). No-op for cuBLAS.
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
