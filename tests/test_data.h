// Shared test inputs built from the real data (../shared/data) and small file helpers: one
// definition each, so that the test files of one executable can share a unity build.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace dialtree::testing {

// True in a build under AddressSanitizer or ThreadSanitizer (gcc defines __SANITIZE_*__, clang
// answers __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

/// Writes `content` to `path` byte for byte (a test input file).
inline void write_text(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f << content;
}

/// Path of DialoGLUE's bert-base-uncased vocabulary (30,522 lines).
inline std::string bert_vocab() {
  return shared_data("dialoglue/bert-base-uncased-vocab.txt");
}

/// bert-base-uncased's vocabulary plus capitalised forms of its first 3000 all-letter words
/// ("May" among them), written into `tmp`: a cased vocabulary in which "may" keeps id 2089.
inline std::string cased_vocab(const TempDir& tmp) {
  std::ifstream in(bert_vocab());
  std::vector<std::string> lines, upper;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    const bool word = line.size() >= 2 &&
                      line.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos;
    if (word && upper.size() < 3000) upper.push_back(char(line[0] - 'a' + 'A') + line.substr(1));
  }
  const std::string path = tmp.file("cased-vocab.txt");
  std::ofstream out(path);
  for (const auto& l : lines) out << l << '\n';
  for (const auto& l : upper) out << l << '\n';
  return path;
}

/// DialoGLUE's official answer key, gt_test.json, parsed once.
inline const nlohmann::json& answer_key() {
  static const nlohmann::json* key = [] {
    std::ifstream in(shared_data("dialoglue/gt_test.json"));
    return new nlohmann::json(nlohmann::json::parse(in));
  }();
  return *key;
}

/// A score as DialoGLUE prints it: value × 100 with "%.2f".
inline std::string percent(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", value * 100);
  return buf;
}

/// Largest |a[i] - b[i]|; fails the test when the sizes differ.
inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0.0f;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace dialtree::testing
