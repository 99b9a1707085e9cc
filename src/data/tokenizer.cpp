#include "src/data/tokenizer.hpp"

#include "src/core/error.hpp"
#include "src/data/tokenizer_byte.hpp"
#include "src/data/tokenizer_gpt2.hpp"

namespace gt {

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const std::string& bpe_dir) {
  if (name == "byte") return std::make_unique<ByteTokenizer>();
  if (name == "gpt2") return std::make_unique<GPT2Tokenizer>(bpe_dir);
  throw Error("unknown tokenizer '" + name + "' (expected byte or gpt2)");
}

}  // namespace gt
