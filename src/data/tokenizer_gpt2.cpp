#include "src/data/tokenizer_gpt2.hpp"

#include <fstream>
#include <sstream>

#include "src/core/error.hpp"
#include "src/core/json.hpp"
#include "src/data/tokenizer_byte.hpp"
#include "src/data/unicode.hpp"

namespace gt {

// ---- pre-tokenisation ------------------------------------------------------------------------------------

void gpt2_pretokenize(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) {
  pieces.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t nbytes = text.size();
  // code points of the text: class, first byte, and the ASCII value (0 when not ASCII)
  std::vector<CharClass> cls;
  std::vector<size_t> off;
  std::vector<char> ascii;
  for (size_t b = 0; b < nbytes;) {
    int len = 1;
    const uint32_t cp = utf8_next(p + b, nbytes - b, &len);
    cls.push_back(classify(cp));
    off.push_back(b);
    ascii.push_back(cp < 0x80 ? char(cp) : 0);
    b += size_t(len);
  }
  const size_t n = cls.size();
  off.push_back(nbytes);
  auto run_end = [&](size_t j, CharClass c) {
    while (j < n && cls[j] == c) ++j;
    return j;
  };
  size_t i = 0;
  while (i < n) {
    size_t end = i + 1;
    if (ascii[i] == '\'' && i + 1 < n) {  // contractions 's 't 're 've 'm 'll 'd
      const char a = ascii[i + 1], b = i + 2 < n ? ascii[i + 2] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') end = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) end = i + 3;
      else end = run_end(i, CharClass::Other);
    } else if (cls[i] != CharClass::Space) {  // \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+
      end = run_end(i, cls[i]);
    } else if (ascii[i] == ' ' && i + 1 < n && cls[i + 1] != CharClass::Space) {  // the optional leading space
      end = run_end(i + 1, cls[i + 1]);
    } else {  // \s+(?!\S) | \s+ : a whitespace run leaves its last character to the next piece
      const size_t k = run_end(i, CharClass::Space);
      end = (k == n || k - i == 1) ? k : k - 1;
    }
    pieces.emplace_back(off[i], off[end]);
    i = end;
  }
}

// ---- loading -------------------------------------------------------------------------------------------

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (fetch the GPT-2 files with scripts/fetch_gpt2_bpe.sh)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// GPT-2's reversible byte -> printable code point map: printable Latin-1 bytes map to themselves, the other
// 68 bytes to U+0100 + n in byte order.
void bytes_to_unicode(uint32_t (&cp)[256]) {
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cp[b] = printable ? uint32_t(b) : uint32_t(256 + n++);
  }
}

}  // namespace

GPT2Tokenizer::GPT2Tokenizer(const std::string& dir) {
  const std::string enc_path = dir + "/encoder.json", bpe_path = dir + "/vocab.bpe";
  const auto entries = parse_json_string_int_object(read_whole(enc_path), enc_path);

  // inverse of the byte map: code point -> byte
  uint32_t cp_of[256];
  bytes_to_unicode(cp_of);
  std::unordered_map<uint32_t, int> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[cp_of[b]] = b;

  std::unordered_map<std::string, int32_t> id_of;
  int64_t max_id = -1;
  for (const auto& kv : entries) {
    if (kv.second < 0 || kv.second > 1000000) throw Error(enc_path + ": id out of range for " + kv.first);
    max_id = std::max(max_id, kv.second);
  }
  id_bytes_.assign(size_t(max_id + 1), std::string());
  std::vector<bool> seen(size_t(max_id + 1), false);
  for (const auto& kv : entries) {
    if (seen[size_t(kv.second)]) throw Error(enc_path + ": id " + std::to_string(kv.second) + " appears twice");
    seen[size_t(kv.second)] = true;
    id_of[kv.first] = int32_t(kv.second);
    if (kv.first == "<|endoftext|>") {
      eot_ = int(kv.second);
      continue;
    }
    // the key is UTF-8 of mapped code points; map each back to its byte
    std::string bytes;
    const auto* p = reinterpret_cast<const unsigned char*>(kv.first.data());
    for (size_t b = 0; b < kv.first.size();) {
      int len = 1;
      const uint32_t cp = utf8_next(p + b, kv.first.size() - b, &len);
      auto it = byte_of.find(cp);
      if (it == byte_of.end()) throw Error(enc_path + ": token '" + kv.first + "' is not in GPT-2's byte alphabet");
      bytes += char(it->second);
      b += size_t(len);
    }
    id_bytes_[size_t(kv.second)] = bytes;
  }
  for (size_t id = 0; id < seen.size(); ++id)
    if (!seen[id]) throw Error(enc_path + ": id " + std::to_string(id) + " is missing");
  for (int b = 0; b < 256; ++b) {
    std::string key;
    uint32_t cp = cp_of[b];
    if (cp < 0x80) key += char(cp);
    else { key += char(0xC0 | (cp >> 6)); key += char(0x80 | (cp & 0x3F)); }
    auto it = id_of.find(key);
    if (it == id_of.end()) throw Error(enc_path + ": no token for byte " + std::to_string(b));
    byte_id_[b] = it->second;
  }

  std::istringstream bpe(read_whole(bpe_path));
  std::string line;
  int32_t rank = 0;
  int line_no = 0;
  while (std::getline(bpe, line)) {
    ++line_no;
    if (line_no == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
      throw Error(bpe_path + ":" + std::to_string(line_no) + ": expected two symbols separated by one space");
    const std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    auto ia = id_of.find(a), ib = id_of.find(b), im = id_of.find(a + b);
    if (ia == id_of.end() || ib == id_of.end() || im == id_of.end())
      throw Error(bpe_path + ":" + std::to_string(line_no) + ": merge '" + line + "' uses a symbol not in encoder.json");
    const uint64_t key = (uint64_t(uint32_t(ia->second)) << 32) | uint32_t(ib->second);
    merges_.emplace(key, std::make_pair(rank++, im->second));  // first occurrence keeps its rank
  }
  if (merges_.empty()) throw Error(bpe_path + ": no merges");
}

// ---- encoding ------------------------------------------------------------------------------------------

// in: one piece (bytes)  out: its ids appended. Repeatedly merges every occurrence of the lowest-ranked pair.
void GPT2Tokenizer::bpe(std::string_view piece, std::vector<int32_t>& out) {
  const bool cacheable = piece.size() <= 32;
  if (cacheable) {
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t>& w = work_;
  w.clear();
  for (unsigned char c : piece) w.push_back(byte_id_[c]);
  while (w.size() >= 2) {
    int32_t best_rank = INT32_MAX, left = -1, right = -1, merged = -1;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      auto it = merges_.find((uint64_t(uint32_t(w[i])) << 32) | uint32_t(w[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        left = w[i];
        right = w[i + 1];
        merged = it->second.second;
      }
    }
    if (merged < 0) break;
    size_t o = 0;
    for (size_t i = 0; i < w.size();) {
      if (i + 1 < w.size() && w[i] == left && w[i + 1] == right) {
        w[o++] = merged;
        i += 2;
      } else {
        w[o++] = w[i++];
      }
    }
    w.resize(o);
  }
  out.insert(out.end(), w.begin(), w.end());
  if (cacheable) {
    if (cache_.size() >= (1u << 18)) cache_.clear();  // bounded memory on huge corpora
    cache_.emplace(std::string(piece), w);
  }
}

void GPT2Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  gpt2_pretokenize(text, pieces_);
  for (const auto& pc : pieces_) bpe(text.substr(pc.first, pc.second - pc.first), out);
}

std::string GPT2Tokenizer::decode(const int32_t* ids, size_t n) const {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || size_t(ids[i]) >= id_bytes_.size())
      throw Error("gpt2 tokenizer: id " + std::to_string(ids[i]) + " out of range");
    if (ids[i] == eot_) continue;
    s += id_bytes_[size_t(ids[i])];
  }
  return s;
}

size_t GPT2Tokenizer::safe_prefix(std::string_view text) const {
  for (size_t p = text.size(); p-- > 1;) {
    const unsigned char c = static_cast<unsigned char>(text[p]), prev = static_cast<unsigned char>(text[p - 1]);
    if ((c == ' ' || c == '\n' || c == '\t' || c == '\r') && prev > 0x20 && prev < 0x7F) return p;
  }
  return 0;
}

}  // namespace gt
