#pragma once
// Internal to the GEMM dispatch (kernels/gemm_*.cpp): the entry points of each host backend. Users include
// kernels/gemm.hpp.
#include <string>

#include "kernels/gemm.hpp"

namespace gt {
namespace detail {

void blas_set_threads(int n);

// Widen to fp32, fp32_gemm, round C once (kernels/gemm_convert.cpp).
#define GT_DECLARE_CONVERT(H, CT) GT_HALF_GEMM_SIGNATURE(convert_gemm_half, H, CT);
GT_HALF_GEMM_TYPES(GT_DECLARE_CONVERT)
#undef GT_DECLARE_CONVERT
#if defined(GRIDTRAIN_HAVE_ONEDNN)
// oneDNN matmul primitives (kernels/gemm_onednn.cpp).
void onednn_gemm(Op ta, Op tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 float beta, float* C, int ldc);
#define GT_DECLARE_ONEDNN(H, CT) GT_HALF_GEMM_SIGNATURE(onednn_gemm, H, CT);
GT_HALF_GEMM_TYPES(GT_DECLARE_ONEDNN)
#undef GT_DECLARE_ONEDNN

// What oneDNN runs for a dtype on this CPU, probed once with a small matmul: the implementation name
// (e.g. "brg:avx512_core_bf16"), or "" when oneDNN has no kernel for it other than its slow reference one.
struct OnednnInfo {
  const char* version;  // "2.6.3"
  const char* isa;      // the CPU ISA oneDNN dispatches to, e.g. "avx512_core_bf16"
  bool isa_has_bf16;    // the ISA computes bf16 dot products natively (AVX512_BF16 or AMX)
  std::string impl_f32, impl_bf16, impl_f16;
};
const OnednnInfo& onednn_info();
void onednn_set_threads(int n);
#endif

}  // namespace detail
}  // namespace gt
