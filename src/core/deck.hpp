#pragma once
// One reader for the TOML subset every deck here uses: input decks (Config), cluster descriptions (plan),
// a run's config.toml read back by calibrate and by a checkpoint's resume check. Before it there were four
// hand-written loops, each with its own comment stripping and duplicate rules (issue #20, debt 2).
//   [section]          a header; keys below it are "section.key"
//   key = value        the value is kept raw (quotes and brackets included): its meaning is the caller's
//   # comment          outside double quotes, to the end of the line
#include <istream>
#include <string>
#include <vector>

namespace gt {

struct DeckEntry {
  std::string key;    // "section.key", or "key" before any header
  std::string value;  // trimmed, raw
  std::string where;  // "path:line" for error messages
};

struct DeckRules {
  // A repeated key or [section] is an error (TOML's rule; silently letting the last win hid typos in long
  // decks). Off only for old run directories whose config.toml repeated sections.
  bool strict = true;
  // A control character other than tab (and a CRLF's CR) is an error: a NUL or escape byte is damage.
  bool check_characters = true;
};

// All entries in file order; throws gt::Error naming path:line for a malformed line or a broken rule.
std::vector<DeckEntry> read_deck(std::istream& in, const std::string& path, const DeckRules& rules = {});

// Shared pieces for readers of single assignments (command-line overrides).
std::string deck_trim(const std::string& s);
std::string deck_strip_comment(const std::string& s);
// line_end: a trailing CR (of a CRLF file) is allowed, as in a deck line; never in a command-line override,
// where it would become part of the value.
void deck_check_characters(const std::string& line, const std::string& where, bool line_end = true);

}  // namespace gt
