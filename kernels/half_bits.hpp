#pragma once
// The bit conversions behind kernels/half.hpp's storage types (float <-> bfloat16 / binary16, round to nearest
// even; the rules are stated there), without a Kokkos include: host code that stays outside Kokkos (src/vision's
// fp16 emulation) rounds with the same functions the kernels use, one definition of each rounding. Device code
// reaches them through half.hpp; under nvcc they are host and device functions, as KOKKOS_INLINE_FUNCTION makes them.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define GT_HALF_FN __host__ __device__ inline
#else
#define GT_HALF_FN inline
#endif

namespace gt {

namespace half_detail {

GT_HALF_FN uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
GT_HALF_FN float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// float -> bfloat16 bits: drop the low 16 bits with round to nearest even. Adding 0x7FFF plus the lowest kept
// bit carries into the kept part exactly when the dropped part is above half, or half with an odd kept part;
// a carry out of the mantissa bumps the exponent (up to inf), which is what rounding must do.
GT_HALF_FN uint16_t bf16_from_float(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN, made quiet
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
GT_HALF_FN float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// float -> binary16 bits, round to nearest even.
GT_HALF_FN uint16_t fp16_from_float(float f) {
  uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u)  // NaN: quiet, sign and the top payload bits kept
    return static_cast<uint16_t>(sign | 0x7E00u | ((x >> 13) & 0x3FFu));
  if (x >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 (and inf): inf
  if (x >= 0x38800000u) {  // normal in fp16 (>= 2^-14): rebias the exponent by 127-15, round 13 bits off
    x += 0xC8000FFFu + ((x >> 13) & 1u);  // -112 << 23 (mod 2^32), plus the rounding increment
    return static_cast<uint16_t>(sign | (x >> 13));
  }
  // Subnormal in fp16: value = m * 2^(e-150) with the 24-bit mantissa m, in units of 2^-24: m >> (126 - e).
  const uint32_t e = x >> 23;
  if (e < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself is a tie, also to zero)
  const uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t r = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;  // may reach 0x400: the smallest normal, correctly
  return static_cast<uint16_t>(sign | r);
}

GT_HALF_FN float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return bits_float(sign | 0x7F800000u | (m << 13));  // inf, or NaN with its payload
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return bits_float(float_bits(v) | sign);
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace half_detail

}  // namespace gt
