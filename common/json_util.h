// Typed, path-aware access to nlohmann::json values (docs/failure-cases.md C08): every failure
// names the file, the record, the JSON path, the expected type and the type found.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dialtree {

using json = nlohmann::json;

/// Where a JSON value came from, for error messages: file and "record N" / "line N".
struct JsonPlace {
  std::string file;
  std::string where;
};

/// JSON type name as a user reads it: "string", "integer", "number", "object", ...
std::string json_type_name(const json& v);

/// Child `key` of object `obj` (whose own path is `path`, "" for the root).
/// @throws SchemaError if `obj` is not an object or `key` is missing.
const json& json_require(const json& obj, std::string_view key, const JsonPlace& place,
                         const std::string& path);
/// Child `key` or nullptr when absent. @throws SchemaError if `obj` is not an object.
const json* json_find(const json& obj, std::string_view key, const JsonPlace& place,
                      const std::string& path);

/// `v` as a string / integer / bool; `path` is v's own JSON path.
/// @throws SchemaError naming the path, the expected and the actual type; json_as_int throws
///   DataError "integer N is out of range" for an unsigned integer above INT64_MAX (it used to
///   wrap to a negative number).
std::string json_as_string(const json& v, const JsonPlace& place, const std::string& path);
std::int64_t json_as_int(const json& v, const JsonPlace& place, const std::string& path);
bool json_as_bool(const json& v, const JsonPlace& place, const std::string& path);
/// Asserts `v` is an array / object and returns it. @throws SchemaError otherwise.
const json& json_as_array(const json& v, const JsonPlace& place, const std::string& path);
const json& json_as_object(const json& v, const JsonPlace& place, const std::string& path);

/// "a.b" / "a[3]" path joining.
std::string json_child_path(const std::string& parent, std::string_view key);
std::string json_index_path(const std::string& parent, std::size_t index);

/// Parses a whole JSON file. @throws DataError with the line and column of a syntax error or of
/// a number beyond double's range, or when the file cannot be read.
json json_parse_file(const std::string& path);

/// Parses `text`, the contents of the file `path` (named in errors only).
/// @throws DataError with the line and column of a syntax error or of a number beyond double's
///   range, as json_parse_file does.
json json_parse_text(const std::string& text, const std::string& path);

/// The 0-based byte offset in `text` where parsing it as JSON fails, or nullopt when `text`
/// parses: for a number beyond double's range its first byte; for a syntax error the byte the
/// parser stopped at, json::parse_error::byte - 1 (`text.size()` when the text ends early, the
/// last byte of a multi-byte token). It parses `text` again (SAX, nothing built), so call it on
/// the error path only: for errors whose exception carries no place, such as a number beyond
/// double's range ("1e400", json::out_of_range 406).
std::optional<std::size_t> json_error_offset(std::string_view text);

/// nlohmann's message of `e` without its "[json.exception.parse_error.101] " tag, input bytes
/// escaped, for a message that a user reads (the HTTP server's invalid_json errors).
std::string json_exception_message(const json::exception& e);

/// Calls `fn(line_number, value)` for each non-blank line of a JSON-lines file (1-based line
/// numbers). With `unfinished_last_line` set, a last line that has no newline and is not valid
/// JSON (a writer stopped mid-line: a running or killed training) is skipped and its number
/// stored there (0 when there is none); without it, that line is an error like any other.
/// @throws DataError naming the line of a syntax error (and its column) or of a number beyond
///   double's range (and its column), or a read failure.
void json_for_each_line(const std::string& path,
                        const std::function<void(std::size_t, const json&)>& fn,
                        std::size_t* unfinished_last_line = nullptr);

/// Reads a whole file into a string. @throws DataError if it cannot be opened or read, naming
///   the reason ("is a directory, not a file", "cannot open file for reading: Permission
///   denied", "read error: ...").
std::string read_file_bytes(const std::string& path);

}  // namespace dialtree
