// The HTTP side of `dialtree serve` (docs/serving.md "Routes" and "Errors"): the route table,
// the API key check, JSON bodies in, JSON bodies out, and every failure turned into the error
// table's body. The server's life cycle (serve/server.cpp) owns the state these handlers read;
// the model work goes through serve/inference.h. Torch-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "serve/http.h"
#include "serve/metrics.h"
#include "serve/server.h"

namespace dialtree::serve {

class Inference;

/// The server's life cycle, one value read by /health, /info and every POST route:
/// kLoading -> kReady -> kDraining, or kLoading -> kDraining (stopped while loading), or
/// kLoading -> kFailed (the bundle did not load; the server stops).
enum class ServerState { kLoading, kReady, kDraining, kFailed };

/// "loading", "ready", "draining" or "failed" (the `state` of /info).
const char* state_name(ServerState s);

/// What the routes share with the server's life cycle. `inference` is published (release)
/// once the model is loaded and warmed up, before `state` turns kReady; it stays valid until
/// the HTTP layer has stopped.
struct ServerContext {
  /// Takes the settings and derives the served model name (the bundle folder's name when
  /// --served-model-name is empty).
  explicit ServerContext(ServerOptions o);

  const ServerOptions options;
  const std::string model_name;
  Metrics metrics;
  std::atomic<ServerState> state{ServerState::kLoading};
  std::atomic<std::size_t> in_flight{0};  ///< POST requests being answered
  std::atomic<Inference*> inference{nullptr};
  std::atomic<const http::HttpServer*> http{nullptr};  ///< for the open-connections gauge
};

/// The request handler given to the HTTP layer: one call per complete request, on an HTTP
/// worker thread; never throws.
class Routes {
 public:
  /// `ctx` must outlive the Routes.
  explicit Routes(ServerContext& ctx) : ctx_(ctx) {}

  /// Authentication, then the route of the path: 404 for an unknown path, 405 with `Allow`
  /// for a known path asked with another method, 503 while not ready (docs/serving.md).
  http::Response handle(const http::Request& req);

  /// The HTTP layer's own errors (400, 408, 413, 414, 431, 503, 500) in the error table's body,
  /// counted under the route of `path` (the request's, "" when unknown) or "other".
  http::Response layer_error(int status, const std::string& message, const std::string& path);

 private:
  ServerContext& ctx_;
};

}  // namespace dialtree::serve
