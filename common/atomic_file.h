// Atomic file writes: write to a temporary file in the same directory, flush, then rename over
// the target, so a reader never sees a half-written file and a crash never loses the old one.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace dialtree {

/// An output file that appears under its final name only on commit().
/// Destroying it without commit() removes the temporary file and leaves the target untouched.
class AtomicFile {
 public:
  /// Opens `<target>.tmp.<pid>.<n>` for binary writing. @throws std::runtime_error on failure.
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  /// Flushes, closes and renames onto the target. @throws std::runtime_error on I/O failure.
  void commit();

 private:
  std::filesystem::path target_, temp_;
  std::ofstream out_;
  bool done_ = false;
};

/// Writes `content` to `target` atomically. @throws std::runtime_error on failure.
void write_file_atomic(const std::filesystem::path& target, std::string_view content);

}  // namespace dialtree
