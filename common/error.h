// Error types shared by every dialtree library.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dialtree {

/// Malformed input data. The message always names the file, the place inside it (a 1-based
/// line, or a 0-based record index for JSON sources) and the field, e.g.
/// `train.csv: line 17: field 'category': label 'chitchat' not in categories.json`. The file,
/// place and field are escaped in the message (escape_for_message), as they may hold user data
/// (JSON keys, dialogue ids); the accessors return them unescaped.
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

/// A JSON value of the wrong type or shape (docs/failure-cases.md C08): the message names the JSON
/// path, the expected type and the type found.
class SchemaError : public DataError {
 public:
  using DataError::DataError;
};

/// Tokenizer misuse: unknown id, bad model file, untrainable corpus (docs/failure-cases.md C14,
/// C15).
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `value` made safe to print inside an error message: valid UTF-8 is kept, except that control
/// characters become escapes (`\n`, `\t`, `\r`, `\x00`...`\x1f`, `\x7f`, `\u0080`...`\u009f`),
/// every byte of invalid UTF-8 becomes `\xNN`, and a backslash or a single quote is escaped
/// (`\\`, `\'`) unless `escape_quotes` is false. A value longer than `max_chars` code points is
/// cut there and ends in "..."
/// (0 = no limit). So an embedded NUL can no longer cut a message short, and raw invalid bytes
/// never reach the terminal.
std::string escape_for_message(std::string_view value, std::size_t max_chars = 0,
                               bool escape_quotes = true);

/// `value` escaped as by escape_for_message() and wrapped in single quotes, e.g. `'a\x00b'`;
/// cut after `max_chars` code points (default 200; 0 = no limit). The one helper for quoting user
/// data (labels, tokens, JSON strings) in error messages.
std::string quote_for_message(std::string_view value, std::size_t max_chars = 200);

/// "line N" for a 1-based line number.
std::string at_line(std::size_t line);
/// "record N" for a 0-based record index.
std::string at_record(std::size_t index);

}  // namespace dialtree
