// Half-input GEMM through fp32: widen A and B to float (exact), one sgemm of the selected fp32 backend, and for
// a half C round the fp32 result once. The path for BLAS libraries without 16-bit GEMMs (OpenBLAS 0.3.21) and
// for CPUs on which oneDNN has no native kernel for the type; gemm_describe() says when it runs.
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/gemm_backend.hpp"

namespace gt {
namespace detail {
namespace {

// Rows x cols of a row-major matrix with row stride ld, widened into a packed float buffer (stride cols).
template <class H>
void widen(const H* src, int rows, int cols, int ld, std::vector<float>& dst) {
  dst.resize(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    const H* s = src + static_cast<long>(r) * ld;
    float* d = dst.data() + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) d[c] = static_cast<float>(s[c]);
  }
}

// Scratch that grows to the largest GEMM seen and is reused: the step calls the same shapes every time.
// Per thread, so that concurrent callers (a prefetch thread, tests) never share it.
struct Scratch {
  std::vector<float> a, b, c;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

template <class H, class CT>
void convert_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const H* A, int lda, const H* B, int ldb,
                  float beta, CT* C, int ldc) {
  Scratch& s = scratch();
  // op(A) is M x K: stored M x K (N) or K x M (T); likewise op(B) K x N.
  const int ar = ta == Op::N ? M : K, ac = ta == Op::N ? K : M;
  const int br = tb == Op::N ? K : N, bc = tb == Op::N ? N : K;
  widen(A, ar, ac, lda, s.a);
  widen(B, br, bc, ldb, s.b);
  if constexpr (std::is_same_v<CT, float>) {
    fp32_gemm(ta, tb, M, N, K, alpha, s.a.data(), ac, s.b.data(), bc, beta, C, ldc);
  } else {
    s.c.resize(static_cast<size_t>(M) * N);
    if (beta != 0.f) {
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) s.c[static_cast<size_t>(i) * N + j] = static_cast<float>(C[static_cast<long>(i) * ldc + j]);
    }
    fp32_gemm(ta, tb, M, N, K, alpha, s.a.data(), ac, s.b.data(), bc, beta, s.c.data(), N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C[static_cast<long>(i) * ldc + j] = CT(s.c[static_cast<size_t>(i) * N + j]);
  }
}

}  // namespace

#define GT_DEFINE_CONVERT(H, CT) \
  GT_HALF_GEMM_SIGNATURE(convert_gemm_half, H, CT) { convert_gemm(GT_HALF_GEMM_ARGS); }
GT_HALF_GEMM_TYPES(GT_DEFINE_CONVERT)
#undef GT_DEFINE_CONVERT

}  // namespace detail
}  // namespace gt
