#include "src/train/compress/topk.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/half.hpp"

namespace gt::compress {

namespace {

// Magnitude used for ranking: NaN ranks above everything (strict weak order needs a number, not a NaN).
inline float key(float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); }

// splitmix64: a small seeded generator, so a selection depends only on its arguments
inline uint64_t mix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

size_t topk_count(size_t n, double density) {
  if (n == 0) return 0;
  const double k = std::ceil(density * double(n));
  return std::min(n, std::max<size_t>(1, size_t(k)));
}

// The k-th largest key t by nth_element on a contiguous copy of the keys (no comparisons through an index
// array), then one pass in index order takes every key > t and the first ties == t: the top-k with ties to the
// lower index, already ascending.
double warmup_density(long step, long warmup_steps, double target) {
  const double start = 0.25;
  if (target >= start || warmup_steps <= 0 || step >= warmup_steps) return target;
  const double f = double(std::max(0L, step)) / double(warmup_steps);
  return std::max(target, start * std::pow(target / start, f));
}

void select_exact(const float* acc, size_t n, size_t k, std::vector<int32_t>& idx) {
  k = std::min(k, n);
  idx.clear();
  if (k == 0) return;
  std::vector<float> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = key(acc[i]);
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<float>());
  const float t = keys[k - 1];
  size_t ties = k;  // keys[0..k-1) are >= t: those above t are taken anyway, the rest of k go to ties
  for (size_t i = 0; i + 1 < k; ++i) ties -= keys[i] > t;
  idx.reserve(k);
  for (size_t i = 0; i < n && idx.size() < k; ++i) {
    const float v = key(acc[i]);
    if (v > t || (v == t && ties > 0)) {
      ties -= v == t;
      idx.push_back(int32_t(i));
    }
  }
}

void select_sampled(const float* acc, size_t n, size_t k, uint64_t seed, std::vector<int32_t>& idx) {
  k = std::min(k, n);
  const size_t lower = (k * 4 + 4) / 5;  // ceil(0.8k)
  // below ~64k entries a sample of 1% holds too few of the top-k to place a threshold: select exactly
  if (n < 65536 || k == 0) return select_exact(acc, n, k, idx);
  const size_t s = std::max<size_t>(n / 100, 1024);
  std::vector<float> sample(s);
  uint64_t st = seed;
  for (auto& v : sample) v = key(acc[mix(st) % n]);
  // the same fraction of the sample as k is of n
  const size_t ks = std::min(s - 1, size_t(std::ceil(double(k) * double(s) / double(n))));
  std::nth_element(sample.begin(), sample.begin() + ks, sample.end(), std::greater<float>());
  float thr = sample[ks];
  float lo = 0, hi = std::numeric_limits<float>::infinity();  // thresholds known to give too many / too few
  bool found = false;
  for (int round = 0; round < 10 && thr > 0 && !found; ++round) {
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) count += key(acc[i]) >= thr;
    if (count > k + (k * 3 + 9) / 10) lo = thr;  // more than 1.3k: raise the threshold
    else if (count < lower) hi = thr;            // fewer than 0.8k: lower it
    else found = true;
    if (!found) thr = std::isinf(hi) ? thr * 1.3f : (lo > 0 ? 0.5f * (lo + hi) : thr * 0.8f);
  }
  if (!found) return select_exact(acc, n, k, idx);
  std::vector<int32_t> cand;
  std::vector<float> cval;
  for (size_t i = 0; i < n; ++i)
    if (key(acc[i]) >= thr) cand.push_back(int32_t(i)), cval.push_back(acc[i]);
  // up to 1.3k candidates, ascending: their exact top-k (ties to the lower index, as the candidates are in
  // index order) is the top-min(k, count) of the whole bucket
  select_exact(cval.data(), cval.size(), k, idx);
  for (auto& j : idx) j = cand[size_t(j)];
}

void select(Select how, const float* acc, size_t n, size_t k, uint64_t seed, std::vector<int32_t>& idx) {
  if (how == Select::Exact) select_exact(acc, n, k, idx);
  else select_sampled(acc, n, k, seed, idx);
}

const float* ErrorFeedback::accumulate(const float* grad) {
  for (size_t i = 0; i < n_; ++i) r_[i] += grad[i];
  return r_;
}

// The largest finite value of a wire type: a finite entry beyond it is sent saturated (fp16 overflows at
// 65520), the excess stays in the residual; inf and NaN are sent as they are (a bad gradient is not hidden).
template <class V> float max_finite() { return std::numeric_limits<float>::max(); }
template <> float max_finite<fp16_t>() { return 65504.0f; }
template <> float max_finite<bf16_t>() { return static_cast<float>(bf16_t::from_bits(0x7F7Fu)); }

template <class V>
void ErrorFeedback::take(const int32_t* idx, size_t k, V* val) {
  for (size_t j = 0; j < k; ++j) {
    if (idx[j] < 0) {
      val[j] = V(0.0f);
      continue;
    }
    float& a = r_[size_t(idx[j])];
    val[j] = static_cast<V>(a);
    if (std::isfinite(a) && !std::isfinite(static_cast<float>(val[j])))
      val[j] = static_cast<V>(std::copysign(max_finite<V>(), a));
    // exact while |a| <= 2 max_finite (float(V(a)) is a's nearest V value: same sign, within a factor 2, so
    // Sterbenz' lemma applies); beyond, only a saturated fp16/bf16 value leaves a rounded excess
    a -= static_cast<float>(val[j]);
  }
}
template void ErrorFeedback::take<float>(const int32_t*, size_t, float*);
template void ErrorFeedback::take<bf16_t>(const int32_t*, size_t, bf16_t*);
template void ErrorFeedback::take<fp16_t>(const int32_t*, size_t, fp16_t*);

void ErrorFeedback::drop() { std::fill(r_, r_ + n_, 0.0f); }

double ErrorFeedback::norm2() const {
  double s = 0;
  for (size_t i = 0; i < n_; ++i) s += double(r_[i]) * r_[i];
  return s;
}

}  // namespace gt::compress
