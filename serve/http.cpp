#include "serve/http.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "common/text_distance.h"

namespace dialtree::serve::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

const std::string* Request::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

namespace {

// True if a Transfer-Encoding value lists "chunked" alone: the one transfer coding the layer
// decodes.
bool only_chunked(const std::string& codings) {
  const std::vector<std::string> items = header_list(codings);
  return !items.empty() && std::all_of(items.begin(), items.end(),
                                       [](const std::string& c) { return c == "chunked"; });
}

std::string seconds_text(std::chrono::milliseconds d) {
  const long long ms = d.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

class Connection;

struct HttpServer::Impl {
  Limits limits;
  Handler handler;
  ErrorResponder on_error;
  asio::io_context ioc{1};  // one event-loop thread: connection state needs no locks
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;  // loop thread only
  std::atomic<std::size_t> open{0};
  bool stopping = false;  // loop thread only
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  // Started by run(), not before: threads inherit the signal mask of the thread that starts
  // them, and a caller may block signals only just before running (cli/serve_cmd.cpp).
  std::optional<asio::thread_pool> workers;

  Impl(Limits l, Handler h, ErrorResponder e)
      : limits(l), handler(std::move(h)), on_error(std::move(e)) {}
  ~Impl() {
    if (workers) workers->join();  // handlers finish before the connections and loop they use
  }

  void accept();
  void add(const std::shared_ptr<Connection>& c);
  void remove(Connection* c);
  void drain();
};

/// One client connection, driven by the event loop: read a request (headers, then body, under
/// one deadline), hand it to a worker, watch the socket for a disconnect while the worker runs,
/// write the response, and start over (keep-alive) or close.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl& server, tcp::socket socket)
      : server_(server),
        socket_(std::move(socket)),
        timer_(server.ioc),
        gone_(std::make_shared<std::atomic<bool>>(false)) {}

  void start() { read_next(); }

  /// Answers `status` at once and closes (the connection limit).
  void reject(int status, const std::string& message) { respond_error(status, message); }

  /// The server is stopping: close unless a request is being answered.
  void drain() {
    if (phase_ == Phase::kIdle || phase_ == Phase::kReading || phase_ == Phase::kLingering) {
      close();
    }
  }

 private:
  enum class Phase { kIdle, kReading, kBusy, kWriting, kLingering, kClosed };
  static constexpr std::size_t kReadChunk = 4096;
  static constexpr std::chrono::milliseconds kLinger{2000};
  static constexpr std::chrono::milliseconds kLingerStopping{300};

  void arm(std::chrono::milliseconds d) {
    const unsigned generation = ++timer_generation_;
    timed_out_ = false;
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->timer_generation_ || self->phase_ == Phase::kClosed) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);  // the pending read or write ends with operation_aborted
    });
  }

  void disarm() {
    ++timer_generation_;
    timer_.cancel();
  }

  void read_next() {
    if (server_.stopping) return close();
    phase_ = Phase::kIdle;
    head_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.limits.max_header_bytes));
    parser_->body_limit(server_.limits.max_body_bytes);
    if (buffer_.size() > 0) return begin_reading();  // a pipelined request is already here
    arm(server_.limits.idle_timeout);
    socket_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec) return self->close();  // idle timeout, EOF or reset
                              self->buffer_.commit(n);
                              self->begin_reading();
                            });
  }

  void begin_reading() {
    phase_ = Phase::kReading;
    arm(server_.limits.request_timeout);  // one deadline for headers and body together
    bhttp::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return fail_read(ec);
    const auto& req = parser_->get();
    head_ = req.method() == bhttp::verb::head;
    if (req.target().size() > server_.limits.max_target_bytes) return target_too_long();
    const auto declared = parser_->content_length();
    if (declared && *declared > server_.limits.max_body_bytes) return body_too_large();
    if (const auto te = req.find(bhttp::field::transfer_encoding); te != req.end()) {
      const std::string codings(te->value());
      if (!parser_->chunked()) {
        // The body's length cannot be known (RFC 9112 §6.3): answer, then close.
        return respond_error(400, "Transfer-Encoding '" + codings +
                                      "': the body's length cannot be known (chunked must come "
                                      "once, last; RFC 9112 §6.3)");
      }
      if (!only_chunked(codings)) {
        return respond_error(501, "Transfer-Encoding '" + codings +
                                      "' is not supported: send the body uncompressed, with "
                                      "Content-Length or 'Transfer-Encoding: chunked'");
      }
    }
    if (req.version() >= 11 && req.find(bhttp::field::host) == req.end()) {
      return respond_error(400, "an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)");
    }
    const auto expect = req.find(bhttp::field::expect);
    if (expect != req.end() && ascii_lower(std::string(expect->value())) == "100-continue" &&
        !parser_->is_done()) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue),
                        [self = shared_from_this()](beast::error_code e, std::size_t) {
                          if (e) return self->fail_read(e);
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) return dispatch();
    bhttp::async_read(socket_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->fail_read(ec);
                        self->dispatch();
                      });
  }

  void fail_read(beast::error_code ec) {
    disarm();
    // A HEAD whose header failed is answered without a body too (RFC 9110 §9.3.2).
    head_ = parser_->get().method() == bhttp::verb::head;
    if (timed_out_) {
      return respond_error(
          408, "the request did not arrive within " + seconds_text(server_.limits.request_timeout));
    }
    if (ec == bhttp::error::header_limit) {
      // The parser takes the request line as soon as it is whole: a request without a target
      // ran out of room in its request line (414), one with a target in its fields (431).
      const auto target = parser_->get().target();
      if (target.empty() || target.size() > server_.limits.max_target_bytes) {
        return target_too_long();
      }
      return respond_error(431, "request header fields are over " +
                                    std::to_string(server_.limits.max_header_bytes) + " bytes");
    }
    if (ec == bhttp::error::body_limit) return body_too_large();
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted || ec == asio::error::broken_pipe) {
      return close();  // the client left (or the server is stopping): nobody to answer
    }
    respond_error(400, "malformed HTTP request: " + ec.message());
  }

  void target_too_long() {
    respond_error(414, "request target is over " + std::to_string(server_.limits.max_target_bytes) +
                           " bytes");
  }
  void body_too_large() {
    respond_error(413, "request body is over the limit (" +
                           std::to_string(server_.limits.max_body_bytes) + " bytes)");
  }

  void dispatch() {
    disarm();
    phase_ = Phase::kBusy;
    auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    Request request;
    request.method = std::string(msg.method_string());
    request.target = std::string(msg.target());
    request.path = target_path(request.target);
    for (const auto& field : msg) {
      request.headers.emplace_back(ascii_lower(std::string(field.name_string())),
                                   std::string(field.value()));
    }
    request.body = std::move(msg.body());
    gone_ = std::make_shared<std::atomic<bool>>(false);
    request.client_gone = gone_;
    asio::post(*server_.workers, [self = shared_from_this(), request = std::move(request)] {
      Response response;
      try {
        response = self->server_.handler(request);
      } catch (const std::exception& e) {
        response =
            self->server_.on_error(500, std::string("internal error: ") + e.what(), request.path);
      } catch (...) {
        response = self->server_.on_error(500, "internal error: unknown exception", request.path);
      }
      asio::post(self->server_.ioc, [self, response = std::move(response)]() mutable {
        self->write(std::move(response));
      });
    });
    watch();
  }

  // While a worker runs the request, learn whether the client closes its connection: a
  // readable socket with nothing to read is an EOF (nginx's client-abort check).
  void watch() {
    if (buffer_.size() > 0) return;  // a pipelined request is queued: nothing more to learn
    watching_ = true;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
      self->watching_ = false;
      if (ec || self->phase_ != Phase::kBusy) return;
      char c = 0;
      const ssize_t n = ::recv(self->socket_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        self->gone_->store(true);
      } else if (n < 0) {
        self->watch();  // a spurious wake-up
      }
      // n > 0: the next pipelined request; it is read after this response.
    });
  }

  void respond_error(int status, const std::string& message) {
    keep_alive_ = false;
    Response r;
    try {
      // The request's path when its request line was read (metrics count the error there).
      const std::string target = parser_ ? std::string(parser_->get().target()) : std::string();
      r = server_.on_error(status, message, target.empty() ? "" : target_path(target));
    } catch (...) {
      r.status = status;
    }
    write(std::move(r));
  }

  void write(Response r) {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kWriting;
    if (watching_) {
      beast::error_code ignored;
      socket_.cancel(ignored);  // ends the disconnect watch
    }
    if (gone_->load()) return close();  // nobody is left to read it
    out_.emplace(static_cast<bhttp::status>(r.status), 11);
    out_->set(bhttp::field::server, "dialtree");
    if (!r.content_type.empty()) out_->set(bhttp::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) out_->insert(name, value);
    out_->body() = std::move(r.body);
    out_->keep_alive(keep_alive_ && !server_.stopping);
    // HTTP/1.0 closes unless told otherwise (RFC 9112 §9.3): say that the connection stays.
    if (version_ < 11 && out_->keep_alive()) out_->set(bhttp::field::connection, "keep-alive");
    out_->prepare_payload();
    if (head_) {
      // HEAD: the GET response's headers, Content-Length included, and no body (RFC 9110 §9.3.2).
      const std::size_t length = out_->body().size();
      out_->body().clear();
      out_->content_length(length);
    }
    arm(server_.limits.write_timeout);
    bhttp::async_write(socket_, *out_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         self->disarm();
                         const bool again = !ec && self->out_->keep_alive();
                         self->out_.reset();
                         if (ec) return self->close();
                         // A socket closed with the client's bytes unread, or one they reach after
                         // it closed (the rest of a request answered early, requests pipelined
                         // behind a Connection: close), makes the kernel reset the connection, and
                         // the reset destroys what the client has not read of this response: always
                         // linger.
                         if (!again) return self->linger();
                         self->read_next();
                       });
  }

  // After every response that ends the connection: stop sending, then read and discard what the
  // client still sends (an unread body, pipelined requests) until it closes or kLinger passes
  // (kLingerStopping while the server stops). Closing at once would reset the connection under
  // a client still sending, and it would lose the response it has not read (nginx's lingering
  // close; docs/failure-cases.md B22).
  void linger() {
    phase_ = Phase::kLingering;
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    arm(server_.stopping ? kLingerStopping : kLinger);  // a stop waits for nobody long
    discard();
  }

  void discard() {
    socket_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();  // EOF, reset or kLinger passed
                              self->discard();
                            });
  }

  void close() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    disarm();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_.remove(this);
  }

  HttpServer::Impl& server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::array<char, 4096> discard_{};
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::string_body>> out_;
  std::shared_ptr<std::atomic<bool>> gone_;
  bool head_ = false;  ///< the request being answered is a HEAD: send no body
  Phase phase_ = Phase::kIdle;
  unsigned timer_generation_ = 0;
  bool timed_out_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;  ///< the request's HTTP version (10 or 11)
  bool watching_ = false;
};

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of file descriptors (EMFILE) and the like: retry shortly rather than spin.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // else every response waits ~40 ms
    auto c = std::make_shared<Connection>(*this, std::move(socket));
    add(c);
    if (connections.size() > limits.max_connections) {
      c->reject(503, "too many open connections (" + std::to_string(limits.max_connections) +
                         "); retry later");
    } else {
      c->start();
    }
    accept();
  });
}

void HttpServer::Impl::add(const std::shared_ptr<Connection>& c) {
  connections.emplace(c.get(), c);
  open = connections.size();
}

void HttpServer::Impl::remove(Connection* c) {
  connections.erase(c);
  open = connections.size();
  if (stopping && connections.empty()) keep_running.reset();
}

void HttpServer::Impl::drain() {
  if (stopping) return;
  stopping = true;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [raw, c] : connections) all.push_back(c);
  for (auto& c : all) c->drain();
  if (connections.empty()) keep_running.reset();
}

std::string target_path(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  // Absolute form: a scheme, "://", the authority, then the path (RFC 9112 §3.2.2).
  const std::size_t scheme_end = path.find("://");
  if (path.empty() || path[0] == '/' || scheme_end == std::string::npos) return path;
  const std::string scheme = ascii_lower(path.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return path;
  const std::size_t slash = path.find('/', scheme_end + 3);
  return slash == std::string::npos ? "/" : path.substr(slash);
}

std::vector<std::string> header_list(const std::string& value) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::size_t a = value.find_first_not_of(" \t", start);
    if (a != std::string::npos && a < comma) {
      const std::size_t b = value.find_last_not_of(" \t", comma - 1);
      items.push_back(ascii_lower(value.substr(a, b - a + 1)));
    }
    start = comma + 1;
  }
  return items;
}

HttpServer::HttpServer(Limits limits, Handler handler, ErrorResponder on_error) {
  if (!handler || !on_error) throw std::invalid_argument("HttpServer: empty callback");
  if (limits.max_body_bytes == 0 || limits.max_target_bytes == 0 || limits.max_header_bytes == 0 ||
      limits.max_connections == 0 || limits.worker_threads == 0 ||
      limits.request_timeout.count() <= 0 || limits.idle_timeout.count() <= 0 ||
      limits.write_timeout.count() <= 0) {
    throw std::invalid_argument("HttpServer: every limit and timeout must be > 0");
  }
  impl_ = std::make_unique<Impl>(limits, std::move(handler), std::move(on_error));
  impl_->keep_running.emplace(asio::make_work_guard(impl_->ioc));
}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::bind(const std::string& host, int port) {
  Impl& s = *impl_;
  beast::error_code ec;
  const std::string where = host + ":" + std::to_string(port);
  // "localhost" is the loopback address by definition (RFC 6761 §6.3), with or without an
  // /etc/hosts that says so (a minimal container has none).
  auto address = asio::ip::make_address(ascii_lower(host) == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) {
    // A host name (localhost, a name in /etc/hosts): its first address, as getaddrinfo orders
    // them. Numeric hosts skip the lookup.
    tcp::resolver resolver(s.ioc);
    const auto found = resolver.resolve(host, std::to_string(port), ec);
    if (ec || found.empty()) {  // the flag's value is bad: status 2, a long one cut short
      const std::string shown = host.size() > 80 ? host.substr(0, 80) + "..." : host;
      throw std::invalid_argument("cannot listen on " + shown + ":" + std::to_string(port) +
                                  ": not an IP address, and the name does not resolve (" +
                                  (ec ? ec.message() : std::string("no address")) + ")");
    }
    address = found.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  s.acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR only: rebinding a port in TIME_WAIT is fine, sharing a listening one is not.
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
  }
  return s.acceptor.local_endpoint().port();
}

void HttpServer::run() {
  Impl& s = *impl_;
  if (!s.workers) s.workers.emplace(s.limits.worker_threads);
  asio::post(s.ioc, [&s] {
    if (!s.stopping && s.acceptor.is_open()) s.accept();
  });
  s.ioc.run();
}

void HttpServer::stop() {
  Impl* s = impl_.get();  // not a shared_ptr: a handler in the loop must not own the loop
  asio::post(s->ioc, [s] { s->drain(); });
}

std::size_t HttpServer::open_connections() const {
  return impl_->open.load();
}

}  // namespace dialtree::serve::http
