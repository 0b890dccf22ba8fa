// Small helpers shared by the readers tests.
#pragma once

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "expect_error.h"

namespace dialtree::testing {

/// Writes `bytes` to `path` verbatim (binary).
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// `text` with the first occurrence of `from` replaced by `to`; fails the test if absent.
inline std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  std::size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "'" << from << "' not found";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

}  // namespace dialtree::testing
