#pragma once
// Where training tokens come from. A source maps a *global sample index* (0, 1, 2, ... over the whole run,
// independent of the parallel layout) to one sequence of seq_len + 1 tokens (inputs = [0, T), targets =
// [1, T+1)). Because the mapping does not depend on the layout, a run on 1 rank and on 8 ranks see the same
// global batches: the trainer asks each DP rank for its own slice of sample indices.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gt {

struct Config;

enum class Split { Train, Val };

class DataSource {
 public:
  virtual ~DataSource() = default;
  // tokens: n * row_elems() values, row i for global sample samples[i] of the split.
  virtual void read(Split split, const int64_t* samples, int n, int32_t* tokens) = 0;
  virtual int vocab_size() const = 0;
  virtual int seq_len() const = 0;
  // int32 words per sample (the row read() writes): seq_len + 1 tokens; an image source's are its own
  // (image_source.hpp).
  virtual int row_elems() const { return seq_len() + 1; }
  // Number of distinct sequences in one epoch of the split (synthetic: effectively unbounded).
  virtual int64_t samples_per_epoch(Split split) const = 0;
  virtual std::string describe() const = 0;
};

// Deterministic synthetic task that a model can learn: each sequence follows a fixed random successor rule
// (token -> perm[token]) and with probability `noise` a uniformly random token is drawn instead. Content is
// a pure function of (seed, split, sample index). The best achievable loss is known (see expected_loss).
class SyntheticSource : public DataSource {
 public:
  SyntheticSource(int vocab_size, int seq_len, uint64_t seed, double noise);
  void read(Split split, const int64_t* samples, int n, int32_t* tokens) override;
  int vocab_size() const override { return vocab_; }
  int seq_len() const override { return seq_len_; }
  int64_t samples_per_epoch(Split) const override { return int64_t(1) << 40; }
  std::string describe() const override;
  // Entropy of the next-token distribution under the rule, in nats: the loss of a perfect model.
  double optimal_loss() const;

 private:
  int vocab_, seq_len_;
  uint64_t seed_;
  double noise_;
  std::vector<int32_t> perm_;
};

// Build the source named by the config (data.source).
std::unique_ptr<DataSource> make_data_source(const Config& cfg);

}  // namespace gt
