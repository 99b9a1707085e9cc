// cuBLAS backend of the GEMM dispatch. cuBLAS is column-major: a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so we swap the operands and the dimensions instead of transposing.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/device_stream.hpp"
#include "kernels/gemm.hpp"

namespace gt {
namespace {

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t hh = nullptr;
    cublasStatus_t st = cublasCreate(&hh);
    if (st != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasCreate failed with status " + std::to_string(static_cast<int>(st)));
    // GEMMs run on the stream of Kokkos' kernels (kernels/device_stream.hpp): a GEMM starts after the kernel
    // that wrote its operands and the next kernel after it, with no fence in between.
    st = cublasSetStream(hh, static_cast<cudaStream_t>(device_stream()));
    if (st != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("cublasSetStream failed with status " + std::to_string(static_cast<int>(st)));
    return hh;
  }();
  return h;
}

cublasOperation_t to_cublas(Op op) { return op == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }

void check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed with cuBLAS status " + std::to_string(static_cast<int>(st)));
}

}  // namespace

namespace detail {

void cublas_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
  check(cublasSgemm(handle(), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasSgemm");
}

void cublas_gemm(Op ta, Op tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
                 int ldb, double beta, double* C, int ldc) {
  check(cublasDgemm(handle(), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasDgemm");
}

// Half inputs through cublasGemmEx with fp32 compute (tensor cores on Volta and newer). bf16_t and fp16_t have
// the bit layout of __nv_bfloat16 and __half, so the pointers go as they are. alpha and beta are float
// because the compute type is CUBLAS_COMPUTE_32F.
template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, bf16_t>) return CUDA_R_16BF;
  else if constexpr (std::is_same_v<T, fp16_t>) return CUDA_R_16F;
  else if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  else return CUDA_R_32F;
}

template <class H, class CT>
void gemm_ex(Op ta, Op tb, int M, int N, int K, float alpha, const H* A, int lda, const H* B, int ldb, float beta,
             CT* C, int ldc) {
  check(cublasGemmEx(handle(), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B, cuda_type<H>(), ldb, A,
                     cuda_type<H>(), lda, &beta, C, cuda_type<CT>(), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

template <class T>
constexpr cublasComputeType_t compute_type() {
  if constexpr (std::is_same_v<T, double>) return CUBLAS_COMPUTE_64F;
  else return CUBLAS_COMPUTE_32F;  // float: plain FP32 (no TF32); bf16/fp16 inputs: fp32 accumulation
}

template <class T, class S>
void cublas_gemm_strided_batched(Op ta, Op tb, int M, int N, int K, S alpha, const T* A, int lda, long sA, const T* B,
                                 int ldb, long sB, S beta, T* C, int ldc, long sC, int batch) {
  static_assert(std::is_same_v<S, acc_t<T>>, "alpha and beta are in the compute type");
  // Row-major C_i = op(A_i) op(B_i) is column-major C_i^T = op(B_i)^T op(A_i)^T, as in gemm_ex.
  check(cublasGemmStridedBatchedEx(handle(), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B, cuda_type<T>(), ldb, sB,
                                   A, cuda_type<T>(), lda, sA, &beta, C, cuda_type<T>(), ldc, sC, batch,
                                   compute_type<T>(), CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

template void cublas_gemm_strided_batched<float, float>(Op, Op, int, int, int, float, const float*, int, long,
                                                        const float*, int, long, float, float*, int, long, int);
template void cublas_gemm_strided_batched<double, double>(Op, Op, int, int, int, double, const double*, int, long,
                                                          const double*, int, long, double, double*, int, long, int);
template void cublas_gemm_strided_batched<bf16_t, float>(Op, Op, int, int, int, float, const bf16_t*, int, long,
                                                         const bf16_t*, int, long, float, bf16_t*, int, long, int);
template void cublas_gemm_strided_batched<fp16_t, float>(Op, Op, int, int, int, float, const fp16_t*, int, long,
                                                         const fp16_t*, int, long, float, fp16_t*, int, long, int);

#define GT_DEFINE_CUBLAS(H, CT) \
  GT_HALF_GEMM_SIGNATURE(cublas_gemm_half, H, CT) { gemm_ex(GT_HALF_GEMM_ARGS); }
GT_HALF_GEMM_TYPES(GT_DEFINE_CUBLAS)
#undef GT_DEFINE_CUBLAS

}  // namespace detail

bool cublas_compiled() { return true; }

const char* cublas_probe() {
  static std::string reason;
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) {
    reason = std::string("no CUDA device: ") + cudaGetErrorString(err);
    return reason.c_str();
  }
  if (devices == 0) return "no CUDA device";
  try {
    (void)handle();
  } catch (const std::exception& e) {
    reason = e.what();
    return reason.c_str();
  }
  return "";
}

}  // namespace gt
