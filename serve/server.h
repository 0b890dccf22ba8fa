// `dialtree serve`: the embedding HTTP server on an event-driven HTTP layer (serve/http.h), its
// routes (serve/routes.h) and the model behind a dynamic batcher (serve/inference.h); this file is
// the life cycle that ties them (docs/serving.md "Code layout"). Health is 503 until the model is
// loaded and warmed up, and again while draining.
#pragma once

#include <memory>

#include "serve/options.h"

namespace dialtree::serve {

/// The server. Construct, start(), then wait(); stop() (from any thread, e.g. a signal
/// watcher) drains in-flight requests and makes wait() return.
class Server {
 public:
  /// @throws std::invalid_argument from options.validate().
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds the port (health answers 503 from here on), then loads the bundle and warms it up
  /// in the background; logs "ready" when /health turns 200. Returns the bound port.
  /// @throws std::runtime_error if the address cannot be bound.
  int start();
  /// Blocks until the server has stopped. Returns 0, or 1 if loading the model failed.
  int wait();
  /// Stops accepting connections, finishes requests in flight, then stops the batcher.
  /// Idempotent; safe from any thread.
  void stop();
  /// True once the model is loaded and warmed up (and not draining).
  bool ready() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dialtree::serve
