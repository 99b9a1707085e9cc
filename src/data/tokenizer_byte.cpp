#include "src/data/tokenizer_byte.hpp"

#include "src/core/error.hpp"

namespace gt {

void ByteTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  out.reserve(out.size() + text.size());
  for (unsigned char c : text) out.push_back(int32_t(c));
}

std::string ByteTokenizer::decode(const int32_t* ids, size_t n) const {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] > 255) throw Error("byte tokenizer: id " + std::to_string(ids[i]) + " out of range");
    s[i] = char(ids[i]);
  }
  return s;
}

}  // namespace gt
