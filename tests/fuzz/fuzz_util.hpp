#pragma once
// Shared by the libFuzzer targets: the readers under test take a path, so each input is written to one scratch
// file per process (in $TMPDIR) first. A gt::Error is the documented answer to bad input; any other exception
// escaping a reader (std::out_of_range, std::bad_alloc, ...) would reach the user as "internal error" and is a
// finding: the targets let it propagate, and libFuzzer reports the uncaught exception as a crash.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/core/error.hpp"

namespace gt::fuzz {

// Runs f on the input: true if it ran through, false if it rejected the input with gt::Error. Any other exception
// propagates (a finding).
template <class F>
bool accepted(F&& f) {
  try {
    f();
    return true;
  } catch (const gt::Error&) {
    return false;
  }
}

// <TMPDIR>/gt_fuzz_<tag>_<pid>: the same file for every input of this process (overwritten each time).
inline const std::string& scratch_path(const char* tag) {
  static const std::string path = [tag] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/gt_fuzz_" + tag + "_" + std::to_string(getpid());
  }();
  return path;
}

inline const std::string& write_input(const char* tag, const uint8_t* data, size_t size) {
  const std::string& path = scratch_path(tag);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the harness itself is broken (no scratch space): stop rather than fuzz nothing
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace gt::fuzz
