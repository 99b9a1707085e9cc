#pragma once
// Vectorisable float exp and tanh for the hot loops (softmax, GELU, cross-entropy), and the overloads
// gt::kexp / gt::ktanh that kernels call: the fast versions for float, Kokkos' exp/tanh for double (the
// test and finite-difference precision).
//
// fast_expf: Cody-Waite range reduction x = n*ln2 + r, |r| <= ln2/2, then a degree-7 polynomial for e^r
// and a scale by 2^n built from exponent bits. Branch-free (selects only), so GCC vectorises a loop that
// calls it (-O3 -march=native, no -ffast-math needed). Measured against std::exp in
// tests/kernels/test_fastmath.cpp: about 1 ulp, correct overflow to +inf above ln(FLT_MAX), gradual
// underflow through the subnormals down to 0, NaN propagated.
// fast_tanhf: tanh(|x|) = 1 - 2/(e^{2|x|}+1) for |x| >= 1 (no cancellation there), and the Lambert
// continued-fraction convergent x*P(x^2)/Q(x^2) of degree (7,6) below 1 (truncation error < 2e-12 there).
#include <cstdint>
#include <cstring>

#include "kernels/kokkos_compat.hpp"

namespace gt {

namespace detail {
KOKKOS_INLINE_FUNCTION float float_from_bits(int32_t i) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(i);
#else
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
#endif
}
}  // namespace detail

KOKKOS_INLINE_FUNCTION float fast_expf(float x) {
  // Outside [-104, 89] exp(x) is 0 or +inf in float; clamping keeps n within the exponent range.
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  // Adding 1.5*2^23 rounds to the nearest integer (round-to-nearest mode); subtracting it gives n exactly.
  const float shifter = 12582912.0f;
  const float n = (xc * 1.44269504088896341f + shifter) - shifter;
  // ln2 split: hi has 9 significant bits so n*hi is exact for |n| <= 150.
  const float ln2_hi = 0.693359375f;
  const float ln2_lo = -2.12194440e-4f;
  float r = xc - n * ln2_hi;
  r = r - n * ln2_lo;
  // e^r, Taylor to degree 7 (truncation error r^8/8! < 6e-9 relative for |r| <= 0.347).
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n as two factors 2^n1 * 2^n2 (each a normal float for n in [-150, 128]): the result can then be a
  // subnormal (rounded once, in the last multiply) or overflow to +inf, as exp itself does.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const float s1 = detail::float_from_bits((n1 + 127) << 23);
  const float s2 = detail::float_from_bits((n2 + 127) << 23);
  const float y = (p * s1) * s2;
  return x != x ? x : y;  // NaN in, NaN out (the clamp would have lost it)
}

KOKKOS_INLINE_FUNCTION float fast_tanhf(float x) {
  const float a = x < 0.0f ? -x : x;
  // |x| >= 1: 2/(e+1) <= 0.24, so 1 - 2/(e+1) loses nothing; e = +inf for large |x| gives exactly 1.
  const float e = fast_expf(2.0f * a);
  const float big = 1.0f - 2.0f / (e + 1.0f);
  // |x| < 1: Lambert's continued fraction for tanh truncated after 2k-1 = 13 (Pade (7,6)).
  // Written as x - x * (1 - P/Q) with 1 - P/Q = x^2 (45045 + 2772 x^2 + 27 x^4) / Q, so that the rounding
  // errors sit in the correction term, which is below x/3.
  const float x2 = x * x;
  const float den = 135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f));
  const float corr = x2 * (45045.0f + x2 * (2772.0f + x2 * 27.0f)) / den;
  const float small = x - x * corr;
  const float signed_big = x < 0.0f ? -big : big;
  return a < 1.0f ? small : signed_big;
}

KOKKOS_INLINE_FUNCTION float kexp(float x) { return fast_expf(x); }
KOKKOS_INLINE_FUNCTION double kexp(double x) { return math::exp(x); }
KOKKOS_INLINE_FUNCTION float ktanh(float x) { return fast_tanhf(x); }
KOKKOS_INLINE_FUNCTION double ktanh(double x) { return math::tanh(x); }

}  // namespace gt
