#pragma once
// binary16 for the ResNet's train.precision = "fp16" on CPUs, where it is emulated: oneDNN 2.6 has no fp16
// convolution for CPUs without AVX512-FP16, so a convolution's operands are rounded to fp16 values kept in fp32
// and multiplied in fp32, and its outputs rounded again (docs/vision.md, "fp16"). What the emulation keeps of real
// fp16 is its range and precision: a gradient below 2^-24 flushes to zero and one above 65504 becomes inf, which is
// what the loss scaler exists for. The conversions are the kernels' (half_bits.hpp): one definition of fp16 rounding.
// Where the compiler targets F16C (x86 with -march=native on any CPU of the last decade), the loops use the
// hardware conversion instead, 8 values at a time: IEEE rounding to nearest even with overflow to inf and fp16
// subnormals kept, the same values (vision_kernels compares the two on every fp16 value, the ties between them,
// the range's edges, NaN and inf). A ResNet-20 step in fp16 took 2.2x the fp32 one with the scalar loops, 1.04x
// with these (docs/vision.md).
#include <cstdint>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/half_bits.hpp"

namespace gt::vision {

using fp16_bits = std::uint16_t;

inline float round_fp16(float x) { return half_detail::fp16_to_float(half_detail::fp16_from_float(x)); }

// out[i] = x[i] rounded to fp16; out may be x (in place)
inline void round_to_fp16(long n, const float* x, float* out) {
  long i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = round_fp16(x[i]);
}

inline void round_fp16_in_place(long n, float* x) { round_to_fp16(n, x, x); }

inline void widen_fp16(long n, const fp16_bits* __restrict x, float* __restrict out) {
  long i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) out[i] = half_detail::fp16_to_float(x[i]);
}

}  // namespace gt::vision
