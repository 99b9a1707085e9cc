#pragma once
// Non-finite values (NaN, +-inf) in a tensor. A checkpoint holding one would resume into a run that trains on
// NaN for ever (and pruning would then delete the good checkpoints it replaces), so save and load refuse it.
#include <cstdint>
#include <cstring>

namespace gt::io {

// Index of the first element whose exponent bits are all ones (NaN or inf), or -1. Scans blocks with a
// branch-free OR so that the common all-finite case vectorises (one pass at memory speed).
inline int64_t first_nonfinite(const float* data, int64_t n) {
  constexpr uint32_t kExp = 0x7f800000u;
  constexpr int64_t kBlock = 4096;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = b + kBlock < n ? b + kBlock : n;
    uint32_t any = 0;
    for (int64_t i = b; i < e; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, 4);
      any |= static_cast<uint32_t>((bits & kExp) == kExp);
    }
    if (!any) continue;
    for (int64_t i = b; i < e; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + i, 4);
      if ((bits & kExp) == kExp) return i;
    }
  }
  return -1;
}

}  // namespace gt::io
