// Buffer<T>'s memory and the host's synchronisation with the kernels (buffer.hpp).
#include "src/vision/buffer.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/core/error.hpp"

namespace gt::vision {

namespace detail {

void* managed_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if defined(KOKKOS_ENABLE_CUDA)
  void* p = Kokkos::kokkos_malloc<Kokkos::CudaUVMSpace>("gt::vision::Buffer", bytes);
#else
  void* p = std::malloc(bytes);
#endif
  if (!p) throw Error("vision: no room for a buffer of " + std::to_string(bytes) + " bytes");
  return p;
}

void managed_free(void* p) noexcept {
  if (!p) return;
#if defined(KOKKOS_ENABLE_CUDA)
  Kokkos::kokkos_free<Kokkos::CudaUVMSpace>(p);
#else
  std::free(p);
#endif
}

}  // namespace detail

void device_fence() { Kokkos::fence(); }

void copy_to_host(float* dst, const float* src, long n) {
  using Mem = Kokkos::DefaultExecutionSpace::memory_space;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
  } else {
    Kokkos::View<const float*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> from(src, size_t(n));
    Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> to(dst, size_t(n));
    Kokkos::deep_copy(to, from);  // fences
  }
}

}  // namespace gt::vision
