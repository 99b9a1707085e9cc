#pragma once
// The one JSON module (issue #20, debt 2): a flat object writer for metrics lines, summaries and bench files,
// and two small readers, both strict about syntax and complete on string escapes (\" \\ \/ \b \f \n \r \t
// \uXXXX with surrogate pairs); an error names the file and the byte offset.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gt {

// A flat JSON object writer: keys in insertion order; doubles round-trip (%.17g), non-finite ones as null.
class JsonObject {
 public:
  JsonObject& num(const std::string& k, double v);
  JsonObject& integer(const std::string& k, long long v);
  JsonObject& str(const std::string& k, const std::string& v);
  JsonObject& raw(const std::string& k, const std::string& json);
  std::string dump() const;

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
};

std::string json_escape(const std::string& s);

// What encoder.json is: one object mapping strings to integers, in file order.
std::vector<std::pair<std::string, int64_t>> parse_json_string_int_object(const std::string& text,
                                                                         const std::string& file);

// What summary.json is: an object of numbers, strings, booleans and null; a nested object's members come out as
// "outer.inner" keys and an array is skipped whole. Values as text (a string without its quotes).
std::map<std::string, std::string> parse_flat_json(const std::string& text, const std::string& file);

}  // namespace gt
