// Byte tokenizer: id = byte value, so decode(encode(text)) == text for any bytes (invalid UTF-8, NUL, all 256
// values), and the ids themselves are the bytes.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/data/tokenizer.hpp"
#include "src/data/tokenizer_byte.hpp"

using namespace gt;

namespace {
std::string roundtrip(Tokenizer& tok, const std::string& text, std::vector<int32_t>* ids_out = nullptr) {
  std::vector<int32_t> ids;
  tok.encode(text, ids);
  if (ids_out) *ids_out = ids;
  return tok.decode(ids.data(), ids.size());
}
}  // namespace

TEST(ByteTokenizer, IdsAreTheBytes) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.name(), "byte");
  EXPECT_EQ(tok.vocab_size(), 256);
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  std::vector<int32_t> ids;
  EXPECT_EQ(roundtrip(tok, all, &ids), all);
  ASSERT_EQ(ids.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ids[size_t(b)], b);
  // "Hé": 'H' = 72, é = U+00E9 = C3 A9 in UTF-8
  ids.clear();
  tok.encode("H\xC3\xA9", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{72, 0xC3, 0xA9}));
}

TEST(ByteTokenizer, RoundTripsArbitraryBytes) {
  ByteTokenizer tok;
  const std::vector<std::string> cases = {
      "",
      std::string("\0", 1),
      std::string("a\0b\0\0c", 6),
      "\xC3\x28",                          // invalid 2-byte sequence
      "\xE2\x82",                          // truncated 3-byte sequence
      "\xF0\x9F\x98",                      // truncated 4-byte sequence
      "\xED\xA0\x80",                      // UTF-16 surrogate encoded in UTF-8 (invalid)
      "\xC0\xAF",                          // overlong '/'
      "\xFF\xFE\xFD",                      // bytes never valid in UTF-8
      "\x80\x80\x80",                      // lone continuation bytes
      "plain ASCII text\n\twith tabs\r\n",
      "\xF0\x9F\x91\x8B \xE4\xB8\x96\xE7\x95\x8C",  // valid 4-byte and 3-byte characters
  };
  for (const std::string& c : cases) EXPECT_EQ(roundtrip(tok, c), c) << "case of " << c.size() << " bytes";
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::string s(size_t(rng() % 300), '\0');
    for (char& ch : s) ch = char(rng() & 0xFF);
    ASSERT_EQ(roundtrip(tok, s), s) << "random trial " << trial;
  }
}

TEST(ByteTokenizer, RejectsIdsOutsideTheVocabulary) {
  ByteTokenizer tok;
  for (int32_t bad : {-1, 256, 50256}) {
    const int32_t ids[2] = {65, bad};
    EXPECT_THROW(tok.decode(ids, 2), Error) << bad;
  }
}

TEST(ByteTokenizer, MadeByName) {
  EXPECT_EQ(make_tokenizer("byte", "")->name(), "byte");
  try {
    make_tokenizer("sentencepiece", "");
    FAIL() << "no error for an unknown tokenizer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sentencepiece"), std::string::npos) << e.what();
  }
}
