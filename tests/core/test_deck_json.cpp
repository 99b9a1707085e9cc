// The shared readers of src/core (issue #20, debt 2): the deck reader's rules (sections, comments outside
// strings, TOML's no-repeat rule and its lenient form for old run directories, control characters) and the JSON
// module's round trip (what JsonObject writes, parse_flat_json reads back, escapes included). Expected values
// are the inputs themselves.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "src/core/deck.hpp"
#include "src/core/error.hpp"
#include "src/core/json.hpp"

namespace {

std::vector<gt::DeckEntry> read(const std::string& text, gt::DeckRules rules = {}) {
  std::istringstream in(text);
  return gt::read_deck(in, "d.toml", rules);
}

std::string error_of(const std::string& text, gt::DeckRules rules = {}) {
  try {
    read(text, rules);
  } catch (const gt::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Deck, SectionsCommentsAndRawValues) {
  const auto e = read("top = 1\n[model] # the model\nname = \"a # not a comment\"  # a comment\n\nl = [1, 2]\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].key, "top");
  EXPECT_EQ(e[1].key, "model.name");
  EXPECT_EQ(e[1].value, "\"a # not a comment\"");
  EXPECT_EQ(e[1].where, "d.toml:3");
  EXPECT_EQ(e[2].value, "[1, 2]");
}

TEST(Deck, RepeatsAreRefusedUnlessLenient) {
  EXPECT_NE(error_of("[a]\nx = 1\nx = 2\n").find("d.toml:3: duplicate key 'a.x' (first set on line 2)"),
            std::string::npos);
  EXPECT_NE(error_of("[a]\n[b]\n[a]\n").find("d.toml:3: duplicate section [a] (first on line 1)"), std::string::npos);
  gt::DeckRules lenient;
  lenient.strict = false;
  EXPECT_EQ(read("[a]\nx = 1\n[b]\ny = 2\n[a]\nz = 3\n", lenient).size(), 3u);
}

TEST(Deck, MalformedLinesNameTheLine) {
  EXPECT_NE(error_of("[a\n").find("d.toml:1: malformed section header"), std::string::npos);
  EXPECT_NE(error_of("x\n").find("d.toml:1: expected 'key = value'"), std::string::npos);
  EXPECT_NE(error_of(" = 3\n").find("d.toml:1: missing key"), std::string::npos);
  EXPECT_NE(error_of(std::string("x = 1\x01\n")).find("control character 0x01"), std::string::npos);
  EXPECT_EQ(read("x = 1\r\n").at(0).value, "1");  // a CRLF file reads
}

TEST(Json, WhatTheWriterWritesTheFlatReaderReads) {
  gt::JsonObject inner;
  inner.integer("n", 3);
  gt::JsonObject o;
  o.num("x", 0.1).integer("i", -7).str("s", "a\"b\\c\nd\te").raw("list", "[1, [2, \"]\"]]").raw("in", inner.dump());
  o.num("nan", 0.0 / 0.0);
  const auto j = gt::parse_flat_json(o.dump(), "o.json");
  EXPECT_EQ(std::stod(j.at("x")), 0.1);  // %.17g round-trips
  EXPECT_EQ(j.at("i"), "-7");
  EXPECT_EQ(j.at("s"), "a\"b\\c\nd\te");
  EXPECT_EQ(j.count("list"), 0u);  // arrays are skipped whole
  EXPECT_EQ(j.at("in.n"), "3");
  EXPECT_EQ(j.at("nan"), "null");
}

TEST(Json, BadTextNamesTheFile) {
  for (const char* bad : {"{\"a\": 1", "{\"a\" 1}", "{\"a\": }", "{\"a\": 1} x", "{\"a\": \"\\q\"}"}) {
    try {
      gt::parse_flat_json(bad, "s.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const gt::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("s.json: bad JSON at byte ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
