#include "kernels/device_stream.hpp"

#include <Kokkos_Core.hpp>

#include "kernels/device_peak.hpp"
#include "kernels/kokkos_compat.hpp"
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace gt {

void* device_stream() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (!Kokkos::is_initialized()) return nullptr;
  return static_cast<void*>(Kokkos::DefaultExecutionSpace().cuda_stream());
#else
  return nullptr;
#endif
}

bool kernels_on_device() { return !exec_on_host; }

std::string device_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return "";
  return prop.name;
#else
  return "";
#endif
}

}  // namespace gt
