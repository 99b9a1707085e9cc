#pragma once
// Read-only access to an HDF5 token dataset (format in dataset_format.hpp) with plain serial HDF5 (no
// MPI-IO): every rank opens the file on its own and reads only the hyperslabs it needs. Opening validates the
// structure; every problem is gt::Error "<file>: <problem>".
// Not thread-safe (neither is HDF5): one thread at a time per process, see BatchPrefetcher::quiesce().
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/data_source.hpp"
#include "src/io/h5_util.hpp"

namespace gt {

struct DatasetInfo {
  std::string path, tokenizer;
  int64_t format_version = 0, vocab_size = 0, eot_id = 0;
  int64_t tokens[2] = {0, 0}, documents[2] = {0, 0};   // [train, val]
  int token_bytes = 0;                                 // stored width: 1, 2 or 4
  std::vector<std::string> source_files;
  std::vector<int64_t> source_bytes, source_split;
  std::vector<uint64_t> source_fnv1a64;
  uint64_t corpus_fnv1a64 = 0;
};

class DatasetFile {
 public:
  explicit DatasetFile(const std::string& path);
  const DatasetInfo& info() const { return info_; }
  int64_t tokens(Split s) const { return info_.tokens[s == Split::Train ? 0 : 1]; }
  int64_t documents(Split s) const { return info_.documents[s == Split::Train ? 0 : 1]; }
  // out: count tokens [start, start + count) of the split's token stream. Each chunk of kTokenChunk tokens is
  // checked against its stored checksum the first time a read touches it (a one-line error naming file and chunk).
  void read_tokens(Split s, int64_t start, int64_t count, int32_t* out);
  // out: count document offsets [start, start + count).
  void read_doc_offsets(Split s, int64_t start, int64_t count, int64_t* out);

 private:
  // Tokens as stored, widened to int32; check_vocab: refuse ids >= vocab_size.
  void read_raw(int k, int64_t start, int64_t count, int32_t* out, bool check_vocab);
  void verify_chunk(int k, int64_t chunk);

  DatasetInfo info_;
  io::H5Handle file_, tokens_[2], offsets_[2];
  // FNV-1a 64 of each kTokenChunk tokens (empty: a dataset written before checksums) and which chunks passed
  std::vector<uint64_t> chunk_sums_[2];
  std::vector<bool> verified_[2];
};

}  // namespace gt
