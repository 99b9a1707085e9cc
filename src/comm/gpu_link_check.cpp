// Link check for GPU builds: reports which GPU backends were compiled in and whether a device answered.
// Exit 0 when every requested backend compiled in; no GPU is not a failure.
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/gemm.hpp"
#include "src/comm/comm.hpp"

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
