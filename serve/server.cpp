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
#include <sys/socket.h>

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/embedder.h"
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

// Pending connections the kernel queues for accept(); cpp-httplib's compiled-in 5 overflows when
// dozens of clients connect at once (connects then stall for a second or fail).
constexpr int kListenBacklog = SOMAXCONN;

const char* const kRoutes[] = {"/v1/embeddings", "/embeddings", "/embed",
                               "/classify",      "/tokenize",   "/health",
                               "/info",          "/metrics",    "/v1/models"};

std::string route_label(const std::string& path) {
  for (const char* r : kRoutes) {
    if (path == r) return r;
  }
  return "other";
}

ErrorKind kind_of_status(int status) {
  switch (status) {
    case 401:
      return ErrorKind::kUnauthorized;
    case 404:
      return ErrorKind::kNotFound;
    case 413:
      return ErrorKind::kPayloadTooLarge;
    case 429:
      return ErrorKind::kOverloaded;
    case 503:
      return ErrorKind::kUnavailable;
    default:
      return status < 500 ? ErrorKind::kInvalidJson : ErrorKind::kInternal;
  }
}

void write_error(httplib::Response& res, const ApiError& e) {
  res.status = http_status(e.kind());
  res.set_content(error_body(e), "application/json");
  if (e.kind() == ErrorKind::kUnauthorized) res.set_header("WWW-Authenticate", "Bearer");
}

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
  if (max_input_length < 3)
    bad("max-input-length", "must be >= 3 (one token and two role markers)");
  if (max_request_bytes < 1) {
    bad("max-request-bytes", "must be >= 1 (0 does not mean unlimited; give a real limit)");
  }
  if (http_threads < 1 || http_threads > 4096) bad("http-threads", "must be in [1, 4096]");
  if (keep_alive_timeout_s < 1 || keep_alive_timeout_s > 3600) {
    bad("keep-alive-timeout", "must be in [1, 3600] seconds");
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
  return json{{"model", model_dir},
              {"served_model_name", served_model_name},
              {"host", host},
              {"port", port},
              {"api_key", api_key.empty() ? "" : "***"},
              {"max_concurrent_requests", max_concurrent_requests},
              {"max_batch_tokens", max_batch_tokens},
              {"max_batch_requests", max_batch_requests},
              {"max_client_batch_size", max_client_batch_size},
              {"max_wait_ms", max_wait_ms},
              {"max_input_length", max_input_length},
              {"max_request_bytes", max_request_bytes},
              {"auto_truncate", auto_truncate},
              {"http_threads", http_threads},
              {"keep_alive_timeout", keep_alive_timeout_s},
              {"num_threads", num_threads}};
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
  httplib::Server http;
  Metrics metrics;
  std::atomic<std::size_t> in_flight{0};
  std::atomic<int> listen_fd{-1};
  /// The server's life cycle, one value read by /health, /info and every POST route:
  /// kLoading -> kReady -> kDraining, or kLoading -> kDraining (stopped while loading), or
  /// kLoading -> kFailed (the bundle did not load; the server stops).
  enum class State { kLoading, kReady, kDraining, kFailed };
  std::atomic<State> state{State::kLoading};
  std::atomic<bool> listen_done{false};  // listen_after_bind() has returned
  std::unique_ptr<Embedder> embedder;
  std::unique_ptr<Batcher<Job>> batcher;
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
  void run_batch(std::vector<Job>& batch) {
    const auto t_batch = Clock::now();
    std::vector<const data::SerializedExample*> examples;
    examples.reserve(batch.size());
    std::size_t longest = 0;
    bool want_probs = false;
    for (const Job& job : batch) {
      metrics.observe_queue_time(std::chrono::duration<double>(t_batch - job.enqueued).count());
      examples.push_back(job.example);
      longest = std::max(longest, job.tokens);
      want_probs = want_probs || job.want_probs;
    }
    ForwardOutputs out;
    std::string error;
    try {
      out = embedder->forward(examples, want_probs);
    } catch (const std::exception& e) {
      error = e.what();
      spdlog::error("inference failed on a batch of {}: {}", batch.size(), error);
    }
    const double inference_s = seconds_since(t_batch);
    metrics.observe_batch(batch.size(), longest * batch.size(), inference_s);
    for (std::size_t k = 0; k < batch.size(); ++k) {
      deliver(batch[k], error, out, k, t_batch, inference_s);
    }
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

  // Queues `examples` and waits for their results. @throws ApiError kInternal on failure.
  std::shared_ptr<RequestState> infer(const std::vector<data::SerializedExample>& examples,
                                      bool want_probs) {
    auto state = std::make_shared<RequestState>();
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

  void set_timing(httplib::Response& res, const RequestState* state, std::size_t tokens,
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

  void embed_route(const json& body, httplib::Response& res, bool openai, Clock::time_point t0) {
    EmbedRequest r = openai ? parse_openai_embeddings(body) : parse_tei_embed(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples =
        prepare(r.inputs, r.truncate, r.truncation_direction, openai ? "input" : "inputs", &tokens);
    const double tokenize_s = seconds_since(t_tok);
    if (r.dimensions && static_cast<std::size_t>(*r.dimensions) > embedder->hidden_size()) {
      finish_embedding(std::vector<float>(embedder->hidden_size()), r.dimensions, false);  // throws
    }
    auto state = infer(examples, false);
    std::vector<std::vector<float>> vectors;
    vectors.reserve(state->pooled.size());
    for (auto& v : state->pooled)
      vectors.push_back(finish_embedding(std::move(v), r.dimensions, r.normalize));
    res.set_content(openai ? openai_embeddings_body(vectors, r.base64, model_name, tokens)
                           : tei_embed_body(vectors),
                    "application/json");
    set_timing(res, state.get(), tokens, t0, tokenize_s);
  }

  void classify_route(const json& body, httplib::Response& res, Clock::time_point t0) {
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
    auto state = infer(examples, true);
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
    res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    set_timing(res, state.get(), tokens, t0, tokenize_s);
  }

  void tokenize_route(const json& body, httplib::Response& res, Clock::time_point t0) {
    TokenizeRequest r = parse_tokenize(body);
    const auto t_tok = Clock::now();
    std::size_t tokens = 0;
    const auto examples = prepare(r.inputs, r.truncate, r.truncation_direction, "inputs", &tokens);
    const data::Tokenizer& tok = embedder->tokenizer();
    json out = json::array();
    for (const auto& ex : examples) {
      json row = json::array();
      const std::size_t n = ex.input_ids.size();
      for (std::size_t j = 0; j < n; ++j) {
        // Role markers open (position 0) and close (last position) each wrapped utterance.
        const bool special = ex.position_ids[j] == 0 || j + 1 == n || ex.position_ids[j + 1] == 0;
        if (special && !r.add_special_tokens) continue;
        row.push_back({{"id", ex.input_ids[j]},
                       {"text", tok.id_to_token(ex.input_ids[j])},
                       {"special", special},
                       {"position_id", ex.position_ids[j]},
                       {"role_id", ex.role_ids[j]},
                       {"turn_id", ex.turn_ids[j]}});
      }
      out.push_back(std::move(row));
    }
    res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    set_timing(res, nullptr, tokens, t0, seconds_since(t_tok));
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

  // Wraps a POST route: body read within the limit, readiness, the concurrency limit, JSON
  // parsing, and every error turned into its JSON body.
  template <class Route>
  httplib::Server::HandlerWithContentReader post(const char* path, Route route) {
    return [this, path, route](const httplib::Request&, httplib::Response& res,
                               const httplib::ContentReader& reader) {
      const auto t0 = Clock::now();
      bool acquired = false;
      try {
        std::string body;
        bool over = false;
        const bool ok = reader([&](const char* data, std::size_t n) {
          if (body.size() + n > options.max_request_bytes) {
            over = true;
            return false;
          }
          body.append(data, n);
          return true;
        });
        if (over || res.status == 413) {
          throw ApiError(ErrorKind::kPayloadTooLarge,
                         "request body is over --max-request-bytes (" +
                             std::to_string(options.max_request_bytes) + " bytes)");
        }
        if (!ok) throw ApiError(ErrorKind::kInvalidJson, "could not read the request body");
        res.status = 200;
        if (state.load() != State::kReady) throw unavailable();
        if (in_flight.fetch_add(1) >= options.max_concurrent_requests) {
          in_flight.fetch_sub(1);
          throw ApiError(ErrorKind::kOverloaded,
                         "too many requests in flight (--max-concurrent-requests " +
                             std::to_string(options.max_concurrent_requests) + "); retry later");
        }
        acquired = true;
        route(parse_body(body), res, t0);
      } catch (const ApiError& e) {
        write_error(res, e);
      } catch (const std::exception& e) {
        spdlog::error("{}: {}", path, e.what());
        write_error(res,
                    ApiError(ErrorKind::kInternal, std::string("internal error: ") + e.what()));
      }
      if (acquired) in_flight.fetch_sub(1);
      metrics.observe_request_duration(path, seconds_since(t0));
    };
  }

  void install_routes() {
    http.set_tcp_nodelay(true);  // docs/build.md P4: without it every response waits ~40 ms
    http.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_fd = sock;
    });
    http.set_keep_alive_max_count(1000);
    http.set_keep_alive_timeout(options.keep_alive_timeout_s);
    http.set_payload_max_length(options.max_request_bytes);
    const std::size_t threads = options.http_threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (options.api_key.empty() || req.path == "/health")
        return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      // The scheme is case-insensitive (RFC 7235 §2.1): "bearer KEY" is the same credential.
      const std::string prefix = "bearer ";
      const bool bearer =
          auth.size() > prefix.size() &&
          std::equal(prefix.begin(), prefix.end(), auth.begin(), [](char a, char b) {
            return a == std::tolower(static_cast<unsigned char>(b));
          });
      if (bearer && equal_constant_time(auth.substr(prefix.size()), options.api_key)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      write_error(res, ApiError(ErrorKind::kUnauthorized,
                                "missing or wrong API key: send 'Authorization: Bearer <key>'"));
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          const ErrorKind kind = kind_of_status(res.status);
          std::string msg = res.status == 404
                                ? "no route " + req.method + " " + req.path
                                : "HTTP " + std::to_string(res.status) + " on " + req.path;
          if (kind == ErrorKind::kPayloadTooLarge) msg = "request body is over the size limit";
          const int status = res.status;
          write_error(res, ApiError(kind, msg));
          res.status = status;
          return httplib::Server::HandlerResponse::Handled;
        }));
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown exception";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          write_error(res, ApiError(ErrorKind::kInternal, "internal error: " + what));
        });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      try {
        metrics.record_request(route_label(req.path), res.status);
      } catch (...) {
        // Metrics must never take a connection down (docs/failure-cases.md C24).
      }
    });

    auto embed_openai = [this](const json& b, httplib::Response& r, Clock::time_point t0) {
      embed_route(b, r, true, t0);
    };
    http.Post("/v1/embeddings", post("/v1/embeddings", embed_openai));
    http.Post("/embeddings", post("/embeddings", embed_openai));
    http.Post("/embed",
              post("/embed", [this](const json& b, httplib::Response& r, Clock::time_point t0) {
                embed_route(b, r, false, t0);
              }));
    http.Post("/classify",
              post("/classify", [this](const json& b, httplib::Response& r, Clock::time_point t0) {
                classify_route(b, r, t0);
              }));
    http.Post("/tokenize",
              post("/tokenize", [this](const json& b, httplib::Response& r, Clock::time_point t0) {
                tokenize_route(b, r, t0);
              }));
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (state.load() == State::kReady) {
        res.status = 200;
        return;
      }
      write_error(res, unavailable());
    });
    http.Get("/info", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(info().dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const json j = {{"object", "list"},
                      {"data", json::array({{{"id", model_name},
                                             {"object", "model"},
                                             {"created", 0},
                                             {"owned_by", "dialtree"}}})}};
      res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.render(batcher ? batcher->queue_depth() : 0, in_flight.load()),
                      "text/plain; version=0.0.4");
    });
  }

  void load() {
    try {
      const auto t0 = Clock::now();
      embedder = std::make_unique<Embedder>(options.model_dir, options.max_input_length);
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
      spdlog::info("ready: model {} (hidden_size {}, {}), loaded and warmed up in {:.2f} s",
                   options.model_dir, embedder->hidden_size(),
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
    http.stop();
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
  s.install_routes();
  int port = s.options.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.options.host);
    if (port < 0) port = -1;
  } else if (!s.http.bind_to_port(s.options.host, port)) {
    port = -1;
  }
  if (port >= 0 && s.listen_fd >= 0) ::listen(s.listen_fd, kListenBacklog);  // raise the backlog
  if (port < 0) {
    throw std::runtime_error("cannot listen on " + s.options.host + ":" +
                             std::to_string(s.options.port) +
                             " (address in use, or not an address of this machine)");
  }
  spdlog::info("listening on http://{}:{} (health 503 until the model is ready)", s.options.host,
               port);
  s.listen_thread = std::thread([&s] {
    s.http.listen_after_bind();
    s.listen_done = true;
  });
  // httplib's stop() does nothing until listen_after_bind() has marked the server running, so a
  // stop in that window (a bundle that fails to load at once, an early SIGTERM) would leave the
  // accept loop running forever. Start loading, and return, only once it runs.
  while (!s.http.is_running() && !s.listen_done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
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
