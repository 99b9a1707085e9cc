#include "src/core/json.hpp"

#include <cmath>
#include <cstdio>

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
  // A number, true, false or null, as its text.
  std::string scalar() {
    skip_ws();
    const size_t b = i;
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
           s[i] != '\r' && s[i] != '\t')
      ++i;
    if (i == b) fail("expected a value");
    return s.substr(b, i - b);
  }
  // An array, skipped whole (strings inside it respected).
  void skip_array() {
    expect('[');
    for (int depth = 1; depth > 0;) {
      if (i >= s.size()) fail("unterminated array");
      if (s[i] == '"') { string(); continue; }
      if (s[i] == '[') ++depth;
      if (s[i] == ']') --depth;
      ++i;
    }
  }
  // An object's members into `out`, nested objects as "outer.inner".
  void flat_object(const std::string& prefix, std::map<std::string, std::string>& out) {
    expect('{');
    skip_ws();
    if (i < s.size() && s[i] == '}') { ++i; return; }
    for (;;) {
      const std::string key = prefix + string();
      expect(':');
      skip_ws();
      if (i < s.size() && s[i] == '"') out[key] = string();
      else if (i < s.size() && s[i] == '{') flat_object(key + ".", out);
      else if (i < s.size() && s[i] == '[') skip_array();
      else out[key] = scalar();
      skip_ws();
      if (i < s.size() && s[i] == ',') { ++i; continue; }
      expect('}');
      return;
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

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o;
}

JsonObject& JsonObject::num(const std::string& k, double v) {
  char buf[64];
  if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.17g", v);  // round-trips doubles exactly
  else std::snprintf(buf, sizeof buf, "null");
  kv_.emplace_back(k, buf);
  return *this;
}
JsonObject& JsonObject::integer(const std::string& k, long long v) {
  kv_.emplace_back(k, std::to_string(v));
  return *this;
}
JsonObject& JsonObject::str(const std::string& k, const std::string& v) {
  kv_.emplace_back(k, "\"" + json_escape(v) + "\"");
  return *this;
}
JsonObject& JsonObject::raw(const std::string& k, const std::string& json) {
  kv_.emplace_back(k, json);
  return *this;
}
std::string JsonObject::dump() const {
  std::string o = "{";
  for (size_t i = 0; i < kv_.size(); ++i) {
    if (i) o += ", ";
    o += "\"" + json_escape(kv_[i].first) + "\": " + kv_[i].second;
  }
  return o + "}";
}

std::map<std::string, std::string> parse_flat_json(const std::string& text, const std::string& file) {
  Parser p{text, file};
  std::map<std::string, std::string> out;
  p.flat_object("", out);
  p.skip_ws();
  if (p.i != text.size()) p.fail("trailing characters after the object");
  return out;
}

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
