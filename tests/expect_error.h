// error_of<E>(fn): the message of the exception a test expects, for EXPECT_THAT(..., HasSubstr).
#pragma once

#include <exception>
#include <string>

#include <gtest/gtest.h>

namespace dialtree::testing {

/// Runs `fn`, which must throw exactly an `E` (or a subclass); returns what(). Fails the test
/// and returns "" if nothing or something else is thrown.
template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

}  // namespace dialtree::testing
