// The HTTP/1.1 layer of `dialtree serve`: an event-driven server (Boost.Beast on one Asio event
// loop) that hands each complete request to a pool of worker threads. An open connection costs a
// socket and a buffer, never a thread, so slow or idle clients cannot starve the others
// (docs/serving.md "HTTP layer"). Torch-free: the attack suite (tests/http) and the guard build
// test it with a plain handler.
//
// What the layer answers by itself, before any handler runs (bodies from the ErrorResponder):
//   400  malformed framing: a bad request line or header, an invalid, negative, overflowing or
//        repeated Content-Length, a chunked body with a Content-Length
//   408  the request (headers and body together) did not arrive within request_timeout
//   413  a declared or received body over max_body_bytes (answered before the body is read)
//   414  a request target over max_target_bytes
//   431  request line and header fields over max_header_bytes
//   503  max_connections connections already open (the new one is answered and closed)
// After each of these the connection is closed: the stream cannot be resynchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dialtree::serve::http {

/// One complete request, as a handler sees it.
struct Request {
  std::string method;                                        ///< as sent, e.g. "GET", "POST"
  std::string target;                                        ///< as sent: path and query
  std::string path;  ///< target up to the first '?'; of an absolute-form target
                     ///< (`http://host/p?q`, RFC 9112 §3.2.2) its path, "/" when it has none
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lower-cased, in order
  std::string body;
  /// Set by the event loop when the client closes its connection while the handler runs (a
  /// pipelined request behind this one stops the watch: it is set only for a plain disconnect).
  std::shared_ptr<const std::atomic<bool>> client_gone;

  /// The first header named `lower_name` (lower case), or nullptr.
  const std::string* header(std::string_view lower_name) const;
  /// True once the client has gone (see client_gone).
  bool cancelled() const { return client_gone && client_gone->load(); }
};

/// One response. Content-Length, Date-free framing and Connection are set by the layer.
struct Response {
  int status = 200;
  std::string content_type;  ///< "" = no Content-Type header
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers

  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

/// The elements of an HTTP list header value (RFC 9110 §5.6.1: "gzip, chunked"): split at
/// commas, blanks trimmed, empty elements dropped, lower-cased (codings and other tokens
/// compare case-insensitively).
std::vector<std::string> header_list(const std::string& value);

/// The limits and timeouts of the layer (docs/serving.md "HTTP layer"). Times are wall-clock.
struct Limits {
  std::size_t max_body_bytes = 2000000;  ///< 413 beyond (declared or received)
  std::size_t max_target_bytes = 8192;   ///< 414 beyond
  std::size_t max_header_bytes = 16384;  ///< request line + fields; 431 beyond
  /// Headers and body of one request, in total from its first byte (not per read): 408 beyond.
  std::chrono::milliseconds request_timeout{30000};
  /// How long a keep-alive connection may wait for the next request's first byte; closed after.
  std::chrono::milliseconds idle_timeout{5000};
  /// How long writing one response may take (a client that does not read); closed after.
  std::chrono::milliseconds write_timeout{30000};
  std::size_t max_connections = 1024;  ///< open connections; the next is answered 503
  std::size_t worker_threads = 64;     ///< threads running handlers (complete requests only)
};

/// Runs on a worker thread, may block; an exception becomes a 500 from the ErrorResponder.
using Handler = std::function<Response(const Request&)>;
/// The response of an error the layer answers itself: (status, message, path) -> Response;
/// `path` is the request's path when its request line was read (so a 413 on /embed is counted
/// as /embed's), else "".
using ErrorResponder =
    std::function<Response(int status, const std::string& message, const std::string& path)>;

/// The path of a request target: origin form (`/p?q`) up to the '?'; absolute form
/// (`http://host:port/p?q`, any case of the scheme; RFC 9112 §3.2.2) its path, "/" when empty.
std::string target_path(const std::string& target);

/// The server. bind(), then run() on a thread of the caller's; stop() from any thread.
class HttpServer {
 public:
  /// @throws std::invalid_argument if a limit is 0 or a callback is empty.
  HttpServer(Limits limits, Handler handler, ErrorResponder on_error);
  /// Destroy only after run() has returned (or was never called).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and listens (backlog SOMAXCONN) on host:port; port 0 = any free port. No
  /// SO_REUSEPORT: a port another process listens on is refused. Returns the bound port.
  /// `host` is an IP address, "localhost" (127.0.0.1) or a name, bound at its first address.
  /// @throws std::invalid_argument for a name that does not resolve; std::runtime_error naming
  ///   the address and the system's reason when it cannot be bound.
  int bind(const std::string& host, int port);
  /// Serves until stop(): the event loop runs on the calling thread. Returns once every
  /// connection is closed and every handler has returned.
  void run();
  /// Drains: stops accepting, closes idle connections, lets requests already read finish and
  /// answer (with Connection: close), then makes run() return. Idempotent, any thread, and
  /// effective even when called before run().
  void stop();
  /// Connections open now (for tests and /metrics).
  std::size_t open_connections() const;

  struct Impl;  ///< the event loop and its connections (http.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dialtree::serve::http
