// Paths of the real data (../shared/data) and of tests/fixtures, for tests.
#pragma once

#include <filesystem>
#include <string>

#include <stdlib.h>

#include <gtest/gtest.h>

namespace dialtree::testing {

/// Absolute path of `rel` under the shared data folder, e.g. "dialoglue/banking/train.csv".
/// Fails the test (never skips) when the data is absent: CI always has ../shared.
inline std::string shared_data(const std::string& rel) {
  std::filesystem::path p = std::filesystem::path(DIALTREE_SHARED_DIR) / "data" / rel;
  EXPECT_TRUE(std::filesystem::exists(p)) << "missing real data: " << p;
  return p.string();
}

/// Absolute path of `rel` under tests/fixtures.
inline std::string fixture(const std::string& rel) {
  return (std::filesystem::path(DIALTREE_FIXTURES_DIR) / rel).string();
}

/// A fresh, empty temporary directory for one test, removed by the caller's TempDir.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dialtree-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace dialtree::testing
