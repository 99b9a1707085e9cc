#pragma once
// DataSource over an HDF5 token dataset. A split's token stream holds n = (tokens - 1) / T sequences: sequence
// j is the window [j*T, j*T + T + 1) (stride T, so consecutive sequences share one token and a window may
// cross document boundaries, the eot token marking them). Global sample s maps to sequence
// EpochSampler(n, seed, split).sequence(s): every epoch is a fresh seeded permutation of all sequences.
#include <cstdint>
#include <string>

#include "src/data/data_source.hpp"
#include "src/data/dataset_file.hpp"
#include "src/data/sampler.hpp"

namespace gt {

class HDF5Source : public DataSource {
 public:
  HDF5Source(const std::string& path, int seq_len, uint64_t seed);
  // tokens: n rows of seq_len + 1, row i = the sequence of global sample samples[i]. One hyperslab per row.
  void read(Split split, const int64_t* samples, int n, int32_t* tokens) override;
  int vocab_size() const override { return int(file_.info().vocab_size); }
  int seq_len() const override { return seq_len_; }
  int64_t samples_per_epoch(Split split) const override { return sequences_[split == Split::Train ? 0 : 1]; }
  std::string describe() const override;
  // The sequence index that global sample s reads (for tests and tools).
  int64_t sequence_of(Split split, int64_t sample) const;
  const DatasetInfo& info() const { return file_.info(); }

 private:
  DatasetFile file_;
  int seq_len_;
  uint64_t seed_;
  int64_t sequences_[2];
};

}  // namespace gt
