#include "common/json_util.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/input_file.h"

namespace dialtree {

std::string json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    default:
      return "binary";
  }
}

namespace {
[[noreturn]] void type_mismatch(const json& v, const JsonPlace& place, const std::string& path,
                                const char* expected) {
  std::string got = json_type_name(v);
  if (v.is_string()) got += " " + v.dump();
  throw SchemaError(place.file, place.where, path,
                    std::string("must be ") + expected + ", got " + got);
}
}  // namespace

std::string json_child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}
std::string json_index_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

const json* json_find(const json& obj, std::string_view key, const JsonPlace& place,
                      const std::string& path) {
  if (!obj.is_object()) type_mismatch(obj, place, path.empty() ? "(root)" : path, "an object");
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const json& json_require(const json& obj, std::string_view key, const JsonPlace& place,
                         const std::string& path) {
  const json* v = json_find(obj, key, place, path);
  if (!v) throw SchemaError(place.file, place.where, json_child_path(path, key), "is missing");
  return *v;
}

std::string json_as_string(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_string()) type_mismatch(v, place, path, "a string");
  return v.get<std::string>();
}

std::int64_t json_as_int(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_number_integer()) type_mismatch(v, place, path, "an integer");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    throw DataError(place.file, place.where, path,
                    "integer " + std::to_string(v.get<std::uint64_t>()) +
                        " is out of range (at most " + std::to_string(INT64_MAX) + ")");
  }
  return v.get<std::int64_t>();
}

bool json_as_bool(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_boolean()) type_mismatch(v, place, path, "a boolean");
  return v.get<bool>();
}

const json& json_as_array(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_array()) type_mismatch(v, place, path, "an array");
  return v;
}

const json& json_as_object(const json& v, const JsonPlace& place, const std::string& path) {
  if (!v.is_object()) type_mismatch(v, place, path, "an object");
  return v;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in;
  open_input_file_or_throw(in, path);
  std::ostringstream ss;
  errno = 0;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(path, "", "", std::string("read error: ") + std::strerror(errno));
  return ss.str();
}

namespace {
// 1-based line and column of byte offset `pos` in `text`.
std::string line_col(const std::string& text, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// nlohmann's message for a DataError that names the place itself: without the
// "[json.exception.parse_error.101] " tag and the "parse error at line 1, column 18: " head (for
// one line of a JSONL file its "line 1" is not the file's line; `column`, when given, says where
// in the line), and escaped, as its "last read: '...'" excerpt quotes the input's bytes raw.
std::string without_exception_tag(const json::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0) {
    if (const auto end = m.find("] "); end != std::string::npos) m.erase(0, end + 2);
  }
  return m;
}

std::string json_error_text(const json::exception& e, const std::string& column = "") {
  std::string m = without_exception_tag(e);
  // "parse error at line 1, column 18: ..." or "parse error: ...": drop up to the first ": ".
  if (m.rfind("parse error", 0) == 0) {
    if (const auto end = m.find(": "); end != std::string::npos) m.erase(0, end + 2);
  }
  return "invalid JSON" + (column.empty() ? "" : " at column " + column) + ": " +
         escape_for_message(m, 400, /*escape_quotes=*/false);
}
}  // namespace

namespace {
// A SAX handler that builds nothing and keeps where the first error starts.
class FirstError : public json::json_sax_t {
 public:
  std::optional<std::size_t> offset;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  // `position` is the count of bytes read. A number beyond double's range (out_of_range 406) is
  // the whole `last_token`, its lookahead byte given back: it starts `last_token` bytes before.
  // For a syntax error `last_token` runs from the last string or number scanned, so the place
  // is the byte the parser stopped at, as json::parse_error's `byte` names it.
  bool parse_error(std::size_t position, const std::string& last_token,
                   const json::exception& e) override {
    if (e.id == 406 && position >= last_token.size()) {
      offset = position - last_token.size();
    } else {
      offset = position > 0 ? position - 1 : 0;
    }
    return false;
  }
};
}  // namespace

std::optional<std::size_t> json_error_offset(std::string_view text) {
  FirstError handler;
  json::sax_parse(text.begin(), text.end(), &handler);
  return handler.offset;
}

std::string json_exception_message(const json::exception& e) {
  return escape_for_message(without_exception_tag(e), 400, /*escape_quotes=*/false);
}

json json_parse_file(const std::string& path) {
  return json_parse_text(read_file_bytes(path), path);
}

json json_parse_text(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    throw DataError(path, line_col(text, pos), "", json_error_text(e));
  } catch (const json::exception& e) {  // e.g. a number out of range (1e400): no place in `e`
    const auto at = json_error_offset(text);
    throw DataError(path, at ? line_col(text, *at) : std::string(), "", json_error_text(e));
  }
}

void json_for_each_line(const std::string& path,
                        const std::function<void(std::size_t, const json&)>& fn,
                        std::size_t* unfinished_last_line) {
  std::ifstream in;
  open_input_file_or_throw(in, path);
  if (unfinished_last_line != nullptr) *unfinished_last_line = 0;
  std::string line;
  std::size_t no = 0;
  while (std::getline(in, line)) {
    ++no;
    const bool no_newline = in.eof();  // getline stopped at the end of the file, not at '\n'
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    json v;
    try {
      v = json::parse(line);
    } catch (const json::parse_error& e) {
      if (no_newline && unfinished_last_line != nullptr) {
        *unfinished_last_line = no;
        break;
      }
      throw DataError(path, at_line(no), "", json_error_text(e, std::to_string(e.byte)));
    } catch (const json::exception& e) {  // e.g. a number out of range (1e400): no place in `e`
      const auto at = json_error_offset(line);
      throw DataError(path, at_line(no), "",
                      json_error_text(e, at ? std::to_string(*at + 1) : std::string()));
    }
    fn(no, v);
  }
  if (in.bad()) {
    throw DataError(path, at_line(no), "", std::string("read error: ") + std::strerror(errno));
  }
}

}  // namespace dialtree
