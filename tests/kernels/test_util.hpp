#pragma once
// Helpers shared by the kernel tests: random inputs, NaN poisoning, conversions, error norms, central
// finite differences. The buffers handed to kernels are kt::DVec (device memory with a host copy), so the same
// tests run on a CUDA build; on a host build a DVec is a plain std::vector.
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace kt {

using Vec = std::vector<double>;

// A test buffer in the kernels' memory space with a host copy for setting up and checking (Cabana's pattern:
// device view + host mirror). data() gives kernels the device pointer; reading on the host (operator[], begin/end,
// the conversion to const std::vector<T>&) first copies back what kernels wrote, and a host write is copied to the
// device before the next data(). Where the kernels' memory is host memory (Serial) the device view is the host
// vector itself: no copies, the same bits as a std::vector.
template <class T>
class DVec {
  using MemSpace = Kokkos::DefaultExecutionSpace::memory_space;
  static constexpr bool kShared = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

 public:
  DVec() = default;
  explicit DVec(size_t n, T v = T()) : h_(n, v) { make_device(); }
  DVec(const std::vector<T>& v) : h_(v) { make_device(); }  // NOLINT: implicit, like the vectors it replaces
  DVec(const DVec& o) : h_(o.host()) { make_device(); }
  DVec& operator=(const DVec& o) {
    if (this != &o) { h_ = o.host(); make_device(); }
    return *this;
  }

  size_t size() const { return h_.size(); }
  bool empty() const { return h_.empty(); }
  // Device pointer for a kernel; the kernel may write through it, so the host copy is stale afterwards.
  T* data() {
    push();
    device_newer_ = true;
    return d_.data();
  }
  const T* data() const {
    push();
    return d_.data();
  }
  const std::vector<T>& host() const {
    pull();
    return h_;
  }
  operator const std::vector<T>&() const { return host(); }  // NOLINT: the references take std::vector
  T& operator[](size_t i) {
    pull();
    host_newer_ = true;
    return h_[i];
  }
  const T& operator[](size_t i) const { return host()[i]; }
  const T* begin() const { return host().data(); }
  const T* end() const { return host().data() + h_.size(); }

 private:
  void make_device() {
    host_newer_ = device_newer_ = false;
    if constexpr (kShared) {
      d_ = Kokkos::View<T*, MemSpace>(h_.data(), h_.size());  // unmanaged: the vector's own storage
    } else {
      d_ = Kokkos::View<T*, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kt::DVec"), h_.size());
      host_newer_ = true;
    }
  }
  void push() const {
    if constexpr (!kShared) {
      if (host_newer_) Kokkos::deep_copy(d_, Kokkos::View<const T*, Kokkos::HostSpace>(h_.data(), h_.size()));
    }
    host_newer_ = false;
  }
  void pull() const {
    if constexpr (!kShared) {
      if (device_newer_)
        Kokkos::deep_copy(Kokkos::View<T*, Kokkos::HostSpace>(const_cast<T*>(h_.data()), h_.size()), d_);
    }
    device_newer_ = false;
  }

  std::vector<T> h_;
  Kokkos::View<T*, MemSpace> d_;
  mutable bool host_newer_ = false, device_newer_ = false;
};

// Random values in [lo, hi) rounded through float, so that a float kernel and the double reference see
// exactly the same inputs and the comparison measures only the kernel's own rounding.
inline Vec random_vec(std::mt19937_64& rng, size_t n, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (auto& x : v) x = static_cast<double>(static_cast<float>(dist(rng)));
  return v;
}

// Random values in [lo, hi) that T holds exactly (rounded through float and T: the 16-bit types convert from
// float only), so that the kernel and the double reference see the same inputs.
template <class T>
Vec exact_in(std::mt19937_64& rng, size_t n, double lo = -1.0, double hi = 1.0) {
  Vec v = random_vec(rng, n, lo, hi);
  for (auto& x : v) x = double(float(T(float(x))));
  return v;
}
// v in T, converted through float (as exact_in rounds).
template <class T>
DVec<T> to(const Vec& v) {
  std::vector<T> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = T(float(v[i]));
  return h;
}

inline DVec<int32_t> random_tokens(std::mt19937_64& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

template <class T>
DVec<T> cast(const Vec& v) {
  return DVec<T>(std::vector<T>(v.begin(), v.end()));
}
template <class T>
Vec to_double(const std::vector<T>& v) {
  return Vec(v.begin(), v.end());
}
template <class T>
Vec to_double(const DVec<T>& v) {
  return to_double(v.host());
}

// A buffer that a "set" kernel must overwrite completely.
template <class T>
DVec<T> poisoned(size_t n) {
  return DVec<T>(n, std::numeric_limits<T>::quiet_NaN());
}
// The same for every T: the 16-bit types have no numeric_limits (poisoned would fill them with zeros).
template <class T>
DVec<T> nan_filled(size_t n) {
  return DVec<T>(n, T(NAN));
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
template <class T>
double rel_err(const DVec<T>& a, const Vec& b) {
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
