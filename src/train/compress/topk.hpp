#pragma once
// Top-k selection with error feedback for one gradient bucket (issue 11). Only the k entries of largest
// magnitude of acc = grad + residual are sent; what is not sent (and the rounding of what is sent to the wire's
// value type) stays in the residual for the next step, so no gradient is lost, only delayed:
//   float(sent value) + new residual == acc == fl(grad + old residual), exactly, entry by entry.
// Two selections: exact (nth_element, O(n) with an index array) and DGC's sampled threshold (Lin et al. 2018:
// a threshold from ~1% of |acc|, moved until the count is within [0.8k, 1.3k], then trimmed to k), which
// selects the top-m entries for some m in [ceil(0.8k), k]. bench/bench_compress.cpp measures both.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gt::compress {

// Entries a bucket of n sends at density d in (0, 1]: ceil(d*n), at least 1 (n > 0), at most n.
size_t topk_count(size_t n, double density);

// DGC's density warm-up: from 25% down to `target`, geometrically, over `warmup_steps` steps (DGC quarters the
// density each epoch: 25%, 6.25%, 1.56%, 0.39%, 0.1%); `target` from then on, and at once when target >= 25%
// or warmup_steps <= 0. step counts from 0.
double warmup_density(long step, long warmup_steps, double target);

enum class Select { Exact, Sampled };

// Indices (ascending) of the k entries of acc[0..n) with the largest |value|; ties go to the lower index and
// NaN counts as larger than any number (a NaN gradient is sent, not hidden in the residual).
void select_exact(const float* acc, size_t n, size_t k, std::vector<int32_t>& idx);
// DGC's sampled threshold: the top-m entries, m in [ceil(0.8k), k] (exact top-k when sampling cannot get
// there in 10 rounds or n is small). `seed` makes the sample reproducible (no hidden generator state).
void select_sampled(const float* acc, size_t n, size_t k, uint64_t seed, std::vector<int32_t>& idx);
void select(Select how, const float* acc, size_t n, size_t k, uint64_t seed, std::vector<int32_t>& idx);

// The residual of one bucket on one rank, over memory the caller owns (the trainer keeps every bucket's
// residual in one TrainState buffer). accumulate() turns it into acc = grad + residual; take() moves the
// selected entries out (converted to the wire's value type V) and leaves the remainder; drop() forgets the
// remainder (top-k without error feedback, for comparison).
class ErrorFeedback {
 public:
  ErrorFeedback(float* residual, size_t n) : r_(residual), n_(n) {}
  size_t size() const { return n_; }
  // acc[i] = grad[i] + residual[i]; returns acc (the residual's storage).
  const float* accumulate(const float* grad);
  // val[j] = V(acc[idx[j]]), acc[idx[j]] -= float(val[j]) (exact: zero for V = float, the rounding error of
  // a 16-bit V otherwise; a finite value beyond V's range is sent saturated). Indices < 0 are padding: val 0,
  // nothing taken. V: float, bf16_t, fp16_t (kernels/half.hpp).
  template <class V> void take(const int32_t* idx, size_t k, V* val);
  void drop();
  float* residual() { return r_; }
  const float* residual() const { return r_; }
  double norm2() const;  // sum of squares, for the metrics

 private:
  float* r_;
  size_t n_;
};

}  // namespace gt::compress
