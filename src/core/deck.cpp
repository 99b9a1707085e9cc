#include "src/core/deck.hpp"

#include <cstdio>
#include <map>

#include "src/core/error.hpp"

namespace gt {

std::string deck_trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string deck_strip_comment(const std::string& s) {
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' && (i == 0 || s[i - 1] != '\\')) in_str = !in_str;
    if (s[i] == '#' && !in_str) return s.substr(0, i);
  }
  return s;
}

// TOML allows no control characters but tab; found by tests/fuzz/fuzz_overrides ("output.dir=a\r" made a
// config.toml that did not load again).
void deck_check_characters(const std::string& line, const std::string& where, bool line_end) {
  for (size_t i = 0; i < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c < 0x20 && c != '\t' && !(line_end && c == '\r' && i + 1 == line.size())) || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      throw Error(where + ": control character " + buf + " at column " + std::to_string(i + 1) +
                  (line_end ? " (not allowed in a deck)" : " (not allowed in a command-line override)"));
    }
  }
}

namespace {
// Where each key and section was first given, for the strict rule's messages.
struct FirstSeen {
  std::map<std::string, int> key, section;
};

std::string header(const std::string& s, const std::string& where, int lineno, bool strict, FirstSeen& seen) {
  if (s.back() != ']') throw Error(where + ": malformed section header '" + s + "'");
  const std::string section = deck_trim(s.substr(1, s.size() - 2));
  if (section.empty()) throw Error(where + ": empty section name");
  if (const auto it = seen.section.find(section); strict && it != seen.section.end())
    throw Error(where + ": duplicate section [" + section + "] (first on line " + std::to_string(it->second) + ")");
  seen.section.emplace(section, lineno);
  return section;
}
}  // namespace

std::vector<DeckEntry> read_deck(std::istream& in, const std::string& path, const DeckRules& rules) {
  std::vector<DeckEntry> out;
  FirstSeen seen;
  std::string line, section;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno);
    if (rules.check_characters) deck_check_characters(line, where);
    const std::string s = deck_trim(deck_strip_comment(line));
    if (s.empty()) continue;
    if (s.front() == '[') {
      section = header(s, where, lineno, rules.strict, seen);
      continue;
    }
    const size_t eq = s.find('=');
    if (eq == std::string::npos) throw Error(where + ": expected 'key = value', got '" + s + "'");
    std::string key = deck_trim(s.substr(0, eq));
    if (key.empty()) throw Error(where + ": missing key before '='");
    if (!section.empty()) key = section + "." + key;
    if (const auto it = seen.key.find(key); rules.strict && it != seen.key.end())
      throw Error(where + ": duplicate key '" + key + "' (first set on line " + std::to_string(it->second) + ")");
    seen.key.emplace(key, lineno);
    out.push_back({key, deck_trim(s.substr(eq + 1)), where});
  }
  if (in.bad()) throw Error("cannot read '" + path + "'");
  return out;
}

}  // namespace gt
