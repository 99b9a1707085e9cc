#pragma once
// Streams tokens into a new HDF5 token dataset (format in dataset_format.hpp): tokens are buffered and
// appended to the extendible datasets in blocks, so memory does not grow with the corpus.
#include <cstdint>
#include <string>
#include <vector>

#include "src/data/data_source.hpp"
#include "src/io/h5_util.hpp"

namespace gt {

class DatasetWriter {
 public:
  // Creates (truncates) `path`. gt::Error "<path>: cannot create ..." when that fails.
  DatasetWriter(const std::string& path, const std::string& tokenizer, int vocab_size, int eot_id);
  ~DatasetWriter();
  void begin_document(Split split);
  void append(Split split, const int32_t* ids, size_t n);
  void end_document(Split split);  // appends eot_id
  // One input file: its path, size, FNV-1a 64 of its bytes, and which split it went to.
  void add_source(const std::string& file, int64_t bytes, uint64_t fnv1a64, Split split);
  // Flushes, writes the root attributes and closes. Nothing is valid before finish() returned.
  void finish();
  int64_t tokens(Split s) const { return part(s).written + int64_t(part(s).buf.size()); }
  int64_t documents(Split s) const { return part(s).docs_written + int64_t(part(s).offsets.size()); }

 private:
  struct Part {
    io::H5Handle group, tokens, offsets_ds;
    std::vector<int32_t> buf;        // tokens not yet written
    std::vector<int64_t> offsets;    // document starts not yet written
    int64_t written = 0, docs_written = 0;
    // FNV-1a 64 of each kTokenChunk tokens (as little-endian int32, whatever the stored width), in order
    std::vector<uint64_t> chunk_sums;
    uint64_t chunk_hash = 0;
    int64_t in_chunk = 0;
  };
  Part& part(Split s) { return parts_[s == Split::Train ? 0 : 1]; }
  const Part& part(Split s) const { return parts_[s == Split::Train ? 0 : 1]; }
  void flush_tokens(Part& p);
  void flush_offsets(Part& p);
  void write_attributes();

  std::string path_, tokenizer_;
  int vocab_, eot_, token_bytes_;
  io::H5Handle file_;
  Part parts_[2];
  std::vector<std::string> src_files_;
  std::vector<int64_t> src_bytes_, src_split_;
  std::vector<uint64_t> src_fnv_;
  uint64_t corpus_fnv_;
  bool finished_ = false;
};

}  // namespace gt
