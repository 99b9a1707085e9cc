#include "src/data/json_reader.hpp"

#include "src/core/error.hpp"

namespace gt {

namespace {

struct Parser {
  const std::string& s;
  const std::string& file;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file + ": bad JSON at byte " + std::to_string(i) + ": " + what);
  }
  void skip_ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  void expect(char c) {
    skip_ws();
    if (i >= s.size() || s[i] != c) fail(std::string("expected '") + c + "'");
    ++i;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i + 4 > s.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[i++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      const char c = s[i++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      const char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair encodes one code point above U+FFFF
            if (i + 2 > s.size() || s[i] != '\\' || s[i + 1] != 'u') fail("lone high surrogate");
            i += 2;
            const uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
  }
  int64_t integer() {
    skip_ws();
    const size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start || (i == start + 1 && s[start] == '-')) fail("expected an integer");
    if (i < s.size() && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) fail("expected an integer, got a number");
    return std::stoll(s.substr(start, i - start));
  }
};

}  // namespace

std::vector<std::pair<std::string, int64_t>> parse_json_string_int_object(const std::string& text,
                                                                         const std::string& file) {
  Parser p{text, file};
  std::vector<std::pair<std::string, int64_t>> out;
  p.expect('{');
  p.skip_ws();
  if (p.i < text.size() && text[p.i] == '}') {
    ++p.i;
  } else {
    while (true) {
      std::string key = p.string();
      p.expect(':');
      out.emplace_back(std::move(key), p.integer());
      p.skip_ws();
      if (p.i < text.size() && text[p.i] == ',') { ++p.i; continue; }
      p.expect('}');
      break;
    }
  }
  p.skip_ws();
  if (p.i != text.size()) p.fail("trailing characters after the object");
  return out;
}

}  // namespace gt
