// The HTTP API of `dialtree serve` without the HTTP: request schemas (OpenAI /v1/embeddings,
// TEI /embed, /classify, /tokenize), their validation, the one table of error kinds -> HTTP
// status, and the JSON response writers. Torch-free, so its unit tests build in seconds.
//
// Sources: OpenAI embeddings API and Hugging Face text-embeddings-inference (TEI) request and
// response shapes (docs/serving.md "Routes"); docs/failure-cases.md C19 (empty input -> 400), C25
// (invalid UTF-8 -> 400, output always valid UTF-8). Every error is the body {"error": {"message",
// "type", "code", "param"}} (OpenAI's nested form) with the status of http_status(kind).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data/word_input.h"

namespace dialtree::serve {

/// Every way a request can fail. The status, type and code of each are in one table
/// (api.cpp, kErrorTable) and documented in docs/serving.md.
enum class ErrorKind {
  kBadRequest,        ///< 400 malformed HTTP framing (request line, header, Content-Length)
  kInvalidJson,       ///< 400 body is not JSON (syntax error)
  kInvalidUtf8,       ///< 400 body or a text is not valid UTF-8 (C25)
  kEmptyInput,        ///< 400 `inputs` / `input` is an empty list or an empty string (C19)
  kUnauthorized,      ///< 401 --api-key set and the Bearer token is missing or wrong
  kNotFound,          ///< 404 unknown route
  kMethodNotAllowed,  ///< 405 a known route with another method (the Allow header lists its own)
  kRequestTimeout,    ///< 408 the request did not arrive within --request-timeout
  kPayloadTooLarge,   ///< 413 body over --max-request-bytes
  kInputTooLong,      ///< 413 an input over --max-input-length tokens with truncation off
  kTooManyInputs,     ///< 413 more inputs in one request than --max-client-batch-size
  kUriTooLong,        ///< 414 request target over 8 KiB
  kUnsupportedMediaType,  ///< 415 a POST body whose Content-Type is not JSON, or compressed
  kHeaderTooLarge,        ///< 431 request header fields over 16 KiB
  kValidation,            ///< 422 wrong JSON type, missing field, or a value out of range
  kNoClassifier,          ///< 424 /classify on a model bundle without an intent head
  kNoTagger,              ///< 424 /parse on a model bundle without a tagger
  kOverloaded,            ///< 429 --max-concurrent-requests requests already in flight
  kInternal,              ///< 500 inference or an unexpected failure
  kNotImplemented,        ///< 501 a Transfer-Encoding other than chunked (gzip, chunked)
  kUnavailable,           ///< 503 model still loading / warming up, or the server is draining
};

/// HTTP status of `kind` (see ErrorKind).
int http_status(ErrorKind kind);
/// OpenAI error "type" of `kind`: invalid_request_error, authentication_error, not_found_error,
/// rate_limit_error, server_error or service_unavailable_error.
std::string error_type(ErrorKind kind);
/// Stable machine-readable "code" of `kind`, e.g. "empty_input", "input_too_long".
std::string error_code(ErrorKind kind);
/// Every kind, in declaration order (for the error-table test and the docs).
const std::vector<ErrorKind>& all_error_kinds();

/// A request that cannot be served. `param` is the JSON path of the offending field ("" if
/// none), e.g. "input[2]" or "truncation_direction".
class ApiError : public std::runtime_error {
 public:
  ApiError(ErrorKind kind, std::string message, std::string param = "");
  ErrorKind kind() const noexcept { return kind_; }
  const std::string& param() const noexcept { return param_; }

 private:
  ErrorKind kind_;
  std::string param_;
};

/// The JSON body of `error`: {"error": {"message", "type", "code", "param"}}; param is null when
/// empty. The message is made valid UTF-8 (invalid bytes become U+FFFD), so the body always is.
std::string error_body(const ApiError& error);

/// One dialog turn. role is "user" or "system" ("assistant" is accepted as "system").
struct Turn {
  std::string role;
  std::string text;
};

/// One input to embed, classify or tokenize: a dialog (a plain string is one user turn) or,
/// OpenAI-style, an array of token ids (one user utterance, already tokenized).
struct Input {
  std::vector<Turn> turns;  ///< oldest first; the last turn is the current one
  std::optional<std::vector<std::int64_t>> token_ids;  ///< set instead of turns for id inputs
};

/// Which end of an over-long utterance is cut: TEI's truncation_direction. "right" (TEI's
/// default) keeps the first tokens; "left" keeps the last ones, as SPACE-2 training does.
enum class TruncationDirection { kRight, kLeft };

/// POST /v1/embeddings (OpenAI) or POST /embed (TEI), parsed and type-checked.
struct EmbedRequest {
  std::vector<Input> inputs;     ///< >= 1
  bool normalize = true;         ///< TEI `normalize`; always true for OpenAI
  std::optional<bool> truncate;  ///< unset = the server's --auto-truncate
  TruncationDirection truncation_direction = TruncationDirection::kRight;
  std::optional<std::int64_t> dimensions;  ///< keep the first N dims (then re-normalise), >= 1
  bool base64 = false;                     ///< OpenAI encoding_format "base64"
  std::string model;                       ///< OpenAI `model` (echoed; not used to route)
};

/// POST /classify: `inputs` as /embed, `top_k` (default 1) labels per input.
struct ClassifyRequest {
  std::vector<Input> inputs;
  std::optional<bool> truncate;
  TruncationDirection truncation_direction = TruncationDirection::kRight;
  std::int64_t top_k = 1;  ///< >= 1; clamped to the number of labels
};

/// POST /parse (or Rasa's POST /model/parse): `inputs` as /classify, or Rasa's `text` (one
/// string, answered with one object instead of a list); `top_k` intents in `intent_ranking`.
struct ParseRequest {
  std::vector<Input> inputs;
  std::optional<bool> truncate;
  TruncationDirection truncation_direction = TruncationDirection::kRight;
  std::int64_t top_k = 1;  ///< >= 1; clamped to the number of intents
  bool single = false;     ///< the body had Rasa's `text`: answer one object, not a list
};

/// POST /tokenize: `inputs` as /embed; add_special_tokens (default true) includes the role
/// markers of the serialised form.
struct TokenizeRequest {
  std::vector<Input> inputs;
  bool add_special_tokens = true;
  std::optional<bool> truncate;
  TruncationDirection truncation_direction = TruncationDirection::kRight;
};

/// One input value: a string (one user turn), a dialog object {"turns": [{"role", "text"}]},
/// or an array of token ids. `param` is its JSON path, named in errors.
/// @throws ApiError kEmptyInput, kInvalidUtf8 or kValidation.
Input parse_input(const nlohmann::json& value, const std::string& param);

/// Parses a request body into JSON. @throws ApiError kInvalidUtf8 if `body` is not valid UTF-8
/// (C25), kInvalidJson on a syntax error (with line/column) or a number beyond double's range
/// (with the 0-based byte offset of its first byte), kValidation if it is not an object.
nlohmann::json parse_body(std::string_view body);

/// OpenAI request: `input` (string | array of strings | array of token ids | array of token-id
/// arrays | our dialog objects), `model` (string, optional here), `encoding_format` ("float" |
/// "base64"), `dimensions` (integer >= 1), `user` (string, ignored). Unknown keys are ignored,
/// as OpenAI clients add their own.
/// @throws ApiError kEmptyInput, kInvalidUtf8 or kValidation naming the field.
EmbedRequest parse_openai_embeddings(const nlohmann::json& body);
/// TEI request: `inputs` (as `input` above), `normalize` (bool), `truncate` (bool or null),
/// `truncation_direction` ("right" | "left", either case), `dimensions`, `prompt_name` (must be
/// null: this server has no prompts). @throws as parse_openai_embeddings().
EmbedRequest parse_tei_embed(const nlohmann::json& body);
/// @throws as parse_openai_embeddings(); kValidation for top_k < 1.
ClassifyRequest parse_classify(const nlohmann::json& body);
/// `inputs` (strings or dialog objects; token-id inputs have no text to point into: 422) or
/// `text` (Rasa: one string; `message_id` is accepted and ignored), not both; `top_k`,
/// `truncate`, `truncation_direction` as /classify. @throws as parse_openai_embeddings().
ParseRequest parse_parse(const nlohmann::json& body);
/// @throws as parse_openai_embeddings().
TokenizeRequest parse_tokenize(const nlohmann::json& body);

/// The indices of the `k` largest of `probs` (at most probs.size()), largest first; ties go to
/// the lower index (the order of /classify's `top_k` and /parse's `intent_ranking`).
std::vector<std::size_t> top_k_order(const std::vector<float>& probs, std::int64_t k);

/// What a tagger read in one input's current turn: its words (code-point offsets into `text`)
/// and, per word, the predicted tag and its probability (the first sub-word's softmax; "O" with
/// probability 1 for a word left without a sub-word by truncation).
struct ParsedTurn {
  std::string text;                    ///< the current (last) turn's text
  std::vector<data::WordSpan> words;   ///< its words, [start, stop) in code points
  std::vector<std::string> tags;
  std::vector<float> tag_scores;
};

/// One input's /parse answer, Rasa's shape: {"text", "intent": {"name", "confidence"} or null,
/// "intent_ranking": [top_k of them], "entities": [{"entity", "start", "end", "value",
/// "confidence_entity", "confidence", "words": [first, last + 1]}]}. Entities are the tags'
/// spans read as DialoGLUE reads them (data/dialoglue_labels.h tag_spans). An entity's
/// confidence is the lowest tag probability of its words, under both names: Rasa's NLU emits
/// `confidence_entity`, its HTTP API schema documents `confidence` (docs/serving.md "Parsing").
/// start/end are code points of `turn.text`, value its slice.
/// `intent_probs` is empty for a model without an intent head.
/// @throws std::invalid_argument when the per-word vectors differ in length.
nlohmann::json parse_result(const ParsedTurn& turn, const std::vector<float>& intent_probs,
                            const std::vector<std::string>& intent_labels, std::int64_t top_k);

/// Keeps the first `dimensions` values (all when unset) and L2-normalises them when `normalize`
/// (the norm is accumulated in double; an all-zero vector stays zero, never NaN:
/// docs/failure-cases.md C21).
/// @throws ApiError kValidation if dimensions exceeds vector.size().
std::vector<float> finish_embedding(std::vector<float> vector,
                                    std::optional<std::int64_t> dimensions, bool normalize);

/// Appends `[v0,v1,...]` with each float in its shortest round-trip decimal form; non-finite
/// values become null (JSON has no NaN).
void append_float_array(std::string& out, const float* values, std::size_t n);
/// Base64 (RFC 4648, padded) of the little-endian float32 bytes of `values` (OpenAI's
/// encoding_format "base64").
std::string base64_floats(const std::vector<float>& values);

/// OpenAI response: {"object":"list","data":[{"object":"embedding","index":i,"embedding":..}],
/// "model":model,"usage":{"prompt_tokens":n,"total_tokens":n}}.
std::string openai_embeddings_body(const std::vector<std::vector<float>>& vectors, bool base64,
                                   const std::string& model, std::size_t prompt_tokens);
/// TEI response: a list of vectors, one per input, even for a single input.
std::string tei_embed_body(const std::vector<std::vector<float>>& vectors);

}  // namespace dialtree::serve
