// Helpers shared by the libFuzzer targets of tests/fuzz (docs/build.md "Guard build").
//
// A target feeds its input to a real reader and accepts only the exceptions that reader
// documents (dialtree::DataError and its SchemaError, or the serve API's ApiError). Anything else
// escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer reports the input as a
// crash, as it does for a sanitizer report, a timeout or running out of memory.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dialtree::fuzz {

/// The fuzz input as a string (bytes verbatim, NULs included).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A config reader's input: the YAML text, then NUL-separated `key=value` overrides.
struct ConfigInput {
  std::string yaml;
  std::vector<std::string> overrides;
};

/// Splits the fuzz input at its NULs: the first part is the YAML text, each later one an override.
inline ConfigInput split_config_input(std::string_view input) {
  const std::size_t nul = input.find('\0');
  ConfigInput out{std::string(input.substr(0, nul)), {}};
  for (std::size_t at = nul; at != std::string_view::npos;) {
    const std::size_t next = input.find('\0', at + 1);
    out.overrides.emplace_back(
        input.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  return out;
}

/// A temporary file that holds the current input, for readers that only take a path. One per
/// target and process (the name has the process id), rewritten for every input, removed at exit.
class InputFile {
 public:
  /// `name`: the file name's tail, e.g. "train.csv" (some readers look at the extension).
  explicit InputFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("dialtree-fuzz-" + std::to_string(::getpid()) + "-" + name))
                  .string()) {}
  ~InputFile() { std::remove(path_.c_str()); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Replaces the file's content with `bytes` and returns its path. Aborts when the file cannot
  /// be written: that is a broken harness, which must not pass as a finding-free run.
  const std::string& write(std::string_view bytes) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f)) {
      std::perror(path_.c_str());
      std::abort();
    }
    return path_;
  }

 private:
  std::string path_;
};

/// Runs `fn`; a DataError (malformed input, the documented outcome) is swallowed, any other
/// exception propagates and so fails the run.
template <typename Fn>
void allow_data_errors(Fn&& fn) {
  try {
    fn();
  } catch (const DataError&) {
  }
}

}  // namespace dialtree::fuzz
