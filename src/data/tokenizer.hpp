#pragma once
// Text <-> token ids. Two tokenizers: "byte" (tokenizer_byte.hpp) and "gpt2" (tokenizer_gpt2.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;  // "byte" or "gpt2": the dataset's tokenizer attribute
  virtual int vocab_size() const = 0;
  virtual int eot_id() const = 0;        // appended after every document
  // Appends the ids of `text` to `out`. Not const: the GPT-2 tokenizer caches merges of frequent words.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) = 0;
  virtual std::string decode(const int32_t* ids, size_t n) const = 0;
  // For streaming: the length of the longest prefix of `text` (a chunk of a longer document) whose encoding
  // is the same alone as in context; 0 when the chunk has no such point (the caller then reads more).
  virtual size_t safe_prefix(std::string_view text) const = 0;
};

// "byte" or "gpt2" (which reads bpe_dir/encoder.json and bpe_dir/vocab.bpe); gt::Error otherwise.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const std::string& bpe_dir);

}  // namespace gt
