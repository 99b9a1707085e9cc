#pragma once
// 16-bit floating-point storage types: gt::bf16_t (bfloat16: 1 sign, 8 exponent, 7 mantissa bits) and
// gt::fp16_t (IEEE binary16: 1, 5, 10). They store; they do not compute. Arithmetic happens in float: a half
// value converts implicitly to float (exact), a float converts to a half only when asked (explicitly), with
// round to nearest even, NaN kept NaN (quiet, sign kept), +-inf kept, fp16 subnormals exact and overflow to
// inf as IEEE rounding says (fp16: |x| >= 65520 -> inf; bf16: above the largest finite after rounding -> inf).
//
// Why our own types and not Kokkos::Experimental::bhalf_t / half_t: Debian's Kokkos 3.4 has no bhalf_t, and
// the same struct on every build means the same bits in checkpoints, in MPI messages and from every
// conversion, host or device, whatever Kokkos version. The layout (one uint16_t, same bit order) is that of
// CUDA's __nv_bfloat16 / __half and of oneDNN's bf16 / f16, so pointers go to cuBLAS (CUDA_R_16BF/16F) and
// oneDNN (dnnl::memory::data_type::bf16/f16) as they are. The conversions are integer code, valid in device
// functions too; kernels convert on load and store, where a few integer operations cost less than memory.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kokkos_compat.hpp"

namespace gt {

namespace half_detail {

KOKKOS_INLINE_FUNCTION uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
KOKKOS_INLINE_FUNCTION float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// float -> bfloat16 bits: drop the low 16 bits with round to nearest even. Adding 0x7FFF plus the lowest kept
// bit carries into the kept part exactly when the dropped part is above half, or half with an odd kept part;
// a carry out of the mantissa bumps the exponent (up to inf), which is what rounding must do.
KOKKOS_INLINE_FUNCTION uint16_t bf16_from_float(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN, made quiet
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
KOKKOS_INLINE_FUNCTION float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// float -> binary16 bits, round to nearest even.
KOKKOS_INLINE_FUNCTION uint16_t fp16_from_float(float f) {
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

KOKKOS_INLINE_FUNCTION float fp16_to_float(uint16_t h) {
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

// The two formats' conversions, for the storage template below.
namespace half_detail {
struct Bf16Format {
  KOKKOS_INLINE_FUNCTION static uint16_t from_float(float f) { return bf16_from_float(f); }
  KOKKOS_INLINE_FUNCTION static float to_float(uint16_t h) { return bf16_to_float(h); }
};
struct Fp16Format {
  KOKKOS_INLINE_FUNCTION static uint16_t from_float(float f) { return fp16_from_float(f); }
  KOKKOS_INLINE_FUNCTION static float to_float(uint16_t h) { return fp16_to_float(h); }
};
}  // namespace half_detail

template <class Format>
struct Half16 {
  uint16_t bits;
  Half16() = default;  // trivial: Views and vectors of halves cost no initialisation
  KOKKOS_INLINE_FUNCTION explicit Half16(float f) : bits(Format::from_float(f)) {}
  KOKKOS_INLINE_FUNCTION operator float() const { return Format::to_float(bits); }
  KOKKOS_INLINE_FUNCTION static Half16 from_bits(uint16_t b) {
    Half16 h;
    h.bits = b;
    return h;
  }
};
using bf16_t = Half16<half_detail::Bf16Format>;
using fp16_t = Half16<half_detail::Fp16Format>;

static_assert(sizeof(bf16_t) == 2 && std::is_trivially_copyable<bf16_t>::value, "bf16_t is 16-bit storage");
static_assert(sizeof(fp16_t) == 2 && std::is_trivially_copyable<fp16_t>::value, "fp16_t is 16-bit storage");

template <class T>
struct is_half : std::false_type {};
template <class F>
struct is_half<Half16<F>> : std::true_type {};
template <class T>
constexpr bool is_half_v = is_half<T>::value;

// The type a kernel computes and accumulates in for storage type T: float for the 16-bit types (they only
// store), T itself for float and double. With T = float every kernel is the fp32 code it was, bit for bit.
template <class T>
struct acc_type {
  using type = T;
};
template <class F>
struct acc_type<Half16<F>> {
  using type = float;
};
template <class T>
using acc_t = typename acc_type<T>::type;

// Element-wise conversion for generic code: to_float(x) of float/half, from_float<T>(f) rounds once.
KOKKOS_INLINE_FUNCTION float to_float(float x) { return x; }
template <class F>
KOKKOS_INLINE_FUNCTION float to_float(Half16<F> x) {
  return static_cast<float>(x);
}
template <class T>
KOKKOS_INLINE_FUNCTION T from_float(float f) {
  return T(f);
}

// Short dtype names for logs and error messages.
template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same<T, bf16_t>::value) return "bf16";
  else if constexpr (std::is_same<T, fp16_t>::value) return "fp16";
  else if constexpr (std::is_same<T, float>::value) return "fp32";
  else if constexpr (std::is_same<T, double>::value) return "fp64";
  else return "?";
}

}  // namespace gt
