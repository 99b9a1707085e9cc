#pragma once
// A whole file as text, for the tests that read what a run or a checkpoint save wrote ("" when it cannot be read).
#include <fstream>
#include <iterator>
#include <string>

namespace gt_test {

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace gt_test
