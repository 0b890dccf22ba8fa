// The attack and fault suite of the server's HTTP layer (serve/http.h), with a plain handler and
// raw loopback sockets, bounded in time (docs/serving.md "HTTP layer"): slow-header and idle
// keep-alive clients at twice the worker count beside a normal client, pipelining, malformed
// framing (Content-Length -1, 20 digits, conflicting; garbage request line; 414; 431; 413 before
// the body), the connection limit, a second server on the same port, clients that disconnect
// mid-request (cancellation), Expect: 100-continue, timeouts and draining.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/raw_client.h"
#include "serve/http.h"

namespace dialtree::serve::http {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using dialtree::testing::Raw;
using dialtree::testing::Reply;

std::string get(const std::string& path, bool close = false) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + (close ? "Connection: close\r\n" : "") +
         "\r\n";
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// An HttpServer on a free loopback port, run on its own thread, with test routes:
///   /path    answers the request's path;  /echo  answers the body;
///   /slow?ms=N  waits N ms or until the client is gone (counted in `cancelled`);
///   /throw   throws.
class Served {
 public:
  explicit Served(Limits limits) {
    server_ = std::make_unique<HttpServer>(
        limits, [this](const Request& r) { return handle(r); },
        [](int status, const std::string& message, const std::string&) {
          Response res;
          res.status = status;
          res.content_type = "application/json";
          res.body = R"({"error":{"status":)" + std::to_string(status) + R"(,"message":")" +
                     message + "\"}}";
          return res;
        });
    port_ = server_->bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->run(); });
  }
  ~Served() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
  }
  int port() const { return port_; }
  HttpServer& server() { return *server_; }
  std::atomic<int> cancelled{0}, handled{0};

 private:
  Response handle(const Request& r) {
    ++handled;
    Response res;
    res.content_type = "text/plain";
    if (r.path == "/echo") {
      res.body = r.body;
    } else if (r.path == "/slow") {
      const int ms = std::stoi(r.target.substr(r.target.find("ms=") + 3));
      const auto until = Clock::now() + std::chrono::milliseconds(ms);
      while (Clock::now() < until) {
        if (r.cancelled()) {
          ++cancelled;
          break;
        }
        std::this_thread::sleep_for(5ms);
      }
      res.body = "slow";
    } else if (r.path == "/throw") {
      throw std::runtime_error("boom");
    } else {
      res.body = r.path;
    }
    return res;
  }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::thread thread_;
};

Limits small_limits() {
  Limits l;
  l.worker_threads = 4;
  l.max_body_bytes = 1000;
  l.max_target_bytes = 1024;
  l.max_header_bytes = 4096;
  l.request_timeout = 2000ms;
  l.idle_timeout = 2000ms;
  return l;
}

TEST(Http, KeepAliveRoundTripsAndHandlerErrors) {
  Served s(small_limits());
  Raw c(s.port());
  ASSERT_TRUE(c.send(get("/hello")));
  Reply r = c.read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "/hello");
  EXPECT_THAT(r.head, HasSubstr("Content-Type: text/plain"));
  ASSERT_TRUE(c.send(post("/echo", "{\"a\": 1}")));  // same connection
  r = c.read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"a\": 1}");
  ASSERT_TRUE(c.send(get("/throw")));
  r = c.read();
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(r.body, HasSubstr("internal error: boom"));
}

TEST(Http, PipelinedRequestsAreAnsweredInOrder) {
  Served s(small_limits());
  Raw c(s.port());
  ASSERT_TRUE(c.send(get("/a") + post("/echo", "bee") + get("/c", true)));
  EXPECT_EQ(c.read().body, "/a");
  EXPECT_EQ(c.read().body, "bee");
  const Reply last = c.read();
  EXPECT_EQ(last.body, "/c");
  EXPECT_THAT(last.head, HasSubstr("Connection: close"));
  EXPECT_TRUE(c.closed_within(1000ms));
}

TEST(Http, SlowHeaderAndIdleClientsDoNotDelayOthers) {
  Limits l = small_limits();
  l.request_timeout = 10000ms;
  l.idle_timeout = 10000ms;
  Served s(l);
  const int attackers = 2 * static_cast<int>(l.worker_threads);
  std::vector<std::unique_ptr<Raw>> slow, idle;
  for (int i = 0; i < attackers; ++i) {
    slow.push_back(std::make_unique<Raw>(s.port()));
    ASSERT_TRUE(slow.back()->send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    idle.push_back(std::make_unique<Raw>(s.port()));
    ASSERT_TRUE(idle.back()->send(get("/once")));
    ASSERT_EQ(idle.back()->read().status, 200);  // then stays open, idle
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {  // one header byte per slow client every 100 ms
    while (!done) {
      for (auto& c : slow) c->send("a");
      std::this_thread::sleep_for(100ms);
    }
  });
  std::vector<double> latency_ms;
  for (int i = 0; i < 60; ++i) {
    const auto t0 = Clock::now();
    Raw c(s.port());  // a new connection each time: accepting must not stall either
    ASSERT_TRUE(c.send(get("/health", true)));
    ASSERT_EQ(c.read(2000ms).status, 200);
    latency_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  done = true;
  trickle.join();
  std::sort(latency_ms.begin(), latency_ms.end());
  EXPECT_LT(latency_ms.back(), 1000.0)
      << "worst of 60 requests beside " << 2 * attackers << " hostile connections";
  EXPECT_GE(s.server().open_connections(), static_cast<std::size_t>(2 * attackers));
}

TEST(Http, RequestTimeoutIsTotalNotPerByte) {
  Limits l = small_limits();
  l.request_timeout = 600ms;
  Served s(l);
  Raw c(s.port());
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  Reply r;
  for (int i = 0; i < 40 && r.status == 0; ++i) {  // a byte every 50 ms, for up to 2 s
    c.send("a");
    r = c.read(50ms);
  }
  EXPECT_EQ(r.status, 408);
  EXPECT_THAT(r.body, HasSubstr("600 ms"));
  EXPECT_LT(Clock::now() - t0, 1500ms);
  EXPECT_TRUE(c.closed_within(1000ms));
}

TEST(Http, IdleKeepAliveConnectionsAreClosedAfterTheIdleTimeout) {
  Limits l = small_limits();
  l.idle_timeout = 300ms;
  Served s(l);
  Raw c(s.port());
  // Timed from before the request: the idle timer starts after the response, so the connection
  // lives at least 300 ms from here whatever this thread's scheduling delays.
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.send(get("/x")));
  ASSERT_EQ(c.read().status, 200);
  EXPECT_TRUE(c.closed_within(2000ms));
  EXPECT_GE(Clock::now() - t0, 300ms);
}

TEST(Http, MalformedFramingIsRefusedAtOnce) {
  Served s(small_limits());
  struct Case {
    const char* what;
    std::string bytes;
    int status;
  };
  const std::string big_target = "/" + std::string(100000, 'a');
  const std::vector<Case> cases = {
      {"negative Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
      {"20-digit Content-Length",
       "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"conflicting Content-Length",
       "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
      {"garbage request line", "HELLO THERE\r\n\r\n", 400},
      {"a 100 KB target", "GET " + big_target + " HTTP/1.1\r\nHost: x\r\n\r\n", 414},
      {"a 100 KB header",
       "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100000, 'b') + "\r\n\r\n", 431},
      {"a declared body over the limit", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n",
       413},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Raw c(s.port());
    const auto t0 = Clock::now();
    c.send(k.bytes);
    const Reply r = c.read(2000ms);
    EXPECT_EQ(r.status, k.status);
    EXPECT_THAT(r.body, HasSubstr("\"status\":" + std::to_string(k.status)));
    EXPECT_LT(Clock::now() - t0, 500ms);  // no stall waiting for a body that never comes
    EXPECT_TRUE(c.closed_within(1000ms));
  }
  EXPECT_EQ(s.handled.load(), 0);
}

TEST(Http, ABodyOverTheLimitWithoutContentLengthIsRefused) {
  Served s(small_limits());
  Raw c(s.port());
  std::string chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "200\r\n" + std::string(512, 'x') + "\r\n";
  chunked += "0\r\n\r\n";
  c.send(chunked);
  EXPECT_EQ(c.read(2000ms).status, 413);
}

TEST(Http, ConnectionLimitAnswers503AndCloses) {
  Limits l = small_limits();
  l.max_connections = 3;
  Served s(l);
  std::vector<std::unique_ptr<Raw>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<Raw>(s.port()));
    ASSERT_TRUE(open.back()->send(get("/x")));
    ASSERT_EQ(open.back()->read().status, 200);
  }
  Raw extra(s.port());
  const Reply r = extra.read(2000ms);
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.body, HasSubstr("too many open connections (3)"));
  EXPECT_TRUE(extra.closed_within(1000ms));
  extra.close();
  open.pop_back();  // one leaves: a new client is served again
  for (int i = 0; i < 50; ++i) {
    Raw again(s.port());
    again.send(get("/y"));
    if (again.read(2000ms).status == 200) return;
    std::this_thread::sleep_for(10ms);  // until the loop has seen the close
  }
  ADD_FAILURE() << "a freed connection slot was never reused";
}

TEST(Http, APortInUseIsRefused) {
  Served s(small_limits());
  HttpServer second(
      small_limits(), [](const Request&) { return Response{}; },
      [](int, const std::string&, const std::string&) { return Response{}; });
  try {
    second.bind("127.0.0.1", s.port());
    FAIL() << "a second server bound a port in use";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:" + std::to_string(s.port())));
    EXPECT_THAT(e.what(), HasSubstr("in use"));
  }
  // A name that does not resolve is a bad value (status 2), not a system refusal.
  EXPECT_THROW(second.bind("not-an-address", 0), std::invalid_argument);
}

TEST(Http, AClientThatDisconnectsCancelsItsRequest) {
  Served s(small_limits());
  {
    Raw c(s.port());
    ASSERT_TRUE(c.send(get("/slow?ms=5000")));
    std::this_thread::sleep_for(100ms);  // the handler is running
  }                                      // closed
  const auto deadline = Clock::now() + 2s;
  while (s.cancelled.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(s.cancelled.load(), 1);
  // A client that stays is not cancelled.
  Raw c(s.port());
  ASSERT_TRUE(c.send(get("/slow?ms=200")));
  EXPECT_EQ(c.read().body, "slow");
  EXPECT_EQ(s.cancelled.load(), 1);
}

TEST(Http, HeaderListsSplitTrimAndLowerCase) {  // RFC 9110 §5.6.1
  using V = std::vector<std::string>;
  EXPECT_EQ(header_list("gzip, Chunked"), (V{"gzip", "chunked"}));
  EXPECT_EQ(header_list(" ,identity,\t,  , "), (V{"identity"}));
  EXPECT_EQ(header_list(""), V{});
  EXPECT_EQ(header_list("a,"), V{"a"});
}

TEST(Http, ExpectContinueGetsA100BeforeTheBody) {
  Served s(small_limits());
  Raw c(s.port());
  ASSERT_TRUE(c.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  const Reply interim = c.read(2000ms);
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.send("hello"));
  const Reply r = c.read(2000ms);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
}

TEST(Http, StopDrainsRequestsInFlightAndClosesIdleConnections) {
  auto s = std::make_unique<Served>(small_limits());
  Raw idle(s->port());
  ASSERT_TRUE(idle.send(get("/x")));
  ASSERT_EQ(idle.read().status, 200);
  Raw busy(s->port());
  ASSERT_TRUE(busy.send(get("/slow?ms=300")));
  // Stop only once the slow request is being handled (a sleep raced a busy machine).
  const auto handled_by = Clock::now() + 5s;
  while (s->handled.load() < 2 && Clock::now() < handled_by) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(s->handled.load(), 2);
  const auto t0 = Clock::now();
  std::thread stopper([&] { s->stop(); });
  const Reply r = busy.read(3000ms);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "slow");
  EXPECT_THAT(r.head, HasSubstr("Connection: close"));
  EXPECT_TRUE(idle.closed_within(1000ms));
  stopper.join();
  EXPECT_LT(Clock::now() - t0, 2s);
  EXPECT_THROW(Raw late(s->port()), std::runtime_error);  // no longer accepting
}

TEST(Http, TargetPathOfOriginAndAbsoluteForms) {  // RFC 9112 §3.2.1, §3.2.2
  EXPECT_EQ(target_path("/health?x=1"), "/health");
  EXPECT_EQ(target_path("http://localhost:3000/health"), "/health");
  EXPECT_EQ(target_path("HTTPS://h/a/b?q=/c"), "/a/b");
  EXPECT_EQ(target_path("http://h"), "/");
  EXPECT_EQ(target_path("http://h?q"), "/");
  EXPECT_EQ(target_path("*"), "*");
  EXPECT_EQ(target_path("ftp://h/x"), "ftp://h/x");  // not HTTP: left for a 404
}

TEST(Http, HostAbsoluteFormHttp10KeepAliveAndHeadErrors) {
  Served s(small_limits());
  {
    // An absolute-form target is served by its path.
    Raw c(s.port());
    ASSERT_TRUE(c.send("GET http://localhost/hello?x HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    const Reply r = c.read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "/hello");
  }
  {
    // HTTP/1.1 without Host: 400 (RFC 9112 §3.2); HTTP/1.0 needs none.
    Raw c(s.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\n\r\n"));
    const Reply r = c.read();
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body, HasSubstr("Host"));
  }
  {
    // An HTTP/1.0 client that asks to keep the connection is told it stays open, and it does.
    Raw c(s.port());
    ASSERT_TRUE(c.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    Reply r = c.read();
    EXPECT_EQ(r.status, 200);
    EXPECT_THAT(r.head, HasSubstr("Connection: keep-alive"));
    ASSERT_TRUE(c.send("GET /b HTTP/1.0\r\n\r\n"));  // without it: answered, then closed
    r = c.read();
    EXPECT_EQ(r.body, "/b");
    EXPECT_THAT(r.head, ::testing::Not(HasSubstr("keep-alive")));
    EXPECT_TRUE(c.closed_within(1000ms));
  }
  {
    // A HEAD whose header fields are too large gets its 431 without a body.
    Raw c(s.port());
    ASSERT_TRUE(c.send("HEAD /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(10000, 'b') +
                       "\r\n\r\n"));
    const Reply r = c.read(2000ms, true);
    EXPECT_EQ(r.status, 431);
    EXPECT_TRUE(c.closed_within(1000ms));
    EXPECT_EQ(c.unread(), 0u) << "a body after the HEAD's headers";
  }
}

TEST(Http, BadLimitsAreRefused) {
  Limits l;
  l.worker_threads = 0;
  EXPECT_THROW(HttpServer(
                   l, [](const Request&) { return Response{}; },
                   [](int, const std::string&, const std::string&) { return Response{}; }),
               std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::serve::http
