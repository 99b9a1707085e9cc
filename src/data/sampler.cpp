#include "src/data/sampler.hpp"

#include "src/core/error.hpp"
#include "src/data/hash.hpp"

namespace gt {

EpochSampler::EpochSampler(int64_t n, uint64_t seed, uint64_t stream) : n_(n), seed_(seed), stream_(stream) {
  if (n <= 0) throw Error("sampler: a split needs at least one sequence");
  half_bits_ = 1;
  while ((int64_t(1) << (2 * half_bits_)) < n) ++half_bits_;
}

int64_t EpochSampler::permute(int64_t epoch, int64_t position) const {
  const uint64_t mask = (uint64_t(1) << half_bits_) - 1;
  const uint64_t key = hash3(seed_, stream_, uint64_t(epoch));
  uint64_t x = uint64_t(position);
  do {  // cycle walking: a bijection of the 2^(2h) domain restricted to [0, n) stays a bijection
    uint64_t left = x >> half_bits_, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = hash2(key ^ round, right) & mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= uint64_t(n_));
  return int64_t(x);
}

int64_t EpochSampler::sequence(int64_t sample) const {
  if (sample < 0) throw Error("sampler: negative sample index");
  return permute(sample / n_, sample % n_);
}

}  // namespace gt
