#pragma once
// Parameter initialisation as a pure function of (seed, tensor name, global element index): any sharding of
// a tensor across ranks reproduces exactly the values a single rank would draw, so layouts can be compared
// bit for bit and checkpoints resharded freely.
#include <cmath>
#include <cstdint>
#include <string>

#include "src/data/hash.hpp"

namespace gt {

// A tensor name's hash: FNV-1a 64 of its characters (src/data/hash.hpp).
inline uint64_t fnv1a64(const std::string& s) { return fnv1a64(s.data(), s.size()); }

// Uniform in (0, 1) from 53 random bits, never 0 so that log() is finite.
inline double uniform_open(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

// Uniform in (0, 1) for element `index` of the stream keyed by (seed, name).
inline double uniform_at(uint64_t seed, uint64_t name_hash, uint64_t index) {
  const uint64_t key = mix64(seed ^ mix64(name_hash));
  return uniform_open(mix64(key + 2 * index));
}

// Standard normal for element `index` of the stream keyed by (seed, name): Box-Muller on two hashed counters.
inline double normal_at(uint64_t seed, uint64_t name_hash, uint64_t index) {
  const uint64_t key = mix64(seed ^ mix64(name_hash));
  const double u1 = uniform_open(mix64(key + 2 * index));
  const double u2 = uniform_open(mix64(key + 2 * index + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace gt
