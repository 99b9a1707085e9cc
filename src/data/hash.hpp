#pragma once
// Counter-based hashing used by the data code and the parameter initialisation (src/model/init.hpp): splitmix64
// (a bijective 64-bit mixer, so "random" values are pure functions of their coordinates, with no sequential RNG
// state) and FNV-1a 64 for file checksums and tensor names.
#include <cstddef>
#include <cstdint>

namespace gt {

// The splitmix64 finaliser: a bijection of 64-bit words with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Hash of a tuple of coordinates, e.g. hash4(seed, split, sample, position).
inline uint64_t hash2(uint64_t a, uint64_t b) { return mix64(mix64(a) ^ b); }
inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix64(hash2(a, b) ^ c); }
inline uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return mix64(hash3(a, b, c) ^ d); }

// Uniform double in [0, 1) from the top 53 bits.
inline double unit_double(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

// Uniform integer in [0, n) (multiply-shift; bias below 2^-32 for n < 2^32).
inline uint64_t below(uint64_t h, uint64_t n) { return uint64_t((unsigned __int128)h * n >> 64); }

// FNV-1a 64, streamable: state = fnv1a64(data, n, state).
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline uint64_t fnv1a64(const void* data, size_t n, uint64_t state = kFnvOffset) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) state = (state ^ p[i]) * 0x100000001b3ull;
  return state;
}

}  // namespace gt
