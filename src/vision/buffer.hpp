#pragma once
// Growing the vision code's activation and gradient buffers (std::vectors that grow once and are kept between
// steps), with transparent huge pages asked for on the large ones before they are first touched.
// Why: the first training step touches every buffer for the first time (ResNet-50 at batch 16: ~2.5 GB), and with
// 4 KiB pages each touch is a page fault; on the VMs measured here (paravirtualised, where a fault is expensive)
// those faults took most of a 15 s first step against 2.8 s for the next ones. With 2 MiB pages there are 512x
// fewer (docs/vision.md has the figures). madvise is a hint: where THP is off ("never") nothing changes, where it
// is "always" it was already so.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gt::vision {

// Asks for huge pages on the 2 MiB-aligned part of [p, p + bytes).
inline void advise_huge_pages(void* p, size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// v.resize(n); a growth to 8 MiB or more reserves first and advises huge pages on the new block, so that the
// elements' first touch (resize's zeroing) faults 2 MiB at a time.
template <class T>
void resize_buffer(std::vector<T>& v, size_t n) {
  constexpr size_t kBig = size_t(8) << 20;
  if (n > v.capacity() && n * sizeof(T) >= kBig) {
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
  }
  v.resize(n);
}

}  // namespace gt::vision
