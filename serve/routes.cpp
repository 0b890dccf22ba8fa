#include "serve/routes.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/clock.h"
#include "common/malloc_info.h"
#include "common/strict_yaml.h"
#include "common/text_distance.h"
#include "common/utf8.h"
#include "serve/api.h"
#include "serve/inference.h"

#ifndef DIALTREE_VERSION
#define DIALTREE_VERSION "unknown"
#endif

namespace dialtree::serve {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string ms(double seconds) {
  return std::to_string(static_cast<long long>(seconds * 1000.0));
}

/// A route and the one method it takes (docs/serving.md "Routes").
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {
    {"/v1/embeddings", "POST"}, {"/embeddings", "POST"}, {"/embed", "POST"},
    {"/classify", "POST"},      {"/parse", "POST"},      {"/model/parse", "POST"},
    {"/tokenize", "POST"},      {"/health", "GET"},
    {"/info", "GET"},           {"/metrics", "GET"},     {"/v1/models", "GET"}};

/// A GET route, which HEAD may ask too.
bool is_get(const Route& r) {
  return std::string_view(r.method) == "GET";
}

/// The route of `path`, or nullptr.
const Route* find_route(const std::string& path) {
  for (const Route& r : kRoutes) {
    if (path == r.path) return &r;
  }
  return nullptr;
}

// The error kind of a status the HTTP layer answers by itself (serve/http.h).
ErrorKind kind_of_status(int status) {
  switch (status) {
    case 400:
      return ErrorKind::kBadRequest;
    case 408:
      return ErrorKind::kRequestTimeout;
    case 413:
      return ErrorKind::kPayloadTooLarge;
    case 414:
      return ErrorKind::kUriTooLong;
    case 431:
      return ErrorKind::kHeaderTooLarge;
    case 501:
      return ErrorKind::kNotImplemented;
    case 429:
      return ErrorKind::kOverloaded;
    case 503:
      return ErrorKind::kUnavailable;
    default:
      return status < 500 ? ErrorKind::kBadRequest : ErrorKind::kInternal;
  }
}

void set_json(http::Response& res, std::string body) {
  res.content_type = "application/json";
  res.body = std::move(body);
}

void write_error(http::Response& res, const ApiError& e) {
  res.status = http_status(e.kind());
  set_json(res, error_body(e));
  if (e.kind() == ErrorKind::kUnauthorized) res.set_header("WWW-Authenticate", "Bearer");
}

// A POST body must be JSON: application/json or application/<x>+json, parameters allowed; no
// Content-Type at all is taken as JSON too (raw clients). Anything else (a form, multipart) 415.
// A `charset` parameter other than UTF-8 (or its subset US-ASCII) is 415 too: the body is read as
// UTF-8 (RFC 8259 §8.1), so latin-1 bytes would be read as something else (docs/serving.md
// "Errors"). Returns what is wrong with `type`, or "" when it is taken.
std::string content_type_problem(const std::string& type) {
  const std::size_t semi = type.find(';');
  const std::string t = ascii_lower(strict_yaml::trim(type.substr(0, semi)));
  const bool json = t == "application/json" || (t.rfind("application/", 0) == 0 && t.size() > 17 &&
                                                 t.substr(t.size() - 5) == "+json");
  if (!json) {
    return "Content-Type '" + type +
           "' is not JSON: send 'Content-Type: application/json' (curl: -H 'Content-Type: "
           "application/json')";
  }
  // The parameters (RFC 9110 §5.6.6, §8.3.1): name=value after each ';', a value a token or a
  // quoted string (a ';' inside quotes is part of it, a backslash escapes the next character).
  std::size_t at = semi == std::string::npos ? type.size() : semi + 1;
  while (at < type.size()) {
    const std::size_t end_name = std::min(type.find_first_of("=;", at), type.size());
    const std::string name = ascii_lower(strict_yaml::trim(type.substr(at, end_name - at)));
    at = end_name;
    std::string value;
    if (at < type.size() && type[at] == '=') {
      ++at;
      while (at < type.size() && (type[at] == ' ' || type[at] == '\t')) ++at;
      if (at < type.size() && type[at] == '"') {
        for (++at; at < type.size() && type[at] != '"'; ++at) {
          if (type[at] == '\\' && at + 1 < type.size()) ++at;
          value += type[at];
        }
        at = std::min(type.find(';', at), type.size());
      } else {
        const std::size_t end_value = std::min(type.find(';', at), type.size());
        value = strict_yaml::trim(type.substr(at, end_value - at));
        at = end_value;
      }
    }
    if (at < type.size()) ++at;  // the ';'
    if (name != "charset") continue;
    const std::string c = ascii_lower(value);
    if (c == "utf-8" || c == "utf8" || c == "us-ascii") continue;
    return "Content-Type '" + type + "': " +
           (value.empty() ? std::string("an empty charset") : "charset '" + value + "'") +
           " is not UTF-8; a JSON body is read as UTF-8 (RFC 8259 §8.1): send the text as "
           "UTF-8 with 'Content-Type: application/json'";
  }
  return "";
}

// A Content-Encoding that leaves the body as sent: "identity", or an empty list of codings.
bool identity_coding(const std::string& value) {
  const std::vector<std::string> codings = http::header_list(value);
  return std::all_of(codings.begin(), codings.end(),
                     [](const std::string& c) { return c == "identity"; });
}

/// Where each token of a serialised example came from: the index of its turn in the request
/// and the characters [start, stop) of that turn's text (Unicode code points, as Python slices
/// them). Markers and tokens of id inputs have none (-1). The wrapped utterances of `ex` are the
/// last ones of `input` (older turns are dropped first); each holds its turn's tokens, or a
/// prefix or suffix of them when truncated.
struct TokenOrigin {
  int turn = -1;
  long long start = -1, stop = -1;
};

std::vector<TokenOrigin> token_origins(const data::SerializedExample& ex, const Input& input,
                                       const data::Tokenizer& tok) {
  const std::size_t n = ex.input_ids.size();
  std::vector<TokenOrigin> out(n);
  if (input.token_ids) return out;
  std::vector<std::pair<std::size_t, std::size_t>> segments;  // [first, last) token of each
  for (std::size_t j = 0; j < n; ++j) {
    if (ex.position_ids[j] == 0) segments.push_back({j, j});
    segments.back().second = j + 1;
  }
  const std::size_t turns = input.turns.size();
  for (std::size_t q = 0; q < segments.size() && segments.size() <= turns; ++q) {
    const std::size_t turn = turns - segments.size() + q;
    // Plain variables: a lambda below uses them (C++17 lambdas cannot capture bindings).
    const std::size_t first = segments[q].first, last = segments[q].second;
    for (std::size_t j = first; j < last; ++j) out[j].turn = static_cast<int>(turn);
    if (last - first < 2) continue;
    const std::string& text = input.turns[turn].text;
    const std::vector<data::TokenSpan> spans = tok.encode_with_offsets(text);
    const std::size_t kept = last - first - 2;  // without the two markers
    if (kept > spans.size()) continue;
    // Which slice of the turn's tokens survived truncation: the head or the tail.
    const auto matches = [&](std::size_t from) {
      for (std::size_t k = 0; k < kept; ++k) {
        if (spans[from + k].id != ex.input_ids[first + 1 + k]) return false;
      }
      return true;
    };
    std::size_t from = 0;
    if (!matches(0)) {
      from = spans.size() - kept;
      if (!matches(from)) continue;
    }
    const std::vector<std::size_t> offs = utf8::codepoint_offsets(text);
    const auto chars = [&](std::size_t byte) {
      return static_cast<long long>(std::lower_bound(offs.begin(), offs.end(), byte) -
                                    offs.begin());
    };
    for (std::size_t k = 0; k < kept; ++k) {
      out[first + 1 + k].start = chars(spans[from + k].begin);
      out[first + 1 + k].stop = chars(spans[from + k].end);
    }
  }
  return out;
}

/// What a route needs besides the body: when the request arrived and whether its client left.
struct Call {
  Clock::time_point t0;
  std::shared_ptr<const std::atomic<bool>> client_gone;
};

bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The routes of one request, over the server's shared state.
struct Handlers {
  ServerContext& ctx;

  // The loaded model; only called once the state is kReady (post() checks it first), and the
  // model is published before that.
  Inference& model() const {
    Inference* loaded = ctx.inference.load(std::memory_order_acquire);
    DIALTREE_CHECK(loaded != nullptr, "a POST route ran before the model was published");
    return *loaded;
  }

  // The 503 of a server that is not ready, saying why.
  ApiError unavailable() const {
    const ServerState s = ctx.state.load();
    return ApiError(ErrorKind::kUnavailable, s == ServerState::kLoading ? "model is loading"
                                             : s == ServerState::kFailed
                                                 ? "model failed to load"
                                                 : "server is shutting down");
  }

  void set_timing(http::Response& res, const RequestState* state, std::size_t tokens,
                  Clock::time_point t0, double tokenize_s) {
    res.set_header("x-compute-type", model().compute_type());
    res.set_header("x-compute-tokens", std::to_string(tokens));
    res.set_header("x-tokenization-time", ms(tokenize_s));
    if (state) {
      res.set_header("x-queue-time", ms(state->queue_s));
      res.set_header("x-inference-time", ms(state->inference_s));
    }
    res.set_header("x-total-time", ms(seconds_since(t0)));
  }

  void embed_route(const json& body, http::Response& res, bool openai, const Call& call) {
    EmbedRequest r = openai ? parse_openai_embeddings(body) : parse_tei_embed(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples = model().prepare(r.inputs, r.truncate, r.truncation_direction,
                                          openai ? "input" : "inputs", &tokens);
    const double tokenize_s = seconds_since(t_tok);
    if (r.dimensions &&
        static_cast<std::size_t>(*r.dimensions) > model().embedder().hidden_size()) {
      finish_embedding(std::vector<float>(model().embedder().hidden_size()), r.dimensions,
                       false);  // throws
    }
    auto state = model().infer(examples, false, call.client_gone);
    std::vector<std::vector<float>> vectors;
    vectors.reserve(state->pooled.size());
    for (auto& v : state->pooled)
      vectors.push_back(finish_embedding(std::move(v), r.dimensions, r.normalize));
    set_json(res, openai ? openai_embeddings_body(vectors, r.base64, ctx.model_name, tokens)
                         : tei_embed_body(vectors));
    set_timing(res, state.get(), tokens, call.t0, tokenize_s);
  }

  void classify_route(const json& body, http::Response& res, const Call& call) {
    ClassifyRequest r = parse_classify(body);
    if (!model().embedder().has_classifier()) {
      throw ApiError(ErrorKind::kNoClassifier,
                     "model '" + ctx.model_name +
                         "' has no intent head (num_labels is 0); /classify "
                         "needs a fine-tuned bundle");
    }
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples =
        model().prepare(r.inputs, r.truncate, r.truncation_direction, "inputs", &tokens);
    const double tokenize_s = seconds_since(t_tok);
    auto state = model().infer(examples, true, call.client_gone);
    const auto& labels = model().embedder().intent_labels();
    json out = json::array();
    for (const auto& p : state->probs) {
      const std::vector<std::size_t> order = top_k_order(p, r.top_k);
      json top = json::array();
      for (const std::size_t i : order) top.push_back({{"label", labels[i]}, {"score", p[i]}});
      out.push_back(
          {{"label", labels[order[0]]}, {"score", p[order[0]]}, {"top_k", std::move(top)}});
    }
    set_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
    set_timing(res, state.get(), tokens, call.t0, tokenize_s);
  }

  // docs/serving.md "Parsing": the intent and the entities of each input's current turn.
  void parse_route(const json& body, http::Response& res, const Call& call) {
    ParseRequest r = parse_parse(body);
    const Embedder& embedder = model().embedder();
    if (!embedder.has_tagger()) {
      throw ApiError(ErrorKind::kNoTagger,
                     "model '" + ctx.model_name +
                         "' has no tagger (num_tags is 0); /parse needs a bundle fine-tuned on "
                         "a slot task, e.g. eval dialoglue --tasks restaurant8k --save-models");
    }
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const char* field = r.single ? "text" : "inputs";
    std::vector<WordInput> words =
        model().prepare_words(r.inputs, r.truncate, r.truncation_direction, field, &tokens);
    std::vector<data::SerializedExample> examples;
    examples.reserve(words.size());
    for (WordInput& w : words) examples.push_back(std::move(w.example));
    const double tokenize_s = seconds_since(t_tok);
    auto state = model().infer(examples, true, call.client_gone, true);
    const auto& tags = embedder.tag_labels();
    json out = json::array();
    for (std::size_t i = 0; i < words.size(); ++i) {
      ParsedTurn turn;
      turn.text = std::move(words[i].text);
      turn.words = std::move(words[i].words);
      for (const std::int64_t row : words[i].first_row) {
        // A word cut off by truncation has no row: "O", as fine-tuning predicts it.
        const auto k = static_cast<std::size_t>(row);
        turn.tags.push_back(row < 0 ? "O" : tags[static_cast<std::size_t>(state->tag_ids[i][k])]);
        turn.tag_scores.push_back(row < 0 ? 1.0f : state->tag_scores[i][k]);
      }
      const std::vector<float> none;
      out.push_back(parse_result(turn, state->probs.empty() ? none : state->probs[i],
                                 embedder.intent_labels(), r.top_k));
    }
    const json& answer = r.single ? out[0] : out;
    set_json(res, answer.dump(-1, ' ', false, json::error_handler_t::replace));
    set_timing(res, state.get(), tokens, call.t0, tokenize_s);
  }

  void tokenize_route(const json& body, http::Response& res, const Call& call) {
    TokenizeRequest r = parse_tokenize(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples =
        model().prepare(r.inputs, r.truncate, r.truncation_direction, "inputs", &tokens);
    const data::Tokenizer& tok = model().embedder().tokenizer();
    json out = json::array();
    for (std::size_t i = 0; i < examples.size(); ++i) {
      const data::SerializedExample& ex = examples[i];
      const std::vector<TokenOrigin> origins = token_origins(ex, r.inputs[i], tok);
      const auto number_or_null = [](long long v) { return v < 0 ? json(nullptr) : json(v); };
      json row = json::array();
      const std::size_t n = ex.input_ids.size();
      for (std::size_t j = 0; j < n; ++j) {
        // Role markers open (position 0) and close (last position) each wrapped utterance:
        // the tokens add_special_tokens adds. A special id inside a token-id input is special
        // too, but it is the client's own and stays.
        const bool added = ex.position_ids[j] == 0 || j + 1 == n || ex.position_ids[j + 1] == 0;
        if (added && !r.add_special_tokens) continue;
        const bool special = added || data::is_special_id(tok.special(), ex.input_ids[j]);
        row.push_back({{"id", ex.input_ids[j]},
                       {"text", tok.id_to_token(ex.input_ids[j])},
                       {"special", special},
                       {"start", number_or_null(origins[j].start)},
                       {"stop", number_or_null(origins[j].stop)},
                       {"turn", number_or_null(origins[j].turn)},
                       {"position_id", ex.position_ids[j]},
                       {"role_id", ex.role_ids[j]},
                       {"turn_id", ex.turn_ids[j]}});
      }
      out.push_back(std::move(row));
    }
    set_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
    set_timing(res, nullptr, tokens, call.t0, seconds_since(t_tok));
  }

  // TEI's /info model_type object: {"embedding": {"pooling"}}, plus {"classifier": {"id2label",
  // "label2id"}} when the bundle has an intent head (TEI serves one or the other; a dialtree
  // bundle with a head serves both routes).
  json model_type() const {
    json t = {{"embedding", {{"pooling", "cls"}}}};
    const Inference* loaded = ctx.inference.load(std::memory_order_acquire);
    if (loaded && loaded->embedder().has_classifier()) {
      json id2label = json::object(), label2id = json::object();
      const auto& labels = loaded->embedder().intent_labels();
      for (std::size_t i = 0; i < labels.size(); ++i) {
        id2label[std::to_string(i)] = labels[i];
        label2id[labels[i]] = i;
      }
      t["classifier"] = {{"id2label", id2label}, {"label2id", label2id}};
    }
    return t;
  }

  json info() const {
    json j = {{"model_id", ctx.options.model_dir},
              {"served_model_name", ctx.model_name},
              {"model_type", model_type()},
              {"model_dtype", "float32"},
              {"pooling", "cls"},
              {"max_concurrent_requests", ctx.options.max_concurrent_requests},
              {"max_input_length", ctx.options.max_input_length},
              {"max_batch_tokens", ctx.options.max_batch_tokens},
              {"max_batch_requests", ctx.options.max_batch_requests},
              {"max_client_batch_size", ctx.options.max_client_batch_size},
              {"max_request_bytes", ctx.options.max_request_bytes},
              {"auto_truncate", ctx.options.auto_truncate},
              {"version", DIALTREE_VERSION},
              {"allocator", dialtree::malloc_implementation()},
              {"ready", ctx.state.load() == ServerState::kReady},
              {"state", state_name(ctx.state.load())}};
    if (const Inference* loaded = ctx.inference.load(std::memory_order_acquire)) {
      const Embedder& e = loaded->embedder();
      j["hidden_size"] = e.hidden_size();
      j["model_dtype"] = e.dtype();  // "bfloat16" with --bf16 where the CPU has it
      j["max_utterance_length"] = e.limits().max_utterance_length;
      j["max_turns"] = e.limits().max_turns;
      j["tokenizer"] = e.tokenizer().type();
      j["labels"] = e.intent_labels();
      j["tag_labels"] = e.tag_labels();  // the tagger's (the parse route); empty without one
    }
    return j;
  }

  // Runs a POST route: a JSON body (the HTTP layer has already held it to --max-request-bytes),
  // readiness, the concurrency limit, JSON parsing, and every error turned into its JSON body.
  template <class Route>
  void post(const http::Request& req, http::Response& res, Route route) {
    const Call call{Clock::now(), req.client_gone};
    bool acquired = false;
    try {
      // Every Content-Type line counts: a JSON line first must not hide a form after it.
      for (const auto& [name, type] : req.headers) {
        if (name != "content-type") continue;
        const std::string problem = content_type_problem(type);
        if (!problem.empty()) throw ApiError(ErrorKind::kUnsupportedMediaType, problem);
      }
      // A compressed body (gzip, br, ...) is refused rather than parsed as if it were JSON
      // (RFC 9110 §15.5.16: 415, with Accept-Encoding naming what would be taken).
      // Every Content-Encoding line counts: "identity" first must not hide a "gzip" after it.
      for (const auto& [name, coding] : req.headers) {
        if (name != "content-encoding" || identity_coding(coding)) continue;
        res.set_header("Accept-Encoding", "identity");
        throw ApiError(
            ErrorKind::kUnsupportedMediaType,
            "Content-Encoding '" + coding + "' is not supported: send the JSON body uncompressed");
      }
      if (ctx.state.load() != ServerState::kReady) throw unavailable();
      if (ctx.in_flight.fetch_add(1) >= ctx.options.max_concurrent_requests) {
        ctx.in_flight.fetch_sub(1);
        throw ApiError(ErrorKind::kOverloaded,
                       "too many requests in flight (--max-concurrent-requests " +
                           std::to_string(ctx.options.max_concurrent_requests) + "); retry later");
      }
      acquired = true;
      route(parse_body(req.body), res, call);
    } catch (const ApiError& e) {
      write_error(res, e);
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", req.path, e.what());
      write_error(res, ApiError(ErrorKind::kInternal, std::string("internal error: ") + e.what()));
    }
    if (acquired) ctx.in_flight.fetch_sub(1);
    ctx.metrics.observe_request_duration(req.path, seconds_since(call.t0));
  }

  // The API key check (every route but /health). The scheme is case-insensitive (RFC 7235
  // §2.1): "bearer KEY" is the same credential.
  bool authorized(const http::Request& req) const {
    if (ctx.options.api_key.empty() || req.path == "/health") return true;
    const std::string* auth = req.header("authorization");
    const std::string prefix = "bearer ";
    return auth != nullptr && auth->size() > prefix.size() &&
           ascii_lower(auth->substr(0, prefix.size())) == prefix &&
           equal_constant_time(auth->substr(prefix.size()), ctx.options.api_key);
  }

  // Runs the route of req.path (known, method checked).
  void dispatch(const http::Request& req, http::Response& res) {
    const std::string& p = req.path;
    if (p == "/v1/embeddings" || p == "/embeddings" || p == "/embed") {
      const bool openai = p != "/embed";
      post(req, res, [this, openai](const json& b, http::Response& r, const Call& c) {
        embed_route(b, r, openai, c);
      });
    } else if (p == "/classify") {
      post(req, res,
           [this](const json& b, http::Response& r, const Call& c) { classify_route(b, r, c); });
    } else if (p == "/parse" || p == "/model/parse") {
      post(req, res,
           [this](const json& b, http::Response& r, const Call& c) { parse_route(b, r, c); });
    } else if (p == "/tokenize") {
      post(req, res,
           [this](const json& b, http::Response& r, const Call& c) { tokenize_route(b, r, c); });
    } else if (p == "/health") {
      if (ctx.state.load() != ServerState::kReady) write_error(res, unavailable());
    } else if (p == "/info") {
      set_json(res, info().dump(-1, ' ', false, json::error_handler_t::replace));
    } else if (p == "/v1/models") {
      const json j = {{"object", "list"},
                      {"data", json::array({{{"id", ctx.model_name},
                                             {"object", "model"},
                                             {"created", 0},
                                             {"owned_by", "dialtree"}}})}};
      set_json(res, j.dump(-1, ' ', false, json::error_handler_t::replace));
    } else if (p == "/metrics") {
      res.content_type = "text/plain; version=0.0.4";
      const Inference* loaded = ctx.inference.load(std::memory_order_acquire);
      const http::HttpServer* layer = ctx.http.load(std::memory_order_acquire);
      res.body = ctx.metrics.render(loaded ? loaded->queue_depth() : 0, ctx.in_flight.load(),
                                    layer ? layer->open_connections() : 0);
    } else {
      DIALTREE_UNREACHABLE("route " + p + " is in kRoutes but has no handler");
    }
  }
};

}  // namespace

const char* state_name(ServerState s) {
  switch (s) {
    case ServerState::kLoading:
      return "loading";
    case ServerState::kReady:
      return "ready";
    case ServerState::kDraining:
      return "draining";
    case ServerState::kFailed:
      return "failed";
  }
  DIALTREE_UNREACHABLE("unknown server state");
}

http::Response Routes::handle(const http::Request& req) {
  Handlers h{ctx_};
  http::Response res;
  const Route* route = find_route(req.path);
  if (!h.authorized(req)) {
    write_error(res, ApiError(ErrorKind::kUnauthorized,
                              "missing or wrong API key: send 'Authorization: Bearer <key>'"));
  } else if (route == nullptr) {
    write_error(res, ApiError(ErrorKind::kNotFound, "no route " + req.method + " " + req.path));
  } else if (req.method != route->method && !(req.method == "HEAD" && is_get(*route))) {
    const std::string allow = is_get(*route) ? "GET, HEAD" : route->method;
    write_error(res, ApiError(ErrorKind::kMethodNotAllowed,
                              req.method + " " + req.path + ": this route takes " + allow));
    res.set_header("Allow", allow);
  } else {
    // HEAD runs the GET route; the HTTP layer sends its headers without the body (RFC 9110
    // §9.3.2), so a load balancer's HEAD /health sees the same status as GET.
    h.dispatch(req, res);
  }
  try {
    // 499 (nginx's "client closed request"): answered to nobody.
    ctx_.metrics.record_request(route ? route->path : "other", req.cancelled() ? 499 : res.status);
  } catch (...) {
    // Metrics must never take a connection down (docs/failure-cases.md C24).
  }
  return res;
}

http::Response Routes::layer_error(int status, const std::string& message,
                                   const std::string& path) {
  http::Response res;
  write_error(res, ApiError(kind_of_status(status), message));
  res.status = status;
  try {
    const Route* route = find_route(path);
    ctx_.metrics.record_request(route ? route->path : "other", status);
  } catch (...) {
  }
  return res;
}

}  // namespace dialtree::serve
