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

#include "kernels/half_bits.hpp"
#include "kernels/kokkos_compat.hpp"

namespace gt {

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
