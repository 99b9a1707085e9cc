#pragma once
// What the collective tests share: the world's rank and size, and reproducible per-rank data (every rank can
// regenerate every other rank's input, so references are computed independently of the collective under test).
#include <mpi.h>

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

namespace commtest {

inline int world_size() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// n values uniform in [lo, hi) from a generator seeded with `seed`, drawn in double and converted to T (a
// 16-bit T through float).
template <class T>
std::vector<T> uniform_values(uint64_t seed, size_t n, double lo = -1, double hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_arithmetic_v<T>) x = T(u(g));
    else x = T(float(u(g)));  // the 16-bit types convert from float
  }
  return v;
}

}  // namespace commtest
