// Error types shared by every dialtree library.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace dialtree {

/// Malformed input data. The message always names the file, the place inside it (a 1-based
/// line, or a 0-based record index for JSON sources) and the field, e.g.
/// `train.csv: line 17: field 'category': label 'chitchat' not in categories.json`.
class DataError : public std::runtime_error {
 public:
  /// @param file   path of the offending file as the user gave it
  /// @param where  human-readable place, e.g. "line 17" or "record 3" (may be empty)
  /// @param field  field or JSON path, e.g. "labels[0].valueSpan.endIndex" (may be empty)
  /// @param message what is wrong
  DataError(std::string file, std::string where, std::string field, std::string message);

  const std::string& file() const noexcept { return file_; }
  const std::string& where() const noexcept { return where_; }
  const std::string& field() const noexcept { return field_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string file_, where_, field_, detail_;
};

/// A JSON value of the wrong type or shape (CASES.md C08): the message names the JSON path, the
/// expected type and the type found.
class SchemaError : public DataError {
 public:
  using DataError::DataError;
};

/// Tokenizer misuse: unknown id, bad model file, untrainable corpus (CASES.md C14, C15).
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "line N" for a 1-based line number.
std::string at_line(std::size_t line);
/// "record N" for a 0-based record index.
std::string at_record(std::size_t index);

}  // namespace dialtree
