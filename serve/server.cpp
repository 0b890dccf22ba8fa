#include "serve/server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/batching.h"
#include "common/device_spec.h"
#include "serve/http.h"
#include "serve/inference.h"
#include "serve/routes.h"

namespace dialtree::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string served_name(const ServerOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  std::filesystem::path p(o.model_dir);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

ServerContext::ServerContext(ServerOptions o)
    : options(std::move(o)), model_name(served_name(options)) {}

// The server's life cycle: the HTTP layer is bound and serving (503) while the model loads on
// load_thread; the routes (serve/routes.h) answer from the shared context.
struct Server::Impl {
  ServerContext ctx;
  Routes routes{ctx};
  std::unique_ptr<Inference> inference;
  // Last, so destroyed first: its worker threads call into every member above.
  std::unique_ptr<http::HttpServer> http_server;
  std::thread listen_thread, load_thread;
  std::mutex stop_mutex;
  bool stopped = false;

  explicit Impl(ServerOptions o) : ctx(std::move(o)) {
    const ServerOptions& options = ctx.options;
    http::Limits limits;
    limits.max_body_bytes = options.max_request_bytes;
    limits.max_connections = options.max_connections;
    limits.worker_threads = options.http_threads;
    limits.idle_timeout = std::chrono::seconds(options.keep_alive_timeout_s);
    limits.request_timeout = std::chrono::seconds(options.request_timeout_s);
    limits.write_timeout = std::chrono::seconds(options.request_timeout_s);
    http_server = std::make_unique<http::HttpServer>(
        limits, [this](const http::Request& req) { return routes.handle(req); },
        [this](int status, const std::string& message, const std::string& path) {
          return routes.layer_error(status, message, path);
        });
    ctx.http.store(http_server.get(), std::memory_order_release);
  }

  // Loads and warms up the model (on load_thread), then publishes it and turns ready; on
  // failure the state is kFailed and the server stops.
  void load() {
    try {
      const auto t0 = Clock::now();
      inference = std::make_unique<Inference>(ctx.options, ctx.metrics);
      const Embedder& embedder = inference->embedder();
      // Warm-up: a short input and a longest input, through the same path as requests.
      Input shortest{{}, std::vector<std::int64_t>{embedder.tokenizer().special().unk}};
      Input longest{{},
                    std::vector<std::int64_t>(embedder.limits().max_utterance_length,
                                              embedder.tokenizer().special().unk)};
      const std::vector<data::SerializedExample> warm = {
          embedder.prepare(shortest, true, TruncationDirection::kRight, "warmup"),
          embedder.prepare(longest, true, TruncationDirection::kRight, "warmup")};
      inference->infer(warm, embedder.has_classifier());
      if (embedder.has_tagger()) inference->infer(warm, true, {}, true);  // the parse route's pass
      ctx.inference.store(inference.get(), std::memory_order_release);
      // Ready only from kLoading: a stop() during the load has already made it kDraining.
      ServerState loading = ServerState::kLoading;
      if (!ctx.state.compare_exchange_strong(loading, ServerState::kReady)) return;
      spdlog::info(
          "ready: model {} on {} (hidden_size {}, {}, {}), loaded and warmed up in {:.2f} s",
                   ctx.options.model_dir, embedder.device(), embedder.hidden_size(),
                   embedder.has_classifier() ? "with intent head" : "no intent head",
                   embedder.has_tagger()
                       ? "a tagger of " + std::to_string(embedder.tag_labels().size()) + " tags"
                       : "no tagger",
                   std::chrono::duration<double>(Clock::now() - t0).count());
    } catch (const std::exception& e) {
      spdlog::error("cannot load model {}: {}", ctx.options.model_dir, e.what());
      ctx.state = ServerState::kFailed;
      stop();
    }
  }

  void stop() {
    std::lock_guard<std::mutex> lock(stop_mutex);
    if (stopped) return;
    stopped = true;
    ServerState s = ctx.state.load();
    while (s != ServerState::kFailed &&
           !ctx.state.compare_exchange_weak(s, ServerState::kDraining)) {
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
  const ServerOptions& o = s.ctx.options;
  const int port = s.http_server->bind(o.host, o.port);     // throws when in use
  const bool ipv6 = o.host.find(':') != std::string::npos;  // a URL brackets it: [::1]
  spdlog::info("listening on http://{}{}{}:{} (health 503 until the model is ready)",
               ipv6 ? "[" : "", o.host, ipv6 ? "]" : "", port);
  s.listen_thread = std::thread([&s] { s.http_server->run(); });
  s.load_thread = std::thread([&s] { s.load(); });
  return port;
}

int Server::wait() {
  Impl& s = *impl_;
  if (s.load_thread.joinable()) s.load_thread.join();
  if (s.listen_thread.joinable()) s.listen_thread.join();
  if (s.inference) s.inference->stop();
  return s.ctx.state.load() == ServerState::kFailed ? 1 : 0;
}

void Server::stop() {
  impl_->stop();
}

bool Server::ready() const {
  return impl_->ctx.state.load() == ServerState::kReady;
}

}  // namespace dialtree::serve
