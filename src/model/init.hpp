#pragma once
// Parameter initialisation as a pure function of (seed, tensor name, global element index): any sharding of
// a tensor across ranks reproduces exactly the values a single rank would draw, so layouts can be compared
// bit for bit and checkpoints resharded freely.
#include <cmath>
#include <cstdint>
#include <string>

namespace gt {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Uniform in (0, 1) from 53 random bits, never 0 so that log() is finite.
inline double uniform_open(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

// Uniform in (0, 1) for element `index` of the stream keyed by (seed, name).
inline double uniform_at(uint64_t seed, uint64_t name_hash, uint64_t index) {
  const uint64_t key = splitmix64(seed ^ splitmix64(name_hash));
  return uniform_open(splitmix64(key + 2 * index));
}

// Standard normal for element `index` of the stream keyed by (seed, name): Box-Muller on two hashed counters.
inline double normal_at(uint64_t seed, uint64_t name_hash, uint64_t index) {
  const uint64_t key = splitmix64(seed ^ splitmix64(name_hash));
  const double u1 = uniform_open(splitmix64(key + 2 * index));
  const double u2 = uniform_open(splitmix64(key + 2 * index + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace gt
