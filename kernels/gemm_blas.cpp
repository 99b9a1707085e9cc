// BLAS (OpenBLAS) backend of the GEMM dispatch.
#include <cblas.h>

#include "kernels/gemm.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace gt {
namespace detail {

static CBLAS_TRANSPOSE to_cblas(Op op) { return op == Op::N ? CblasNoTrans : CblasTrans; }

void blas_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
               int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(Op ta, Op tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace detail

void gemm_set_threads(int n) { openblas_set_num_threads(n); }

const char* blas_core_name() { return openblas_get_corename(); }

#if !defined(GRIDTRAIN_HAVE_CUBLAS)
bool cublas_compiled() { return false; }
const char* cublas_probe() { return "cuBLAS backend not compiled in"; }
#endif

}  // namespace gt
