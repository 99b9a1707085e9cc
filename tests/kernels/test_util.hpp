#pragma once
// Helpers shared by the kernel tests: random inputs, NaN poisoning, conversions, error norms, central
// finite differences. Buffers are std::vector: on this (Serial) build device pointers are host pointers.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace kt {

using Vec = std::vector<double>;

// Random values in [lo, hi) rounded through float, so that a float kernel and the double reference see
// exactly the same inputs and the comparison measures only the kernel's own rounding.
inline Vec random_vec(std::mt19937_64& rng, size_t n, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (auto& x : v) x = static_cast<double>(static_cast<float>(dist(rng)));
  return v;
}

inline std::vector<int32_t> random_tokens(std::mt19937_64& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

template <class T>
std::vector<T> cast(const Vec& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <class T>
Vec to_double(const std::vector<T>& v) {
  return Vec(v.begin(), v.end());
}

// A buffer that a "set" kernel must overwrite completely.
template <class T>
std::vector<T> poisoned(size_t n) {
  return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

// ||a - b|| / max(||a||, ||b||), +inf if anything is NaN or the sizes differ; 0 when both are 0.
inline double rel_err(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0.0, na = 0.0, nb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    d += (a[i] - b[i]) * (a[i] - b[i]);
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  const double den = std::sqrt(std::max(na, nb));
  return den == 0.0 ? std::sqrt(d) : std::sqrt(d) / den;
}
template <class T>
double rel_err(const std::vector<T>& a, const Vec& b) {
  return rel_err(to_double(a), b);
}

inline Vec add(const Vec& a, const Vec& b) {
  Vec c(a.size());
  for (size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

// Central differences of a scalar function of x: g_i = (f(x + h e_i) - f(x - h e_i)) / 2h.
inline Vec finite_diff(const std::function<double(const Vec&)>& f, Vec x, double h = 1e-5) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double fp = f(x);
    x[i] = xi - h;
    const double fm = f(x);
    x[i] = xi;
    g[i] = (fp - fm) / (2.0 * h);
  }
  return g;
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Tolerances for kernel-vs-reference comparisons (norm-wise relative error), per scalar type.
template <class T>
constexpr double tol() {
  return sizeof(T) == 4 ? 2e-6 : 1e-13;
}

}  // namespace kt
