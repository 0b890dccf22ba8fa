#include "serve/api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/json_util.h"
#include "common/utf8.h"
#include "data/dialoglue_labels.h"

namespace dialtree::serve {
namespace {

using json = nlohmann::json;

struct ErrorRow {
  ErrorKind kind;
  int status;
  const char* type;
  const char* code;
};

// The one table of error kinds (docs/serving.md "Errors" mirrors it; tests/serve checks both).
constexpr ErrorRow kErrorTable[] = {
    {ErrorKind::kBadRequest, 400, "invalid_request_error", "bad_request"},
    {ErrorKind::kInvalidJson, 400, "invalid_request_error", "invalid_json"},
    {ErrorKind::kInvalidUtf8, 400, "invalid_request_error", "invalid_utf8"},
    {ErrorKind::kEmptyInput, 400, "invalid_request_error", "empty_input"},
    {ErrorKind::kUnauthorized, 401, "authentication_error", "invalid_api_key"},
    {ErrorKind::kNotFound, 404, "not_found_error", "not_found"},
    {ErrorKind::kMethodNotAllowed, 405, "invalid_request_error", "method_not_allowed"},
    {ErrorKind::kRequestTimeout, 408, "invalid_request_error", "request_timeout"},
    {ErrorKind::kPayloadTooLarge, 413, "invalid_request_error", "payload_too_large"},
    {ErrorKind::kInputTooLong, 413, "invalid_request_error", "input_too_long"},
    {ErrorKind::kTooManyInputs, 413, "invalid_request_error", "too_many_inputs"},
    {ErrorKind::kUriTooLong, 414, "invalid_request_error", "uri_too_long"},
    {ErrorKind::kUnsupportedMediaType, 415, "invalid_request_error", "unsupported_media_type"},
    {ErrorKind::kHeaderTooLarge, 431, "invalid_request_error", "header_too_large"},
    {ErrorKind::kValidation, 422, "invalid_request_error", "validation_error"},
    {ErrorKind::kNoClassifier, 424, "invalid_request_error", "no_classifier"},
    {ErrorKind::kNoTagger, 424, "invalid_request_error", "no_tagger"},
    {ErrorKind::kOverloaded, 429, "rate_limit_error", "overloaded"},
    {ErrorKind::kInternal, 500, "server_error", "internal_error"},
    {ErrorKind::kNotImplemented, 501, "invalid_request_error", "not_implemented"},
    {ErrorKind::kUnavailable, 503, "service_unavailable_error", "unavailable"},
};

const ErrorRow& row_of(ErrorKind kind) {
  for (const auto& row : kErrorTable) {
    if (row.kind == kind) return row;
  }
  DIALTREE_UNREACHABLE("ErrorKind missing from kErrorTable");
}

[[noreturn]] void invalid(const std::string& param, const std::string& what) {
  throw ApiError(ErrorKind::kValidation, param + ": " + what, param);
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
  invalid(param, std::string("expected ") + expected + ", found " + json_type_name(v));
}

std::string child(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}
std::string index(const std::string& parent, std::size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

std::string as_text(const json& v, const std::string& param) {
  if (!v.is_string()) wrong_type(param, "a string", v);
  const auto& s = v.get_ref<const std::string&>();
  if (!utf8::is_valid(s)) {
    throw ApiError(ErrorKind::kInvalidUtf8, param + ": not valid UTF-8", param);
  }
  return s;
}

std::string nonempty_text(const json& v, const std::string& param) {
  std::string s = as_text(v, param);
  if (s.empty()) {
    throw ApiError(ErrorKind::kEmptyInput, param + ": an empty string (give some text)", param);
  }
  return s;
}

bool is_integer(const json& v) {
  return v.is_number_integer() || v.is_number_unsigned();
}

std::vector<std::int64_t> token_ids(const json& arr, const std::string& param) {
  if (arr.empty()) {
    throw ApiError(ErrorKind::kEmptyInput, param + ": a token-id input must not be empty", param);
  }
  std::vector<std::int64_t> ids;
  ids.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const json& v = arr[i];
    if (!is_integer(v)) wrong_type(index(param, i), "an integer token id", v);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > 0x7fffffffULL) {
      invalid(index(param, i), "token id out of range");
    }
    const std::int64_t id = v.get<std::int64_t>();
    if (id < 0) invalid(index(param, i), "token id must be >= 0");
    ids.push_back(id);
  }
  return ids;
}

Input dialog_input(const json& obj, const std::string& param) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() != "turns")
      invalid(child(param, it.key()), "unknown key (a dialog has only \"turns\")");
  }
  const auto found = obj.find("turns");
  if (found == obj.end()) invalid(child(param, "turns"), "missing");
  const std::string turns_path = child(param, "turns");
  if (!found->is_array()) wrong_type(turns_path, "an array of turns", *found);
  if (found->empty()) {
    throw ApiError(ErrorKind::kEmptyInput, turns_path + ": a dialog needs at least one turn",
                   turns_path);
  }
  Input input;
  for (std::size_t i = 0; i < found->size(); ++i) {
    const json& t = (*found)[i];
    const std::string tp = index(turns_path, i);
    if (!t.is_object()) wrong_type(tp, "an object {\"role\", \"text\"}", t);
    Turn turn;
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string kp = child(tp, it.key());
      if (it.key() == "role") {
        turn.role = as_text(it.value(), kp);
        if (turn.role == "assistant") turn.role = "system";
        if (turn.role != "user" && turn.role != "system") {
          invalid(kp, "role must be \"user\", \"system\" or \"assistant\"");
        }
      } else if (it.key() == "text") {
        turn.text = nonempty_text(it.value(), kp);
      } else {
        invalid(kp, "unknown key (a turn has \"role\" and \"text\")");
      }
    }
    if (turn.role.empty()) invalid(child(tp, "role"), "missing");
    if (!t.contains("text")) invalid(child(tp, "text"), "missing");
    input.turns.push_back(std::move(turn));
  }
  return input;
}

}  // namespace

Input parse_input(const json& v, const std::string& param) {
  if (v.is_string()) return Input{{Turn{"user", nonempty_text(v, param)}}, std::nullopt};
  if (v.is_object()) return dialog_input(v, param);
  if (v.is_array()) return Input{{}, token_ids(v, param)};
  wrong_type(param, "a string, a dialog object or an array of token ids", v);
}

namespace {

// `input` / `inputs`: a string, a dialog object, an array of token ids (one input), or an array
// whose items are strings, dialogs or token-id arrays.
std::vector<Input> inputs_field(const json& body, const char* key) {
  const auto found = body.find(key);
  if (found == body.end()) invalid(key, "missing");
  const json& v = *found;
  if (v.is_array()) {
    if (v.empty())
      throw ApiError(ErrorKind::kEmptyInput, std::string(key) + " must not be empty", key);
    if (is_integer(v[0])) return {Input{{}, token_ids(v, key)}};
    std::vector<Input> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(parse_input(v[i], index(key, i)));
    return out;
  }
  if (v.is_string() || v.is_object()) return {parse_input(v, key)};
  wrong_type(key, "a string, a dialog object or an array", v);
}

std::optional<bool> optional_bool(const json& body, const char* key) {
  const auto found = body.find(key);
  if (found == body.end() || found->is_null()) return std::nullopt;
  if (!found->is_boolean()) wrong_type(key, "a boolean", *found);
  return found->get<bool>();
}

std::optional<std::int64_t> optional_positive(const json& body, const char* key) {
  const auto found = body.find(key);
  if (found == body.end() || found->is_null()) return std::nullopt;
  if (!is_integer(*found)) wrong_type(key, "an integer", *found);
  if (found->is_number_unsigned() && found->get<std::uint64_t>() > 0x7fffffffULL) {
    invalid(key, "must be at most 2147483647");
  }
  const std::int64_t n = found->get<std::int64_t>();
  if (n < 1) invalid(key, "must be >= 1");
  return n;
}

TruncationDirection direction_field(const json& body) {
  const auto found = body.find("truncation_direction");
  if (found == body.end() || found->is_null()) return TruncationDirection::kRight;
  const std::string s = as_text(*found, "truncation_direction");
  if (s == "right" || s == "Right") return TruncationDirection::kRight;
  if (s == "left" || s == "Left") return TruncationDirection::kLeft;
  invalid("truncation_direction", "must be \"right\" or \"left\"");
}

// The fields /embed, /classify and /tokenize share: `inputs`, `truncate`,
// `truncation_direction`.
template <class Request>
Request with_inputs(const json& body) {
  Request r;
  r.inputs = inputs_field(body, "inputs");
  r.truncate = optional_bool(body, "truncate");
  r.truncation_direction = direction_field(body);
  return r;
}

void require_object(const json& body) {
  // No field is at fault, so `param` is null (docs/serving.md "Errors").
  if (!body.is_object()) {
    throw ApiError(ErrorKind::kValidation,
                   "the request body: expected a JSON object, found " + json_type_name(body), "");
  }
}

// Fixes invalid UTF-8 by replacing each bad byte with U+FFFD (for messages that echo input).
std::string valid_utf8(std::string_view s) {
  if (utf8::is_valid(s)) return std::string(s);
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = utf8::sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

int http_status(ErrorKind kind) {
  return row_of(kind).status;
}
std::string error_type(ErrorKind kind) {
  return row_of(kind).type;
}
std::string error_code(ErrorKind kind) {
  return row_of(kind).code;
}

const std::vector<ErrorKind>& all_error_kinds() {
  static const std::vector<ErrorKind> kinds = [] {
    std::vector<ErrorKind> out;
    for (const auto& row : kErrorTable) out.push_back(row.kind);
    return out;
  }();
  return kinds;
}

ApiError::ApiError(ErrorKind kind, std::string message, std::string param)
    : std::runtime_error(std::move(message)), kind_(kind), param_(std::move(param)) {}

std::string error_body(const ApiError& error) {
  json inner = {{"message", valid_utf8(error.what())},
                {"type", error_type(error.kind())},
                {"code", error_code(error.kind())},
                {"param", nullptr}};
  if (!error.param().empty()) inner["param"] = valid_utf8(error.param());
  return json{{"error", std::move(inner)}}.dump();
}

json parse_body(std::string_view body) {
  if (!utf8::is_valid(body)) {
    const std::size_t at = utf8::first_invalid(body);
    throw ApiError(
        ErrorKind::kInvalidUtf8,
        "request body is not valid UTF-8 (first bad byte at offset " + std::to_string(at) + ")");
  }
  json parsed;
  try {
    parsed = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {  // syntax errors: nlohmann names the line and column
    throw ApiError(ErrorKind::kInvalidJson,
                   "request body is not JSON: " + json_exception_message(e));
  } catch (const json::exception& e) {  // numbers out of range (1e400): `e` names no place
    const auto at = json_error_offset(body);
    throw ApiError(ErrorKind::kInvalidJson,
                   "request body is not JSON: " + json_exception_message(e) +
                       (at ? " (at offset " + std::to_string(*at) + ")" : std::string()));
  }
  require_object(parsed);
  return parsed;
}

EmbedRequest parse_openai_embeddings(const json& body) {
  require_object(body);
  EmbedRequest r;
  r.inputs = inputs_field(body, "input");
  if (const auto m = body.find("model"); m != body.end() && !m->is_null()) {
    r.model = as_text(*m, "model");
  }
  if (const auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    const std::string s = as_text(*f, "encoding_format");
    if (s == "base64") {
      r.base64 = true;
    } else if (s != "float") {
      invalid("encoding_format", "must be \"float\" or \"base64\"");
    }
  }
  if (const auto u = body.find("user"); u != body.end() && !u->is_null()) as_text(*u, "user");
  r.dimensions = optional_positive(body, "dimensions");
  return r;
}

EmbedRequest parse_tei_embed(const json& body) {
  require_object(body);
  EmbedRequest r = with_inputs<EmbedRequest>(body);
  r.normalize = optional_bool(body, "normalize").value_or(true);
  r.dimensions = optional_positive(body, "dimensions");
  if (const auto p = body.find("prompt_name"); p != body.end() && !p->is_null()) {
    invalid("prompt_name", "this server has no prompts; leave prompt_name out");
  }
  return r;
}

ClassifyRequest parse_classify(const json& body) {
  require_object(body);
  ClassifyRequest r = with_inputs<ClassifyRequest>(body);
  r.top_k = optional_positive(body, "top_k").value_or(1);
  return r;
}

ParseRequest parse_parse(const json& body) {
  require_object(body);
  const bool has_text = body.contains("text"), has_inputs = body.contains("inputs");
  if (has_text && has_inputs) invalid("text", "give either `text` (Rasa) or `inputs`, not both");
  if (!has_text && !has_inputs) {
    invalid("inputs", "missing (give `inputs`, or `text` as Rasa's /model/parse takes)");
  }
  ParseRequest r;
  if (has_text) {
    const json& text = body.at("text");
    if (!text.is_string()) wrong_type("text", "a string", text);
    r.inputs = {parse_input(text, "text")};
    r.single = true;
    r.truncate = optional_bool(body, "truncate");
    r.truncation_direction = direction_field(body);
  } else {
    r = with_inputs<ParseRequest>(body);
  }
  for (std::size_t i = 0; i < r.inputs.size(); ++i) {
    if (r.inputs[i].token_ids) {
      const std::string param = r.inputs.size() == 1 ? "inputs" : index("inputs", i);
      invalid(param, "/parse needs text (its entities point into it), not token ids");
    }
  }
  r.top_k = optional_positive(body, "top_k").value_or(1);
  return r;
}

std::vector<std::size_t> top_k_order(const std::vector<float>& probs, std::int64_t k) {
  std::vector<std::size_t> order(probs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::size_t n =
      std::min(static_cast<std::size_t>(std::max<std::int64_t>(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
                    });
  order.resize(n);
  return order;
}

json parse_result(const ParsedTurn& turn, const std::vector<float>& intent_probs,
                  const std::vector<std::string>& intent_labels, std::int64_t top_k) {
  const std::size_t n = turn.words.size();
  if (turn.tags.size() != n ||
      turn.tag_scores.size() != n || intent_probs.size() > intent_labels.size()) {
    throw std::invalid_argument("parse_result: per-word vectors (or intents) differ in length");
  }
  json out = {{"text", turn.text}, {"intent", nullptr}, {"intent_ranking", json::array()}};
  if (!intent_probs.empty()) {
    for (const std::size_t i : top_k_order(intent_probs, top_k)) {
      out["intent_ranking"].push_back(
          {{"name", intent_labels[i]}, {"confidence", intent_probs[i]}});
    }
    out["intent"] = out["intent_ranking"][0];
  }
  json entities = json::array();
  for (const data::TagSpan& span : data::tag_spans(turn.tags)) {
    float confidence = 1.0f;
    for (std::size_t w = span.start; w < span.end; ++w) {
      confidence = std::min(confidence, turn.tag_scores[w]);
    }
    const std::size_t start = turn.words[span.start].start, end = turn.words[span.end - 1].stop;
    entities.push_back({{"entity", span.label},
                        {"start", start},
                        {"end", end},
                        {"value", utf8::substr(turn.text, start, end)},
                        {"confidence_entity", confidence},
                        {"confidence", confidence},
                        {"words", {span.start, span.end}}});
  }
  out["entities"] = std::move(entities);
  return out;
}

TokenizeRequest parse_tokenize(const json& body) {
  require_object(body);
  TokenizeRequest r = with_inputs<TokenizeRequest>(body);
  r.add_special_tokens = optional_bool(body, "add_special_tokens").value_or(true);
  return r;
}

std::vector<float> finish_embedding(std::vector<float> vector,
                                    std::optional<std::int64_t> dimensions, bool normalize) {
  if (dimensions) {
    if (static_cast<std::size_t>(*dimensions) > vector.size()) {
      invalid("dimensions", "must be at most the model's hidden size " +
                                std::to_string(vector.size()) + ", got " +
                                std::to_string(*dimensions));
    }
    vector.resize(static_cast<std::size_t>(*dimensions));
  }
  if (normalize) {
    double sq = 0.0;
    for (float x : vector) sq += static_cast<double>(x) * static_cast<double>(x);
    if (sq > 0.0) {
      const double inv = 1.0 / std::sqrt(sq);
      for (float& x : vector) x = static_cast<float>(static_cast<double>(x) * inv);
    }
  }
  return vector;
}

void append_float_array(std::string& out, const float* values, std::size_t n) {
  out.push_back('[');
  char buf[32];
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out.push_back(',');
    if (!std::isfinite(values[i])) {
      out += "null";
      continue;
    }
    const auto res = std::to_chars(buf, buf + sizeof buf, values[i]);
    out.append(buf, res.ptr);
  }
  out.push_back(']');
}

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (static_cast<std::uint8_t>(bytes[i]) << 16) |
                            (static_cast<std::uint8_t>(bytes[i + 1]) << 8) |
                            static_cast<std::uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i < bytes.size()) {
    std::uint32_t v = static_cast<std::uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<std::uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string openai_embeddings_body(const std::vector<std::vector<float>>& vectors, bool base64,
                                   const std::string& model, std::size_t prompt_tokens) {
  std::string out = "{\"object\":\"list\",\"data\":[";
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    if (i) out.push_back(',');
    out += "{\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
    if (base64) {
      out += '"' + base64_floats(vectors[i]) + '"';
    } else {
      append_float_array(out, vectors[i].data(), vectors[i].size());
    }
    out.push_back('}');
  }
  out += "],\"model\":" + json(valid_utf8(model)).dump() +
         ",\"usage\":{\"prompt_tokens\":" + std::to_string(prompt_tokens) +
         ",\"total_tokens\":" + std::to_string(prompt_tokens) + "}}";
  return out;
}

std::string tei_embed_body(const std::vector<std::vector<float>>& vectors) {
  std::string out = "[";
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    if (i) out.push_back(',');
    append_float_array(out, vectors[i].data(), vectors[i].size());
  }
  out.push_back(']');
  return out;
}

}  // namespace dialtree::serve
