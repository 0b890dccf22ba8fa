// Small helpers shared by the readers tests.
#pragma once

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace dialtree::testing {

/// Writes `bytes` to `path` verbatim (binary).
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

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

/// `text` with the first occurrence of `from` replaced by `to`; fails the test if absent.
inline std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "'" << from << "' not found";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

}  // namespace dialtree::testing
