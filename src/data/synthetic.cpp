// SyntheticSource: a Markov chain over the vocabulary that a model can learn exactly.
#include <cmath>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/data/data_source.hpp"
#include "src/data/hash.hpp"

namespace gt {

SyntheticSource::SyntheticSource(int vocab_size, int seq_len, uint64_t seed, double noise)
    : vocab_(vocab_size), seq_len_(seq_len), seed_(seed), noise_(noise) {
  if (vocab_size < 2) throw Error("synthetic data: vocab_size must be >= 2");
  if (seq_len < 1) throw Error("synthetic data: seq_len must be >= 1");
  if (!(noise >= 0.0 && noise <= 1.0)) throw Error("synthetic data: data.synthetic_noise must be in [0, 1]");
  // The successor rule: a seeded Fisher-Yates permutation (its draws are hashes of (seed, i), not a stream).
  perm_.resize(vocab_);
  for (int i = 0; i < vocab_; ++i) perm_[i] = i;
  for (int i = vocab_ - 1; i > 0; --i) {
    const int j = int(below(hash3(seed_, 0x7065726dull, uint64_t(i)), uint64_t(i) + 1));
    std::swap(perm_[i], perm_[j]);
  }
}

// out: n rows of (seq_len + 1) tokens. Token 0 of a row is uniform; token t > 0 is perm[token t-1], or with
// probability noise a uniform token. Every draw is a hash of (seed, split, sample, t, purpose).
void SyntheticSource::read(Split split, const int64_t* samples, int n, int32_t* tokens) {
  const uint64_t s = split == Split::Train ? 1 : 2;
  const int L = seq_len_ + 1;
  for (int i = 0; i < n; ++i) {
    if (samples[i] < 0) throw Error("synthetic data: negative sample index");
    const uint64_t row = hash3(seed_, s, uint64_t(samples[i]));
    int32_t* out = tokens + int64_t(i) * L;
    out[0] = int32_t(below(hash2(row, 0), uint64_t(vocab_)));
    for (int t = 1; t < L; ++t) {
      const uint64_t h = hash2(row, uint64_t(t));
      if (unit_double(h) < noise_)
        out[t] = int32_t(below(mix64(h), uint64_t(vocab_)));
      else
        out[t] = perm_[out[t - 1]];
    }
  }
}

// Next token given the previous one: perm[prev] with probability a = 1 - noise + noise/V, each of the other
// V-1 tokens with b = noise/V. Every target position follows this rule, so the entropy is the best loss.
double SyntheticSource::optimal_loss() const {
  const double V = vocab_, b = noise_ / V, a = 1.0 - noise_ + b;
  auto xlogx = [](double p) { return p > 0 ? p * std::log(p) : 0.0; };
  return -(xlogx(a) + (V - 1) * xlogx(b));
}

std::string SyntheticSource::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "synthetic successor task: V=%d T=%d noise=%g seed=%llu (optimal loss %.4f nats)",
                vocab_, seq_len_, noise_, (unsigned long long)seed_, optimal_loss());
  return buf;
}

}  // namespace gt
