#include "common/simdjson_util.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/input_file.h"

namespace dialtree {

namespace dom = simdjson::dom;

void JsonPathRef::append_to(std::string& out) const {
  if (!parent_) return;  // the top contributes nothing to its children's paths
  parent_->append_to(out);
  if (is_key_) {
    if (!out.empty()) out += '.';
    out += key_;
  } else {
    out += '[';
    out += std::to_string(index_);
    out += ']';
  }
}

std::string JsonPathRef::str() const {
  if (!parent_) return std::string(label_);
  std::string out;
  append_to(out);
  return out;
}

std::string sj_type_name(dom::element v) {
  switch (v.type()) {
    case dom::element_type::NULL_VALUE:
      return "null";
    case dom::element_type::BOOL:
      return "boolean";
    case dom::element_type::STRING:
      return "string";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
      return "integer";
    case dom::element_type::DOUBLE:
      return "number";
    case dom::element_type::OBJECT:
      return "object";
    case dom::element_type::ARRAY:
      return "array";
  }
  return "unknown";
}

namespace {

// The same message as json_util's type_mismatch: a string value is shown as JSON (nlohmann's
// escaping, so both helpers quote it identically).
[[noreturn]] void type_mismatch(dom::element v, const JsonPlace& place, const JsonPathRef& path,
                                const char* expected) {
  std::string got = sj_type_name(v);
  if (v.type() == dom::element_type::STRING) {
    got += " " + json(std::string(v.get_string().value_unsafe())).dump();
  }
  throw SchemaError(place.file, place.where, path.str(),
                    std::string("must be ") + expected + ", got " + got);
}

// Reads the whole file into `text` (reusing its capacity), leaving at least SIMDJSON_PADDING
// bytes of spare capacity after it so simdjson can parse it in place.
void read_padded(const std::string& path, std::string& text) {
  text.clear();
  std::ifstream in;
  open_input_file_or_throw(in, path);
  std::error_code ec;
  const std::uintmax_t size_hint = std::filesystem::file_size(path, ec);
  if (!ec) {
    text.reserve(size_hint + simdjson::SIMDJSON_PADDING);
    text.resize(size_hint);
    in.read(text.data(), static_cast<std::streamsize>(size_hint));
    text.resize(static_cast<std::size_t>(in.gcount()));
  }
  // Whatever the size did not announce (a file that grew, a file without a size).
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw DataError(path, "", "", std::string("read error: ") + std::strerror(errno));
  if (text.capacity() - text.size() < simdjson::SIMDJSON_PADDING) {
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  }
}

// Parses `text`, which must be followed by SIMDJSON_PADDING bytes of its buffer, in place.
// Nesting deeper than the parser's limit (1024 levels by default; nlohmann has none) raises the
// limit to the most that `text` can hold, and `text` is parsed again.
simdjson::simdjson_result<dom::element> parse_padded(dom::parser& parser, std::string_view text) {
  simdjson::simdjson_result<dom::element> parsed = parser.parse(text.data(), text.size(), false);
  if (parsed.error() == simdjson::DEPTH_ERROR &&
      parser.allocate(text.size(), text.size() / 2 + 1) == simdjson::SUCCESS) {
    parsed = parser.parse(text.data(), text.size(), false);
  }
  return parsed;
}

}  // namespace

dom::object sj_as_object(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  if (v.type() != dom::element_type::OBJECT) type_mismatch(v, place, path, "an object");
  return v.get_object().value_unsafe();
}

dom::array sj_as_array(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  if (v.type() != dom::element_type::ARRAY) type_mismatch(v, place, path, "an array");
  return v.get_array().value_unsafe();
}

std::string_view sj_as_string(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  if (v.type() != dom::element_type::STRING) type_mismatch(v, place, path, "a string");
  return v.get_string().value_unsafe();
}

std::int64_t sj_as_int(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  switch (v.type()) {
    case dom::element_type::INT64:
      return v.get_int64().value_unsafe();
    case dom::element_type::UINT64: {
      // Only values above INT64_MAX are UINT64; json_as_int rejects them the same way.
      const std::uint64_t u = v.get_uint64().value_unsafe();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) {
        throw DataError(place.file, place.where, path.str(),
                        "integer " + std::to_string(u) + " is out of range (at most " +
                            std::to_string(INT64_MAX) + ")");
      }
      return static_cast<std::int64_t>(u);
    }
    default:
      type_mismatch(v, place, path, "an integer");
  }
}

bool sj_as_bool(dom::element v, const JsonPlace& place, const JsonPathRef& path) {
  if (v.type() != dom::element_type::BOOL) type_mismatch(v, place, path, "a boolean");
  return v.get_bool().value_unsafe();
}

std::optional<dom::element> sj_find(dom::object obj, std::string_view key) {
  std::optional<dom::element> found;
  for (dom::key_value_pair field : obj) {
    if (field.key == key) found = field.value;  // keep looking: the last one wins
  }
  return found;
}

dom::element sj_require(const std::optional<dom::element>& found, std::string_view key,
                        const JsonPlace& place, const JsonPathRef& obj_path) {
  if (!found) {
    throw SchemaError(place.file, place.where, JsonPathRef(obj_path, key).str(), "is missing");
  }
  return *found;
}

dom::element sj_require(dom::object obj, std::string_view key, const JsonPlace& place,
                        const JsonPathRef& obj_path) {
  return sj_require(sj_find(obj, key), key, place, obj_path);
}

dom::element SjFileParser::parse(const std::string& path) {
  read_padded(path, text_);
  std::string_view body = text_;
  constexpr std::string_view kBom = "\xEF\xBB\xBF";  // nlohmann skips it, simdjson does not
  if (body.substr(0, kBom.size()) == kBom) body.remove_prefix(kBom.size());
  simdjson::simdjson_result<dom::element> parsed = parse_padded(parser_, body);
  if (!parsed.error()) return parsed.value_unsafe();
  const simdjson::error_code first_error = parsed.error();

  // Slow path. nlohmann names the line and column of a syntax error (json_parse_text throws)...
  const json doc = json_parse_text(text_, path);
  // ... or accepts what simdjson cannot: take its reading (e.g. a huge integer as a double).
  std::string again = doc.dump();
  again.reserve(again.size() + simdjson::SIMDJSON_PADDING);
  parsed = parse_padded(parser_, again);
  if (!parsed.error()) return parsed.value_unsafe();
  throw DataError(path, "", "",
                  std::string("invalid JSON: ") + simdjson::error_message(first_error));
}

}  // namespace dialtree
