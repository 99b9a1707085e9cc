#pragma once
// The check of the tests of bad input: an action throws gt::Error, and its message says what is wrong.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "src/core/error.hpp"

namespace gt_test {

// f must throw gt::Error whose message contains part.
inline void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "no error; expected one containing: " << part;
  } catch (const gt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace gt_test
