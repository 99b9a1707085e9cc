#include "kernels/device_stream.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>

#include "kernels/device_peak.hpp"
#include "kernels/kokkos_compat.hpp"
#include "src/core/test_hooks.hpp"
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

double device_free_bytes() {
  if (const double t = test_hooks::device_free_bytes(); t >= 0) return t;  // src/core/test_hooks.hpp
#if defined(KOKKOS_ENABLE_CUDA)
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) return double(free);
#endif
  return -1;
}

int device_count() {
#if defined(KOKKOS_ENABLE_CUDA)
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess) return n;
#endif
  return 0;
}

std::string device_pci_bus_id() {
#if defined(KOKKOS_ENABLE_CUDA)
  int dev = 0;
  char bus[64] = {0};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) return "";
  return bus;
#else
  return "";
#endif
}

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
