#pragma once
// bfloat16 as the vision code stores it: the top 16 bits of an fp32 (uint16_t). Rounding is to the nearest value,
// ties to even, inf kept and NaN kept quiet (what oneDNN's reorders and PyTorch do); widening is exact. The bits
// are kernels/half_bits.hpp's, the one definition the kernels (kernels/batchnorm.hpp) round with too.
// Header-only so that the loops over activations inline and vectorise where they are used.
#include <cstdint>

#include "kernels/half_bits.hpp"

namespace gt::vision {

using bf16_bits = std::uint16_t;

inline bf16_bits to_bf16(float x) { return half_detail::bf16_from_float(x); }

inline float from_bf16(bf16_bits b) { return half_detail::bf16_to_float(b); }

// x rounded to bf16 and kept in fp32 (the emulation of a bf16 operand)
inline float round_bf16(float x) { return from_bf16(to_bf16(x)); }

inline void round_to_bf16(long n, const float* __restrict x, bf16_bits* __restrict out) {
  for (long i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
}

inline void widen_bf16(long n, const bf16_bits* __restrict x, float* __restrict out) {
  for (long i = 0; i < n; ++i) out[i] = from_bf16(x[i]);
}

}  // namespace gt::vision
