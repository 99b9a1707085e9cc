// gt::bf16_t and gt::fp16_t against references written from the formats' definitions:
// - to float: every one of the 65536 bit patterns against the value computed in double from the fields
//   (sign, exponent, mantissa; subnormals and inf/NaN spelled out), bit for bit;
// - from float: the nearest representable value found by searching the sorted table of all finite values of
//   the format (ties to the even bit pattern, beyond the largest finite value the IEEE overflow rule), for
//   every float whose low bits are one of the interesting patterns (exact, just above/below a tie, the tie)
//   over all high bit patterns, plus random floats; exact equality, because rounding is exact or wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/half.hpp"

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value of a 16-bit pattern with `ebits` exponent bits and `mbits` mantissa bits, from the definition.
double decode(uint16_t h, int ebits, int mbits) {
  const int bias = (1 << (ebits - 1)) - 1;
  const bool neg = h >> 15;
  const int e = (h >> mbits) & ((1 << ebits) - 1);
  const int m = h & ((1 << mbits) - 1);
  double v;
  if (e == (1 << ebits) - 1) v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (e == 0) v = std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  else v = std::ldexp(static_cast<double>(m + (1 << mbits)), e - bias - mbits);
  return neg ? -v : v;
}

struct Format {
  int ebits, mbits;
  std::vector<double> values;  // every finite non-negative value, ascending (its index is its bit pattern)
  double overflow;             // the smallest magnitude that rounds to inf: max finite + half an ulp
  Format(int e, int m) : ebits(e), mbits(m) {
    for (uint32_t h = 0; h < 0x8000u; ++h) {
      const double v = decode(static_cast<uint16_t>(h), e, m);
      if (std::isfinite(v)) values.push_back(v);
    }
    const double top = values.back(), ulp = top - values[values.size() - 2];
    overflow = top + ulp / 2;  // a tie at max + ulp/2 goes to the even neighbour, which is the inf pattern
  }
  // Reference rounding of a (non-NaN) float: nearest value, ties to the even pattern.
  uint16_t round(float f) const {
    const double a = std::fabs(static_cast<double>(f));
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const uint16_t inf = static_cast<uint16_t>(((1u << ebits) - 1u) << mbits);
    if (a >= overflow) return sign | inf;
    const auto it = std::lower_bound(values.begin(), values.end(), a);
    size_t hi = static_cast<size_t>(it - values.begin());
    if (hi < values.size() && values[hi] == a) return static_cast<uint16_t>(sign | hi);
    const size_t lo = hi - 1;  // a > values[0] = 0, so hi >= 1
    if (hi == values.size()) return static_cast<uint16_t>(sign | lo);  // between the top and `overflow`
    const double dl = a - values[lo], dh = values[hi] - a;
    const size_t pick = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return static_cast<uint16_t>(sign | pick);
  }
};

template <class H>
void check_to_float_exhaustive(int ebits, int mbits) {
  for (uint32_t b = 0; b < 65536u; ++b) {
    const float got = static_cast<float>(H::from_bits(static_cast<uint16_t>(b)));
    const double want = decode(static_cast<uint16_t>(b), ebits, mbits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
      ASSERT_EQ(std::signbit(got), (b & 0x8000u) != 0) << std::hex << b;
    } else {
      // bitwise, so that -0 stays -0
      ASSERT_EQ(bits_of(got), bits_of(static_cast<float>(want))) << std::hex << b;
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;  // exact: every half value is a float
    }
  }
}

template <class H>
void check_from_float(const Format& fmt, int dropped) {
  // Low-bit patterns of the float that matter for rounding `dropped` bits off: exact, one above exact, just
  // below the tie, the tie, just above it, the largest.
  const uint32_t half = 1u << (dropped - 1), all = (1u << dropped) - 1u;
  const uint32_t lows[] = {0u, 1u, half - 1u, half, half + 1u, all};
  auto check = [&](uint32_t u) {
    const float f = float_of(u);
    const uint16_t got = H(f).bits;
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(static_cast<float>(H::from_bits(got)))) << std::hex << u;
      ASSERT_EQ(got >> 15, u >> 31) << std::hex << u;
      return;
    }
    ASSERT_EQ(got, fmt.round(f)) << "float bits 0x" << std::hex << u << " = " << f;
  };
  for (uint32_t high = 0; high < (1u << (32 - dropped)); ++high)
    for (uint32_t low : lows) check((high << dropped) | low);
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) check(static_cast<uint32_t>(rng()));
}

TEST(Half, Bf16ToFloatAllPatterns) { check_to_float_exhaustive<gt::bf16_t>(8, 7); }
TEST(Half, Fp16ToFloatAllPatterns) { check_to_float_exhaustive<gt::fp16_t>(5, 10); }

TEST(Half, Bf16FromFloatRoundsToNearestEven) {
  const Format fmt(8, 7);
  check_from_float<gt::bf16_t>(fmt, 16);
}

// fp16 keeps 10 of float's 23 mantissa bits in the normal range; checking with 13 dropped bits over all high
// patterns covers every fp16 normal interval and tie, and the subnormal and underflow range (where more bits
// are dropped) through the same patterns plus the explicit cases below.
TEST(Half, Fp16FromFloatRoundsToNearestEven) {
  const Format fmt(5, 10);
  check_from_float<gt::fp16_t>(fmt, 13);
}

TEST(Half, NamedCases) {
  using gt::bf16_t;
  using gt::fp16_t;
  // ties: 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7: to the even one, 1
  EXPECT_EQ(bf16_t(1.0f + 0x1p-8f).bits, 0x3F80);
  EXPECT_EQ(bf16_t(1.0f + 3 * 0x1p-8f).bits, 0x3F82);  // halfway between odd 0x3F81 and even 0x3F82
  EXPECT_EQ(fp16_t(1.0f + 0x1p-11f).bits, 0x3C00);
  EXPECT_EQ(fp16_t(1.0f + 3 * 0x1p-11f).bits, 0x3C02);
  // fp16 range ends
  EXPECT_EQ(fp16_t(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(fp16_t(65519.99f).bits, 0x7BFF);
  EXPECT_EQ(fp16_t(65520.0f).bits, 0x7C00);  // the tie above the largest finite goes to inf
  EXPECT_EQ(fp16_t(-1e9f).bits, 0xFC00);
  EXPECT_EQ(fp16_t(0x1p-24f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_t(0x1p-25f).bits, 0x0000);  // half of it: a tie, to even (zero)
  EXPECT_EQ(fp16_t(0x1.8p-24f).bits, 0x0002);  // 1.5 units: tie between 1 and 2, to even (2)
  EXPECT_EQ(fp16_t(0x1.ff8p-15f).bits, 0x03FF);  // the largest subnormal
  EXPECT_EQ(fp16_t(0x1.ffcp-15f).bits, 0x0400);  // a tie above it: up into the smallest normal (even)
  EXPECT_EQ(fp16_t(-0.0f).bits, 0x8000);
  EXPECT_EQ(bf16_t(-0.0f).bits, 0x8000);
  // bf16 overflow: the largest float rounds to inf; infinities and NaN survive both ways
  EXPECT_EQ(bf16_t(std::numeric_limits<float>::max()).bits, 0x7F80);
  EXPECT_EQ(bf16_t(-INFINITY).bits, 0xFF80);
  EXPECT_EQ(fp16_t(INFINITY).bits, 0x7C00);
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16_t(std::nanf("")))));
  EXPECT_TRUE(std::isnan(static_cast<float>(fp16_t(-std::nanf("")))));
  // a NaN whose payload sits only in the dropped bits must not become inf
  const float low_nan = float_of(0x7F800001u);
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16_t(low_nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(fp16_t(low_nan))));
  // float subnormals: bf16 keeps their top bits (same exponent range), fp16 flushes by rounding
  EXPECT_EQ(bf16_t(float_of(0x00010000u)).bits, 0x0001);
  EXPECT_EQ(fp16_t(float_of(0x00000001u)).bits, 0x0000);
}

TEST(Half, GenericHelpers) {
  EXPECT_EQ(gt::to_float(gt::from_float<gt::bf16_t>(3.0f)), 3.0f);
  EXPECT_EQ(gt::to_float(gt::from_float<gt::fp16_t>(-0.5f)), -0.5f);
  EXPECT_STREQ(gt::dtype_name<gt::bf16_t>(), "bf16");
  EXPECT_STREQ(gt::dtype_name<gt::fp16_t>(), "fp16");
  static_assert(gt::is_half_v<gt::bf16_t> && gt::is_half_v<gt::fp16_t> && !gt::is_half_v<float>);
}

}  // namespace
