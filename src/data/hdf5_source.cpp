#include "src/data/hdf5_source.hpp"

#include <cstdio>

#include "src/core/error.hpp"
#include "src/data/dataset_format.hpp"

namespace gt {

HDF5Source::HDF5Source(const std::string& path, int seq_len, uint64_t seed)
    : file_(path), seq_len_(seq_len), seed_(seed) {
  if (seq_len < 1) throw Error(path + ": seq_len must be >= 1");
  for (int s = 0; s < 2; ++s) {
    const int64_t n = file_.info().tokens[s];
    sequences_[s] = n > seq_len ? (n - 1) / seq_len : 0;
  }
}

int64_t HDF5Source::sequence_of(Split split, int64_t sample) const {
  const int64_t n = samples_per_epoch(split);
  if (n <= 0)
    throw Error(file_.info().path + ": the " + split_name(split) + " split has no sequence of " +
                std::to_string(seq_len_ + 1) + " tokens");
  // the stream id keeps train and val permutations independent under one seed
  return EpochSampler(n, seed_, split == Split::Train ? 0x747261696eull : 0x76616cull).sequence(sample);
}

void HDF5Source::read(Split split, const int64_t* samples, int n, int32_t* tokens) {
  const int64_t L = seq_len_ + 1;
  for (int i = 0; i < n; ++i) {
    const int64_t seq = sequence_of(split, samples[i]);
    file_.read_tokens(split, seq * seq_len_, L, tokens + i * L);
  }
}

std::string HDF5Source::describe() const {
  const DatasetInfo& d = file_.info();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "hdf5 dataset %s: tokenizer %s V=%lld, train %lld tokens (%lld sequences of T=%d), val %lld tokens "
                "(%lld sequences)",
                d.path.c_str(), d.tokenizer.c_str(), (long long)d.vocab_size, (long long)d.tokens[0],
                (long long)sequences_[0], seq_len_, (long long)d.tokens[1], (long long)sequences_[1]);
  return buf;
}

}  // namespace gt
