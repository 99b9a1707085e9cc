#pragma once
// Byte-level tokenizer: token id = byte value, vocabulary 256. The end-of-document id is 0 (the NUL byte,
// which UTF-8 text does not contain); a document that does contain NUL still round-trips exactly, because
// document boundaries are stored in doc_offsets, not inferred from the separator.
#include "src/data/tokenizer.hpp"

namespace gt {

class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int kEot = 0;
  std::string name() const override { return "byte"; }
  int vocab_size() const override { return 256; }
  int eot_id() const override { return kEot; }
  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::string decode(const int32_t* ids, size_t n) const override;
  size_t safe_prefix(std::string_view text) const override { return text.size(); }
};

}  // namespace gt
