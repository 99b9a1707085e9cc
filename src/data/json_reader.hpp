#pragma once
// A small JSON reader for exactly what encoder.json is: one object mapping strings to integers.
// Handles all string escapes (\" \\ \/ \b \f \n \r \t \uXXXX with surrogate pairs) and whitespace;
// anything else (nested values, floats) is an error naming the file and byte offset.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gt {

std::vector<std::pair<std::string, int64_t>> parse_json_string_int_object(const std::string& text,
                                                                         const std::string& file);

}  // namespace gt
