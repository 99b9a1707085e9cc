#pragma once
// Sample -> sequence map of a token dataset. Global sample s of a split lies in epoch e = s / n and at
// position p = s % n of that epoch; its sequence is perm_e(p), a seeded permutation of [0, n) per epoch.
// The permutation is a 4-round Feistel network on the smallest even-bit power of two >= n, with cycle walking
// (re-apply until the value falls inside [0, n)): O(1) memory, O(1) expected time (< 4 rounds of walking on
// average), and a pure function of (seed, split, epoch, position), so any DP layout sees the same samples.
#include <cstdint>

namespace gt {

class EpochSampler {
 public:
  // n: sequences per epoch (> 0); stream: distinguishes splits (or anything else) under one seed.
  EpochSampler(int64_t n, uint64_t seed, uint64_t stream);
  int64_t sequences_per_epoch() const { return n_; }
  // The sequence index in [0, n) of global sample s >= 0.
  int64_t sequence(int64_t sample) const;
  // The permutation of one epoch at one position.
  int64_t permute(int64_t epoch, int64_t position) const;

 private:
  int64_t n_;
  uint64_t seed_, stream_;
  int half_bits_;  // the Feistel domain is 2^(2 * half_bits)
};

}  // namespace gt
