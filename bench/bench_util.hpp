#pragma once
// Small helpers shared by the benchmark programs: run a shell command for a figure of the machine (load
// average, dd, date) and escape text for the JSON files the programs write.
#include <cstdio>
#include <string>

namespace gt::bench {

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

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace gt::bench
