#include "serve/server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/device_spec.h"
#include "common/strict_yaml.h"
#include "common/text_distance.h"
#include "common/utf8.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/embedder.h"
#include "serve/http.h"
#include "serve/metrics.h"

#ifndef DIALTREE_VERSION
#define DIALTREE_VERSION "unknown"
#endif

namespace dialtree::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string ms(double seconds) {
  return std::to_string(static_cast<long long>(seconds * 1000.0));
}

// The answers of one HTTP request's inputs, filled by the inference worker.
struct RequestState {
  std::mutex mutex;
  std::condition_variable done;
  std::size_t pending = 0;
  std::vector<std::vector<float>> pooled, probs;
  std::string error;
  double queue_s = 0.0, inference_s = 0.0;
  std::shared_ptr<const std::atomic<bool>> client_gone;  ///< set when the client disconnects

  bool cancelled() const { return client_gone && client_gone->load(); }
};

// One queued input.
struct Job {
  const data::SerializedExample* example = nullptr;
  std::size_t tokens = 0;
  std::shared_ptr<RequestState> state;
  std::size_t index = 0;
  bool want_probs = false;
  Clock::time_point enqueued;
};

/// A route and the one method it takes (docs/serving.md "Routes").
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {
    {"/v1/embeddings", "POST"}, {"/embeddings", "POST"}, {"/embed", "POST"},
    {"/classify", "POST"},      {"/tokenize", "POST"},   {"/health", "GET"},
    {"/info", "GET"},           {"/metrics", "GET"},     {"/v1/models", "GET"}};

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
bool json_content_type(const std::string* type) {
  if (type == nullptr) return true;
  std::string t = type->substr(0, type->find(';'));
  t = strict_yaml::trim(t);
  t = ascii_lower(t);
  return t == "application/json" ||
         (t.rfind("application/", 0) == 0 && t.size() > 17 && t.substr(t.size() - 5) == "+json");
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
    const auto [first, last] = segments[q];
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

}  // namespace

void ServerOptions::validate() const {
  auto bad = [](const std::string& flag, const std::string& what) {
    throw std::invalid_argument("--" + flag + ": " + what);
  };
  if (model_dir.empty()) bad("model", "is required");
  if (port < 0 || port > 65535) bad("port", "must be in [0, 65535], got " + std::to_string(port));
  if (host.empty()) bad("host", "must not be empty");
  if (max_concurrent_requests < 1) bad("max-concurrent-requests", "must be >= 1");
  if (max_batch_tokens < 1) bad("max-batch-tokens", "must be >= 1");
  if (max_batch_requests < 1) bad("max-batch-requests", "must be >= 1");
  if (max_client_batch_size < 1) bad("max-client-batch-size", "must be >= 1");
  if (!(max_wait_ms >= 0.0 && max_wait_ms <= 10000.0)) {
    bad("max-wait-ms", "must be in [0, 10000]");
  }
  if (const std::string p = device_spec_problem(device); !p.empty()) bad("device", p);
  if (max_input_length < 3)
    bad("max-input-length", "must be >= 3 (one token and two role markers)");
  if (max_request_bytes < 1) {
    bad("max-request-bytes", "must be >= 1 (0 does not mean unlimited; give a real limit)");
  }
  if (http_threads < 1 || http_threads > 4096) bad("http-threads", "must be in [1, 4096]");
  if (max_connections < 1) bad("max-connections", "must be >= 1");
  if (keep_alive_timeout_s < 1 || keep_alive_timeout_s > 3600) {
    bad("keep-alive-timeout", "must be in [1, 3600] seconds");
  }
  if (request_timeout_s < 1 || request_timeout_s > 3600) {
    bad("request-timeout", "must be in [1, 3600] seconds");
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (num_threads != 0 && (num_threads < 1 || static_cast<unsigned>(num_threads) > cpus)) {
    bad("num-threads", "must be in [1, " + std::to_string(cpus) + "] (this machine's CPUs), got " +
                           std::to_string(num_threads));
  }
  if (max_input_length > max_batch_tokens) {
    bad("max-input-length", std::to_string(max_input_length) + " exceeds --max-batch-tokens " +
                                std::to_string(max_batch_tokens) +
                                ": one input must fit one batch; raise --max-batch-tokens");
  }
}

json ServerOptions::to_json() const {
  json j = json::object();
  visit(*this, [&j](const char* flag, const auto& value, const char*) {
    std::string key(flag);
    std::replace(key.begin(), key.end(), '-', '_');
    j[key] = value;
  });
  if (!api_key.empty()) j["api_key"] = "***";
  return j;
}

std::string malloc_implementation() {
  // jemalloc exports mallctl(); looked up at run time so that this library needs no jemalloc.
  using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  const auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr) return "glibc";
  const char* version = nullptr;
  std::size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  return std::string("jemalloc ") + version;
}

struct Server::Impl {
  ServerOptions options;
  std::string model_name;
  Metrics metrics;
  std::atomic<std::size_t> in_flight{0};
  /// The server's life cycle, one value read by /health, /info and every POST route:
  /// kLoading -> kReady -> kDraining, or kLoading -> kDraining (stopped while loading), or
  /// kLoading -> kFailed (the bundle did not load; the server stops).
  enum class State { kLoading, kReady, kDraining, kFailed };
  std::atomic<State> state{State::kLoading};
  std::unique_ptr<Embedder> embedder;
  std::unique_ptr<Batcher<Job>> batcher;
  // Last, so destroyed first: its worker threads call into every member above.
  std::unique_ptr<http::HttpServer> http_server;
  std::thread listen_thread, load_thread;
  std::mutex stop_mutex;
  bool stopped = false;

  static const char* state_name(State s) {
    switch (s) {
      case State::kLoading:
        return "loading";
      case State::kReady:
        return "ready";
      case State::kDraining:
        return "draining";
      case State::kFailed:
        return "failed";
    }
    DIALTREE_UNREACHABLE("unknown server state");
  }

  // The 503 of a server that is not ready, saying why.
  ApiError unavailable() const {
    const State s = state.load();
    return ApiError(ErrorKind::kUnavailable, s == State::kLoading  ? "model is loading"
                                             : s == State::kFailed ? "model failed to load"
                                                                   : "server is shutting down");
  }

  explicit Impl(ServerOptions o) : options(std::move(o)) {
    http::Limits limits;
    limits.max_body_bytes = options.max_request_bytes;
    limits.max_connections = options.max_connections;
    limits.worker_threads = options.http_threads;
    limits.idle_timeout = std::chrono::seconds(options.keep_alive_timeout_s);
    limits.request_timeout = std::chrono::seconds(options.request_timeout_s);
    limits.write_timeout = std::chrono::seconds(options.request_timeout_s);
    http_server = std::make_unique<http::HttpServer>(
        limits, [this](const http::Request& req) { return handle(req); },
        [this](int status, const std::string& message) { return layer_error(status, message); });
    model_name = options.served_model_name;
    if (model_name.empty()) {
      std::filesystem::path p(options.model_dir);
      if (!p.has_filename()) p = p.parent_path();
      model_name = p.filename().string();
    }
  }

  // ---- inference ---------------------------------------------------------------------------

  // Runs one batch from the batcher as one forward pass. Mixed lengths cost little: the
  // encoder runs packed (DialogEncoder::forward_cls), padding only attention, per length bucket.
  // Inputs whose client has disconnected are dropped before the forward pass.
  void run_batch(std::vector<Job>& batch) {
    const auto t_batch = Clock::now();
    std::vector<Job*> live, gone;
    std::vector<const data::SerializedExample*> examples;
    examples.reserve(batch.size());
    std::size_t longest = 0;
    bool want_probs = false;
    for (Job& job : batch) {
      metrics.observe_queue_time(std::chrono::duration<double>(t_batch - job.enqueued).count());
      if (job.state->cancelled()) {
        gone.push_back(&job);
        continue;
      }
      live.push_back(&job);
      examples.push_back(job.example);
      longest = std::max(longest, job.tokens);
      want_probs = want_probs || job.want_probs;
    }
    ForwardOutputs out;
    std::string error;
    double inference_s = 0.0;
    if (!live.empty()) {
      try {
        out = embedder->forward(examples, want_probs);
      } catch (const std::exception& e) {
        error = e.what();
        spdlog::error("inference failed on a batch of {}: {}", live.size(), error);
      }
      inference_s = seconds_since(t_batch);
      metrics.observe_batch(live.size(), longest * live.size(), inference_s);
    }
    for (std::size_t k = 0; k < live.size(); ++k) {
      deliver(*live[k], error, out, k, t_batch, inference_s);
    }
    if (!gone.empty()) metrics.count_cancelled(gone.size());
    for (Job* job : gone) deliver(*job, "the client disconnected", out, 0, t_batch, 0.0);
  }

  // Hands row `row` of `out` (or `error`) to the request of `job`; wakes it when it was the
  // request's last input.
  static void deliver(Job& job, const std::string& error, ForwardOutputs& out, std::size_t row,
                      Clock::time_point t_batch, double inference_s) {
    RequestState& state = *job.state;
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      if (!error.empty()) {
        state.error = error;
      } else {
        state.pooled[job.index] = std::move(out.pooled[row]);
        if (job.want_probs && !out.probs.empty())
          state.probs[job.index] = std::move(out.probs[row]);
      }
      state.queue_s =
          std::max(state.queue_s, std::chrono::duration<double>(t_batch - job.enqueued).count());
      state.inference_s = std::max(state.inference_s, inference_s);
      last = --state.pending == 0;
    }
    if (last) state.done.notify_all();
  }

  // Queues `examples` and waits for their results; inputs still queued when `client_gone` turns
  // true are skipped. @throws ApiError kInternal on failure.
  std::shared_ptr<RequestState> infer(const std::vector<data::SerializedExample>& examples,
                                      bool want_probs,
                                      std::shared_ptr<const std::atomic<bool>> client_gone = {}) {
    auto state = std::make_shared<RequestState>();
    state->client_gone = std::move(client_gone);
    state->pending = examples.size();
    state->pooled.resize(examples.size());
    if (want_probs) state->probs.resize(examples.size());
    std::vector<Job> jobs;
    jobs.reserve(examples.size());
    const auto now = Clock::now();
    for (std::size_t i = 0; i < examples.size(); ++i) {
      jobs.push_back(Job{&examples[i], examples[i].input_ids.size(), state, i, want_probs, now});
    }
    batcher->submit(std::move(jobs));
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done.wait(lock, [&] { return state->pending == 0; });
    if (!state->error.empty()) {
      throw ApiError(ErrorKind::kInternal, "inference failed: " + state->error);
    }
    return state;
  }

  // Serialises every input (on this HTTP thread). @throws ApiError.
  std::vector<data::SerializedExample> prepare(const std::vector<Input>& inputs,
                                               std::optional<bool> truncate,
                                               TruncationDirection direction, const char* field,
                                               std::size_t* tokens) {
    if (inputs.size() > options.max_client_batch_size) {
      throw ApiError(ErrorKind::kTooManyInputs,
                     std::string(field) + ": " + std::to_string(inputs.size()) +
                         " inputs in one request; --max-client-batch-size is " +
                         std::to_string(options.max_client_batch_size),
                     field);
    }
    const bool cut = truncate.value_or(options.auto_truncate);
    std::vector<data::SerializedExample> out;
    out.reserve(inputs.size());
    std::size_t total = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string param = inputs.size() == 1
                                    ? std::string(field)
                                    : std::string(field) + "[" + std::to_string(i) + "]";
      out.push_back(embedder->prepare(inputs[i], cut, direction, param));
      total += out.back().input_ids.size();
      metrics.observe_input_length(out.back().input_ids.size());
    }
    if (tokens) *tokens = total;
    return out;
  }

  void set_timing(http::Response& res, const RequestState* state, std::size_t tokens,
                  Clock::time_point t0, double tokenize_s) {
    res.set_header("x-compute-type", "cpu");
    res.set_header("x-compute-tokens", std::to_string(tokens));
    res.set_header("x-tokenization-time", ms(tokenize_s));
    if (state) {
      res.set_header("x-queue-time", ms(state->queue_s));
      res.set_header("x-inference-time", ms(state->inference_s));
    }
    res.set_header("x-total-time", ms(seconds_since(t0)));
  }

  // ---- routes ------------------------------------------------------------------------------

  void embed_route(const json& body, http::Response& res, bool openai, const Call& call) {
    EmbedRequest r = openai ? parse_openai_embeddings(body) : parse_tei_embed(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples =
        prepare(r.inputs, r.truncate, r.truncation_direction, openai ? "input" : "inputs", &tokens);
    const double tokenize_s = seconds_since(t_tok);
    if (r.dimensions && static_cast<std::size_t>(*r.dimensions) > embedder->hidden_size()) {
      finish_embedding(std::vector<float>(embedder->hidden_size()), r.dimensions, false);  // throws
    }
    auto state = infer(examples, false, call.client_gone);
    std::vector<std::vector<float>> vectors;
    vectors.reserve(state->pooled.size());
    for (auto& v : state->pooled)
      vectors.push_back(finish_embedding(std::move(v), r.dimensions, r.normalize));
    set_json(res, openai ? openai_embeddings_body(vectors, r.base64, model_name, tokens)
                         : tei_embed_body(vectors));
    set_timing(res, state.get(), tokens, call.t0, tokenize_s);
  }

  void classify_route(const json& body, http::Response& res, const Call& call) {
    ClassifyRequest r = parse_classify(body);
    if (!embedder->has_classifier()) {
      throw ApiError(ErrorKind::kNoClassifier,
                     "model '" + model_name +
                         "' has no intent head (num_labels is 0); /classify "
                         "needs a fine-tuned bundle");
    }
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples = prepare(r.inputs, r.truncate, r.truncation_direction, "inputs", &tokens);
    const double tokenize_s = seconds_since(t_tok);
    auto state = infer(examples, true, call.client_gone);
    const auto& labels = embedder->intent_labels();
    json out = json::array();
    for (const auto& p : state->probs) {
      std::vector<std::size_t> order(p.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(r.top_k), p.size());
      std::partial_sort(
          order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
          [&](std::size_t a, std::size_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
      json top = json::array();
      for (std::size_t i = 0; i < k; ++i) {
        top.push_back({{"label", labels[order[i]]}, {"score", p[order[i]]}});
      }
      out.push_back(
          {{"label", labels[order[0]]}, {"score", p[order[0]]}, {"top_k", std::move(top)}});
    }
    set_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
    set_timing(res, state.get(), tokens, call.t0, tokenize_s);
  }

  void tokenize_route(const json& body, http::Response& res, const Call& call) {
    TokenizeRequest r = parse_tokenize(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples = prepare(r.inputs, r.truncate, r.truncation_direction, "inputs", &tokens);
    const data::Tokenizer& tok = embedder->tokenizer();
    json out = json::array();
    for (std::size_t i = 0; i < examples.size(); ++i) {
      const data::SerializedExample& ex = examples[i];
      const std::vector<TokenOrigin> origins = token_origins(ex, r.inputs[i], tok);
      const auto number_or_null = [](long long v) { return v < 0 ? json(nullptr) : json(v); };
      json row = json::array();
      const std::size_t n = ex.input_ids.size();
      for (std::size_t j = 0; j < n; ++j) {
        // Role markers open (position 0) and close (last position) each wrapped utterance.
        const bool special = ex.position_ids[j] == 0 || j + 1 == n || ex.position_ids[j + 1] == 0;
        if (special && !r.add_special_tokens) continue;
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
    if (embedder && embedder->has_classifier()) {
      json id2label = json::object(), label2id = json::object();
      const auto& labels = embedder->intent_labels();
      for (std::size_t i = 0; i < labels.size(); ++i) {
        id2label[std::to_string(i)] = labels[i];
        label2id[labels[i]] = i;
      }
      t["classifier"] = {{"id2label", id2label}, {"label2id", label2id}};
    }
    return t;
  }

  json info() const {
    json j = {{"model_id", options.model_dir},
              {"served_model_name", model_name},
              {"model_type", model_type()},
              {"model_dtype", "float32"},
              {"pooling", "cls"},
              {"max_concurrent_requests", options.max_concurrent_requests},
              {"max_input_length", options.max_input_length},
              {"max_batch_tokens", options.max_batch_tokens},
              {"max_batch_requests", options.max_batch_requests},
              {"max_client_batch_size", options.max_client_batch_size},
              {"max_request_bytes", options.max_request_bytes},
              {"auto_truncate", options.auto_truncate},
              {"version", DIALTREE_VERSION},
              {"allocator", malloc_implementation()},
              {"ready", state.load() == State::kReady},
              {"state", state_name(state.load())}};
    if (embedder) {
      j["hidden_size"] = embedder->hidden_size();
      j["max_utterance_length"] = embedder->limits().max_utterance_length;
      j["max_turns"] = embedder->limits().max_turns;
      j["tokenizer"] = embedder->tokenizer().type();
      j["labels"] = embedder->intent_labels();
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
      if (!json_content_type(req.header("content-type"))) {
        throw ApiError(ErrorKind::kUnsupportedMediaType,
                       "Content-Type '" + *req.header("content-type") +
                           "' is not JSON: send 'Content-Type: application/json' (curl: -H "
                           "'Content-Type: application/json')");
      }
      if (state.load() != State::kReady) throw unavailable();
      if (in_flight.fetch_add(1) >= options.max_concurrent_requests) {
        in_flight.fetch_sub(1);
        throw ApiError(ErrorKind::kOverloaded,
                       "too many requests in flight (--max-concurrent-requests " +
                           std::to_string(options.max_concurrent_requests) + "); retry later");
      }
      acquired = true;
      route(parse_body(req.body), res, call);
    } catch (const ApiError& e) {
      write_error(res, e);
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", req.path, e.what());
      write_error(res, ApiError(ErrorKind::kInternal, std::string("internal error: ") + e.what()));
    }
    if (acquired) in_flight.fetch_sub(1);
    metrics.observe_request_duration(req.path, seconds_since(call.t0));
  }

  // The API key check (every route but /health). The scheme is case-insensitive (RFC 7235
  // §2.1): "bearer KEY" is the same credential.
  bool authorized(const http::Request& req) const {
    if (options.api_key.empty() || req.path == "/health") return true;
    const std::string* auth = req.header("authorization");
    const std::string prefix = "bearer ";
    return auth != nullptr && auth->size() > prefix.size() &&
           ascii_lower(auth->substr(0, prefix.size())) == prefix &&
           equal_constant_time(auth->substr(prefix.size()), options.api_key);
  }

  // One request, on an HTTP worker thread: authentication, then the route of its path (404 for
  // an unknown path, 405 with Allow for a known path asked with another method).
  http::Response handle(const http::Request& req) {
    http::Response res;
    const Route* route = find_route(req.path);
    if (!authorized(req)) {
      write_error(res, ApiError(ErrorKind::kUnauthorized,
                                "missing or wrong API key: send 'Authorization: Bearer <key>'"));
    } else if (route == nullptr) {
      write_error(res, ApiError(ErrorKind::kNotFound, "no route " + req.method + " " + req.path));
    } else if (req.method != route->method) {
      write_error(res,
                  ApiError(ErrorKind::kMethodNotAllowed,
                           req.method + " " + req.path + ": this route takes " + route->method));
      res.set_header("Allow", route->method);
    } else {
      dispatch(req, res);
    }
    try {
      // 499 (nginx's "client closed request"): answered to nobody.
      metrics.record_request(route ? route->path : "other", req.cancelled() ? 499 : res.status);
    } catch (...) {
      // Metrics must never take a connection down (docs/failure-cases.md C24).
    }
    return res;
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
    } else if (p == "/tokenize") {
      post(req, res,
           [this](const json& b, http::Response& r, const Call& c) { tokenize_route(b, r, c); });
    } else if (p == "/health") {
      if (state.load() != State::kReady) write_error(res, unavailable());
    } else if (p == "/info") {
      set_json(res, info().dump(-1, ' ', false, json::error_handler_t::replace));
    } else if (p == "/v1/models") {
      const json j = {{"object", "list"},
                      {"data", json::array({{{"id", model_name},
                                             {"object", "model"},
                                             {"created", 0},
                                             {"owned_by", "dialtree"}}})}};
      set_json(res, j.dump(-1, ' ', false, json::error_handler_t::replace));
    } else if (p == "/metrics") {
      res.content_type = "text/plain; version=0.0.4";
      res.body = metrics.render(batcher ? batcher->queue_depth() : 0, in_flight.load(),
                                http_server ? http_server->open_connections() : 0);
    } else {
      DIALTREE_UNREACHABLE("route " + p + " is in kRoutes but has no handler");
    }
  }

  // The HTTP layer's own errors (400, 408, 413, 414, 431, 503, 500) in the error table's body.
  http::Response layer_error(int status, const std::string& message) {
    http::Response res;
    write_error(res, ApiError(kind_of_status(status), message));
    res.status = status;
    try {
      metrics.record_request("other", status);
    } catch (...) {
    }
    return res;
  }

  void load() {
    try {
      const auto t0 = Clock::now();
      embedder =
          std::make_unique<Embedder>(options.model_dir, options.max_input_length, options.device);
      BatchLimits limits;
      limits.max_batch_tokens = options.max_batch_tokens;
      limits.max_batch_requests = options.max_batch_requests;
      limits.max_wait =
          std::chrono::microseconds(static_cast<long long>(options.max_wait_ms * 1000));
      batcher =
          std::make_unique<Batcher<Job>>(limits, [this](std::vector<Job>& b) { run_batch(b); });
      // Warm-up: a short input and a longest input, through the same path as requests.
      Input shortest{{}, std::vector<std::int64_t>{embedder->tokenizer().special().unk}};
      Input longest{{},
                    std::vector<std::int64_t>(embedder->limits().max_utterance_length,
                                              embedder->tokenizer().special().unk)};
      const std::vector<data::SerializedExample> warm = {
          embedder->prepare(shortest, true, TruncationDirection::kRight, "warmup"),
          embedder->prepare(longest, true, TruncationDirection::kRight, "warmup")};
      infer(warm, embedder->has_classifier());
      // Ready only from kLoading: a stop() during the load has already made it kDraining.
      State loading = State::kLoading;
      if (!state.compare_exchange_strong(loading, State::kReady)) return;
      spdlog::info("ready: model {} on {} (hidden_size {}, {}), loaded and warmed up in {:.2f} s",
                   options.model_dir, embedder->device(), embedder->hidden_size(),
                   embedder->has_classifier() ? "with intent head" : "no intent head",
                   seconds_since(t0));
    } catch (const std::exception& e) {
      spdlog::error("cannot load model {}: {}", options.model_dir, e.what());
      state = State::kFailed;
      stop();
    }
  }

  void stop() {
    std::lock_guard<std::mutex> lock(stop_mutex);
    if (stopped) return;
    stopped = true;
    State s = state.load();
    while (s != State::kFailed && !state.compare_exchange_weak(s, State::kDraining)) {
    }
    http_server->stop();
  }
};

Server::Server(ServerOptions options) {
  options.validate();
  impl_ = std::make_unique<Impl>(std::move(options));
}

Server::~Server() {
  stop();
  wait();
}

int Server::start() {
  Impl& s = *impl_;
  const int port = s.http_server->bind(s.options.host, s.options.port);  // throws when in use
  spdlog::info("listening on http://{}:{} (health 503 until the model is ready)", s.options.host,
               port);
  s.listen_thread = std::thread([&s] { s.http_server->run(); });
  s.load_thread = std::thread([&s] { s.load(); });
  return port;
}

int Server::wait() {
  Impl& s = *impl_;
  if (s.load_thread.joinable()) s.load_thread.join();
  if (s.listen_thread.joinable()) s.listen_thread.join();
  if (s.batcher) s.batcher->stop();
  return s.state.load() == Impl::State::kFailed ? 1 : 0;
}

void Server::stop() {
  impl_->stop();
}

bool Server::ready() const {
  return impl_->state.load() == Impl::State::kReady;
}

}  // namespace dialtree::serve
