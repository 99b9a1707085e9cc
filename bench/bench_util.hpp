#pragma once
// Small helpers shared by the benchmark programs: run a shell command for a figure of the machine (load
// average, dd, date), and write the JSON files the programs write (rows of an array, escaped text).
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "src/core/json.hpp"

namespace gt::bench {

// The median of the timings (the mean of the two middle ones for an even count; 0 for none).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0.0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The command's standard output, trailing newlines and spaces removed ("" if it cannot run).
inline std::string shell_line(const std::string& cmd) {
  std::string s;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) s += buf;
    pclose(p);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Writes text to path; on failure says so on stderr as "<program>: cannot write <path>" (the figures were
// printed already, so a benchmark goes on).
inline void write_text(const std::string& path, const std::string& text, const char* program) {
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
  }
}

// Appends one element, printf-formatted (at most 255 characters), to the JSON array being written at the end of
// json: a comma before every element but the first (first is cleared).
__attribute__((format(printf, 3, 4))) inline void append_row(std::string& json, bool& first, const char* fmt, ...) {
  char row[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(row, sizeof row, fmt, args);
  va_end(args);
  if (!first) json += ",";
  json += row;
  first = false;
}

using ::gt::json_escape;  // src/core/json.hpp: one escape for every JSON this project writes

}  // namespace gt::bench
