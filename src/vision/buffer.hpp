#pragma once
// Where the vision network keeps its activations, gradients and the per-channel values its kernels read:
// Buffer<T>. On host builds a std::vector<T>. On device builds (CUDA: the compile
// definition GRIDTRAIN_VISION_MANAGED, src/vision/CMakeLists.txt) a vector in CUDA managed memory, which both the
// device's kernels and the host's per-channel arithmetic (BatchNorm's statistics, the losses) address: the host
// touches a buffer's elements only for such per-channel values, and when a buffer first grows. Managed memory
// keeps the layers' code one source for both builds; buffers that stay on the device (every activation after
// its first step) cost what device memory costs.
#include <cstddef>
#include <vector>

namespace gt::vision {

namespace detail {
void* managed_allocate(std::size_t bytes);  // buffer.cpp; gt::Error naming the size when there is no room
void managed_free(void* p) noexcept;
}  // namespace detail

#if defined(GRIDTRAIN_VISION_MANAGED)
template <class T>
struct ManagedAllocator {
  using value_type = T;
  ManagedAllocator() = default;
  template <class U>
  ManagedAllocator(const ManagedAllocator<U>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(std::size_t n) { return static_cast<T*>(detail::managed_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { detail::managed_free(p); }
  template <class U>
  bool operator==(const ManagedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const ManagedAllocator<U>&) const { return false; }
};
template <class T>
using Buffer = std::vector<T, ManagedAllocator<T>>;
#else
template <class T>
using Buffer = std::vector<T>;
#endif

namespace detail {
// Room for n values in a buffer, without clearing it: the network's scratch buffers are shared by tensors of
// different sizes (a block's units, the blocks of a stage and the next) and are overwritten before they are read,
// and vector::resize() zero-fills whatever it grows by, on every step (memset was 0.9% of a steady ResNet-50 step
// in perf, 0.1% with this). Grows only; callers use n, never size().
template <class V>
auto* room_for(V& v, long n) {
  if (v.size() < size_t(n)) v.resize(size_t(n));
  return v.data();
}
}  // namespace detail

// Waits for every kernel launched so far: before the host reads what a kernel wrote (on the device split kernels
// run asynchronously; on the host split this returns at once).
void device_fence();
// n values from memory the kernels address (device memory on device builds, e.g. the trainer's parameters) into
// host memory; returns when they are there.
void copy_to_host(float* dst, const float* src, long n);

}  // namespace gt::vision
