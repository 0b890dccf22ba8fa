// Load generator for `dialtree serve` (bench/serve.sh): N client threads, each with its own
// keep-alive connection, send single sentences to POST /embed (`{"inputs": TEXT}`), cycling
// through the lines of a text file, for a fixed duration or a fixed total number of requests.
// Connections are opened one by one before timing starts. Prints one `RESULT key=value ...` line:
// requests, errors, seconds, requests/s, and the p50, p99 and max latency in milliseconds (send to
// full response, measured on the client), and the CPU seconds this client process used over the
// timed phase (user + system: on a machine shared with the server, what the load itself costs).
//
//   usage: bench_serve_load --port P --texts FILE [--host H] [--clients N]
//                           [--duration S | --requests N] [--check-dims D]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

/// Command-line settings of one load run.
struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string texts;
  int clients = 1;
  double duration_s = 10.0;  ///< used when requests == 0
  long requests = 0;         ///< total over all clients; 0 = run for duration_s
  int check_dims = 0;        ///< > 0: parse every response and check the vector's length
};

/// What one client thread saw.
struct ClientStats {
  std::vector<double> latency_ms;  ///< one entry per successful request
  long errors = 0;
  std::string first_error;
};

/// Parses argv into LoadOptions. @throws std::invalid_argument on an unknown or bad flag.
LoadOptions parse_args(int argc, char** argv) {
  LoadOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      o.port = std::stoi(value);
    } else if (flag == "--texts") {
      o.texts = value;
    } else if (flag == "--clients") {
      o.clients = std::stoi(value);
    } else if (flag == "--duration") {
      o.duration_s = std::stod(value);
    } else if (flag == "--requests") {
      o.requests = std::stol(value);
    } else if (flag == "--check-dims") {
      o.check_dims = std::stoi(value);
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (o.port <= 0 || o.texts.empty() || o.clients < 1 || o.requests < 0 || o.duration_s <= 0) {
    throw std::invalid_argument("need --port > 0, --texts FILE, --clients >= 1");
  }
  return o;
}

/// The request bodies `{"inputs": line}` of every non-empty line of `path`.
/// @throws std::runtime_error if the file cannot be read or has no lines.
std::vector<std::string> load_bodies(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> bodies;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) bodies.push_back(nlohmann::json{{"inputs", line}}.dump());
  }
  if (bodies.empty()) throw std::runtime_error(path + " has no lines");
  return bodies;
}

/// Value at quantile `q` in [0, 1] of sorted `v` (nearest rank; 0 when empty).
double quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  const auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(rank, v.size() - 1)];
}

/// A client with its keep-alive connection to the server already open (GET /health).
/// @throws std::runtime_error if the server does not answer 200.
std::unique_ptr<httplib::Client> connect(const LoadOptions& o) {
  auto cli = std::make_unique<httplib::Client>(o.host, o.port);
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  cli->set_read_timeout(60, 0);
  auto res = cli->Get("/health");
  if (!res || res->status != 200) {
    throw std::runtime_error("GET /health failed: " +
                             (res ? "status " + std::to_string(res->status)
                                  : "transport error " + httplib::to_string(res.error())));
  }
  return cli;
}

/// One client on its own connection: takes request numbers from `next` until the budget
/// (`o.requests`) or the deadline is reached; text k goes with request number k.
void run_client(const LoadOptions& o, const std::vector<std::string>& bodies, httplib::Client& cli,
                std::atomic<long>& next, Clock::time_point deadline, ClientStats& stats) {
  for (;;) {
    const long k = next.fetch_add(1, std::memory_order_relaxed);
    if (o.requests > 0 ? k >= o.requests : Clock::now() >= deadline) break;
    const std::string& body = bodies[static_cast<std::size_t>(k) % bodies.size()];
    const auto t0 = Clock::now();
    auto res = cli.Post("/embed", body, "application/json");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::string error;
    if (!res) {
      error = "transport error " + httplib::to_string(res.error());
    } else if (res->status != 200) {
      error = "status " + std::to_string(res->status) + ": " + res->body.substr(0, 200);
    } else if (o.check_dims > 0) {
      const auto j = nlohmann::json::parse(res->body, nullptr, false);
      if (j.is_discarded() || !j.is_array() || j.size() != 1 ||
          j[0].size() != static_cast<std::size_t>(o.check_dims)) {
        error = "unexpected body: " + res->body.substr(0, 200);
      }
    }
    if (error.empty()) {
      stats.latency_ms.push_back(ms);
    } else if (stats.errors++ == 0) {
      stats.first_error =
          error + " after " + std::to_string(ms) + " ms (request " + std::to_string(k) + ")";
    }
  }
}

/// User + system CPU seconds of this process so far (all its threads; getrusage).
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const LoadOptions o = parse_args(argc, argv);
    const std::vector<std::string> bodies = load_bodies(o.texts);
    std::atomic<long> next{0};
    std::vector<ClientStats> stats(static_cast<std::size_t>(o.clients));
    // Connections are opened one after another before the clock starts: the timed phase is
    // steady keep-alive traffic, not a burst of handshakes (cpp-httplib's listen backlog is 5).
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (int c = 0; c < o.clients; ++c) clients.push_back(connect(o));
    std::vector<std::thread> threads;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(o.duration_s));
    for (int c = 0; c < o.clients; ++c) {
      threads.emplace_back(run_client, std::cref(o), std::cref(bodies),
                           std::ref(*clients[static_cast<std::size_t>(c)]), std::ref(next),
                           deadline, std::ref(stats[static_cast<std::size_t>(c)]));
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double client_cpu_s = process_cpu_seconds() - cpu0;
    std::vector<double> all;
    long errors = 0;
    std::string first_error;
    for (const auto& s : stats) {
      all.insert(all.end(), s.latency_ms.begin(), s.latency_ms.end());
      if (s.errors > 0 && first_error.empty()) first_error = s.first_error;
      errors += s.errors;
    }
    std::sort(all.begin(), all.end());
    if (!first_error.empty()) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
    std::printf(
        "RESULT clients=%d requests=%zu errors=%ld seconds=%.3f rps=%.1f p50_ms=%.2f "
        "p99_ms=%.2f max_ms=%.2f client_cpu_s=%.3f\n",
        o.clients, all.size(), errors, seconds, static_cast<double>(all.size()) / seconds,
        quantile(all, 0.50), quantile(all, 0.99), all.empty() ? 0.0 : all.back(), client_cpu_s);
    return errors > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_serve_load: %s\n", e.what());
    return 2;
  }
}
