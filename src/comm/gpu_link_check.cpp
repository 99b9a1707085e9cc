// Link check for GPU builds: reports which GPU backends were compiled in and whether a device answered.
// Exit 0 when every requested backend compiled in; no GPU is not a failure.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>

#include "kernels/gemm.hpp"
#include "src/comm/comm.hpp"

#if defined(GRIDTRAIN_HAVE_CUBLAS)
// The half-input GEMM (cublasGemmEx, bf16 in, fp32 accumulate and out): always linked, run when a device
// answers. [1 2; 3 4] times the identity must give it back exactly. Returns "" or what went wrong.
static const char* half_gemm_smoke() {
  const gt::bf16_t host_a[4] = {gt::bf16_t(1.f), gt::bf16_t(2.f), gt::bf16_t(3.f), gt::bf16_t(4.f)};
  const gt::bf16_t host_i[4] = {gt::bf16_t(1.f), gt::bf16_t(0.f), gt::bf16_t(0.f), gt::bf16_t(1.f)};
  gt::bf16_t *a = nullptr, *b = nullptr;
  float* c = nullptr;
  if (cudaMalloc(&a, sizeof host_a) != cudaSuccess || cudaMalloc(&b, sizeof host_i) != cudaSuccess ||
      cudaMalloc(&c, 4 * sizeof(float)) != cudaSuccess)
    return "cudaMalloc failed";
  cudaMemcpy(a, host_a, sizeof host_a, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host_i, sizeof host_i, cudaMemcpyHostToDevice);
  const char* why = "";
  try {
    gt::detail::cublas_gemm_half(gt::Op::N, gt::Op::N, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2);
    float out[4] = {};
    cudaMemcpy(out, c, sizeof out, cudaMemcpyDeviceToHost);
    if (out[0] != 1.f || out[1] != 2.f || out[2] != 3.f || out[3] != 4.f) why = "wrong result";
  } catch (const std::exception&) {
    why = "cublasGemmEx failed";
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return why;
}
#endif

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  std::printf("cuBLAS compiled: %s\n", gt::cublas_compiled() ? "yes" : "no");
  std::printf("NCCL compiled:   %s\n", gt::nccl_compiled() ? "yes" : "no");
#if defined(GRIDTRAIN_HAVE_NCCL)
  std::printf("NCCL version:    %d\n", gt::nccl_version());  // forces libnccl to be linked and loaded
#endif
  if (e == cudaSuccess) std::printf("CUDA devices: %d\n", devices);
  else std::printf("CUDA devices: none (%s)\n", cudaGetErrorString(e));
  if (gt::cublas_compiled()) {
    const char* why = gt::cublas_probe();
    std::printf("cuBLAS probe: %s\n", why[0] ? why : "ok");
#if defined(GRIDTRAIN_HAVE_CUBLAS)
    if (!why[0]) {
      const char* bad = half_gemm_smoke();
      std::printf("cuBLAS bf16 GEMM: %s\n", bad[0] ? bad : "ok");
      if (bad[0]) return 1;
    }
#endif
  }
  bool ok = true;
#if defined(GRIDTRAIN_WANT_CUBLAS)
  ok = ok && gt::cublas_compiled();
#endif
#if defined(GRIDTRAIN_WANT_NCCL)
  ok = ok && gt::nccl_compiled();
#endif
  std::printf("%s\n", ok ? "link check: ok" : "link check: a requested backend is missing");
  return ok ? 0 : 1;
}
