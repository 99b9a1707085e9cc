#pragma once
// binary16 for the ResNet's train.precision = "fp16" on CPUs, where it is emulated: oneDNN 2.6 has no fp16
// convolution for CPUs without AVX512-FP16, so a convolution's operands are rounded to fp16 values kept in fp32
// and multiplied in fp32, and its outputs rounded again (docs/vision.md, "fp16"). What the emulation keeps of real
// fp16 is its range and precision: a gradient below 2^-24 flushes to zero and one above 65504 becomes inf, which is
// what the loss scaler exists for. The conversions are the kernels' (half_bits.hpp): one definition of fp16 rounding.
#include <cstdint>

#include "kernels/half_bits.hpp"

namespace gt::vision {

using fp16_bits = std::uint16_t;

inline float round_fp16(float x) { return half_detail::fp16_to_float(half_detail::fp16_from_float(x)); }

inline void round_to_fp16(long n, const float* __restrict x, float* __restrict out) {
  for (long i = 0; i < n; ++i) out[i] = round_fp16(x[i]);
}

inline void round_fp16_in_place(long n, float* x) {
  for (long i = 0; i < n; ++i) x[i] = round_fp16(x[i]);
}

inline void widen_fp16(long n, const fp16_bits* __restrict x, float* __restrict out) {
  for (long i = 0; i < n; ++i) out[i] = half_detail::fp16_to_float(x[i]);
}

}  // namespace gt::vision
