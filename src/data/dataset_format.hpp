#pragma once
// The HDF5 token dataset (docs/data.md has the full description):
//   /train/tokens       1-D, uint8 | uint16 | uint32 (the smallest that holds vocab_size), chunked, extendible
//   /train/doc_offsets  1-D int64: start of each document in tokens (every document ends with eot_id)
//   /train/token_checksums  1-D uint64: FNV-1a 64 of each kTokenChunk tokens taken as little-endian int32 (the
//                       last chunk may be partial); absent in files written before it (they load with a warning)
//   /val/...            the same for the validation split
//   root attributes     gridtrain_kind = "dataset", format_version, tokenizer, vocab_size, eot_id,
//                       train_tokens, val_tokens, train_documents, val_documents,
//                       source_files, source_bytes, source_fnv1a64, source_split, corpus_fnv1a64
#include <cstdint>

#include "src/data/data_source.hpp"

namespace gt {

constexpr int64_t kDatasetFormatVersion = 1;
constexpr int64_t kTokenChunk = 65536;   // tokens per HDF5 chunk: small enough that a random window reads little
constexpr int64_t kOffsetChunk = 4096;   // document offsets per chunk

inline const char* split_name(Split s) { return s == Split::Train ? "train" : "val"; }

// Bytes per stored token for a vocabulary size: 1, 2 or 4.
inline int token_bytes_for_vocab(int64_t vocab_size) { return vocab_size <= 256 ? 1 : vocab_size <= 65536 ? 2 : 4; }

}  // namespace gt
