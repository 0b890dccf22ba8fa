// Typed, path-aware access to simdjson DOM values (docs/failure-cases.md C08), the fast counterpart
// of common/json_util.h: the same checks and the same error messages (file, record, JSON path,
// expected type, type found), but the JSON path is only rendered when an error is thrown.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "common/json_util.h"

namespace dialtree {

/// A JSON path built on the stack while walking a document, rendered to text (as
/// json_child_path / json_index_path would) only for an error message. A node refers to its
/// parent and to its key without owning them: both must outlive it, so name every level of the
/// walk as a local variable and never keep a node built from a temporary.
class JsonPathRef {
 public:
  /// The top of a walk. `label` is what the path reads when the error is about the top value
  /// itself ("(root)", "(record)"); the top contributes nothing to the paths of its children, so
  /// child "turns" of the top reads "turns" (as json_child_path("", "turns") does).
  explicit JsonPathRef(std::string_view label = "(root)") noexcept : label_(label) {}
  /// Member `key` of the object at `parent`: "parent.key", or "key" under the top.
  JsonPathRef(const JsonPathRef& parent, std::string_view key) noexcept
      : parent_(&parent), key_(key), is_key_(true) {}
  /// Element `index` of the array at `parent`: "parent[index]", or "[index]" under the top.
  JsonPathRef(const JsonPathRef& parent, std::size_t index) noexcept
      : parent_(&parent), index_(index) {}

  /// The path as text, e.g. "turns[3].frames[0].slots[1].exclusive_end"; the label for the top.
  std::string str() const;

 private:
  void append_to(std::string& out) const;  // "" for the top

  const JsonPathRef* parent_ = nullptr;  // null for the top
  std::string_view label_;               // top only
  std::string_view key_;                 // member nodes only
  std::size_t index_ = 0;                // element nodes only
  bool is_key_ = false;
};

/// JSON type name as a user reads it, the same names as json_type_name: "string", "integer"
/// (signed or unsigned), "number", "object", "array", "boolean", "null".
std::string sj_type_name(simdjson::dom::element v);

/// Asserts `v` (at `path`) is an object / array and returns it.
/// @throws SchemaError naming the path, the expected and the actual type, in json_as_object's
///   words, e.g. "field 'turns[0]': must be an object, got string \"x\"".
simdjson::dom::object sj_as_object(simdjson::dom::element v, const JsonPlace& place,
                                   const JsonPathRef& path);
simdjson::dom::array sj_as_array(simdjson::dom::element v, const JsonPlace& place,
                                 const JsonPathRef& path);

/// `v` (at `path`) as a string / integer / bool. The string view points into the parser's
/// document and is valid until the parser parses again. A number with a fraction or an exponent
/// is a "number", not an integer.
/// @throws SchemaError naming the path, the expected and the actual type; sj_as_int throws
///   DataError "integer N is out of range", as json_as_int does, for an unsigned integer above
///   INT64_MAX.
std::string_view sj_as_string(simdjson::dom::element v, const JsonPlace& place,
                              const JsonPathRef& path);
std::int64_t sj_as_int(simdjson::dom::element v, const JsonPlace& place, const JsonPathRef& path);
bool sj_as_bool(simdjson::dom::element v, const JsonPlace& place, const JsonPathRef& path);

/// Member `key` of `obj`, or std::nullopt when absent. When the key occurs more than once the
/// last occurrence wins, as with nlohmann::json::parse.
std::optional<simdjson::dom::element> sj_find(simdjson::dom::object obj, std::string_view key);

/// Members `keys[i]` of `obj` in one pass over its fields (cheaper than one sj_find per key on a
/// hot path): element i is std::nullopt when `keys[i]` is absent, the last occurrence otherwise.
template <std::size_t N>
std::array<std::optional<simdjson::dom::element>, N> sj_find_all(
    simdjson::dom::object obj, const std::array<std::string_view, N>& keys) {
  std::array<std::optional<simdjson::dom::element>, N> found;
  for (simdjson::dom::key_value_pair field : obj) {
    for (std::size_t i = 0; i < N; ++i) {
      if (field.key == keys[i]) {
        found[i] = field.value;
        break;
      }
    }
  }
  return found;
}

/// Member `key` of `obj` (whose own path is `obj_path`); the last occurrence of a repeated key.
/// @throws SchemaError "field 'obj_path.key': is missing" when absent.
simdjson::dom::element sj_require(simdjson::dom::object obj, std::string_view key,
                                  const JsonPlace& place, const JsonPathRef& obj_path);
/// The member `key` that sj_find / sj_find_all found (`found`) in the object at `obj_path`.
/// @throws SchemaError "field 'obj_path.key': is missing" when `found` is empty.
simdjson::dom::element sj_require(const std::optional<simdjson::dom::element>& found,
                                  std::string_view key, const JsonPlace& place,
                                  const JsonPathRef& obj_path);

/// Reads and parses JSON files with simdjson, one at a time, reusing the memory of the parser
/// and of the file buffer from one file to the next.
class SjFileParser {
 public:
  /// Reads and parses the whole file `path`; the result lives in this parser and is valid until
  /// the next call. Accepts exactly what json_parse_file accepts, with the same errors: a leading
  /// UTF-8 byte order mark is skipped, the whole text must be valid UTF-8, nesting deeper than
  /// simdjson's default limit (1024 levels) is allowed, and on a syntax error the text is parsed
  /// again with nlohmann::json for its precise message ("line L, column C: invalid JSON: ...").
  /// Text that nlohmann accepts but simdjson rejects (an integer beyond 64 bits, which nlohmann
  /// reads as a floating-point number) is taken through nlohmann and parsed again from its
  /// serialisation, so such values keep nlohmann's types.
  /// @throws DataError if the file cannot be opened or read, or is not valid JSON.
  simdjson::dom::element parse(const std::string& path);

 private:
  simdjson::dom::parser parser_;
  std::string text_;  // the last file read, with SIMDJSON_PADDING spare capacity
};

}  // namespace dialtree
