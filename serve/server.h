// `dialtree serve`: the embedding HTTP server on an event-driven HTTP layer (serve/http.h), its
// routes (serve/routes.h) and the model behind a dynamic batcher (serve/inference.h); this file is
// the life cycle that ties them (docs/serving.md "Code layout"). Health is 503 until the model is
// loaded and warmed up, and again while draining.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json_fwd.hpp>

#include "common/device_spec.h"
#include "common/value_range.h"

namespace dialtree::serve {

/// Every setting of the server. Each has a `--flag` and a `DIALTREE_*` environment twin
/// (cli/serve_cmd.cpp); defaults follow TEI where TEI has the setting (docs/serving.md).
struct ServerOptions {
  std::string model_dir;                      ///< model bundle folder (required)
  std::string served_model_name;              ///< echoed as OpenAI `model`; "" = folder name
  std::string host = "127.0.0.1";             ///< bind address (loopback unless told otherwise)
  int port = 3000;                            ///< 0 = any free port (logged at start)
  std::string api_key;                        ///< "" = no auth; else `Authorization: Bearer KEY`
  std::size_t max_concurrent_requests = 512;  ///< requests in flight before 429
  std::size_t max_batch_tokens = 16384;       ///< padded tokens per forward pass
  std::size_t max_batch_requests = 64;        ///< inputs per forward pass
  std::size_t max_client_batch_size = 256;    ///< inputs per HTTP request (413 beyond)
  double max_wait_ms = 2.0;                   ///< how long an input waits for company
  std::size_t max_input_length = 256;         ///< tokens per serialised input
  std::size_t max_request_bytes = 2000000;    ///< body limit (413 beyond); 0 is rejected
  bool auto_truncate = true;                  ///< default of a request's `truncate`
  std::size_t http_threads = 64;              ///< threads running whole requests (not connections)
  std::size_t max_connections = 1024;         ///< open connections; the next one gets 503
  int keep_alive_timeout_s = 5;               ///< idle keep-alive connections close after this
  int request_timeout_s = 30;                 ///< headers + body of one request, in total (408)
  int num_threads = 0;                        ///< LibTorch intra-op threads; 0 = leave as is
  std::size_t inference_workers = 1;          ///< batches run at once, threads split among them
  std::string device = "auto";                ///< auto, cpu, cuda, cuda:N (docs/gpu.md)
  bool bf16 = false;  ///< forward passes under bf16 autocast where the device has native bf16

  /// Calls `v(flag, member, help)`, or `v(flag, member, help, range)` for a number, for every
  /// setting, in `dialtree serve --help` order: the one list behind the flags, their DIALTREE_*
  /// environment twins (cli/serve_cmd.cpp), their ranges (validate()) and to_json() (keys: the
  /// flag with '_' for '-'). `Self` is ServerOptions or a const one.
  template <class Self, class Visitor>
  static void visit(Self& o, Visitor&& v) {
    const double cpus = std::max(1u, std::thread::hardware_concurrency());
    // --help: "Model bundle folder (<this>)", the words of cli/common_options.h's --model.
    v("model", o.model_dir, "e.g. runs/pretrain-intent-pseudo/final");
    v("served-model-name", o.served_model_name,
      "Name echoed as the OpenAI `model` (default: the bundle folder's name)");
    v("host", o.host, "Address to bind (0.0.0.0 exposes the server to the network)");
    v("port", o.port, "TCP port; 0 picks a free one (logged at start)", between(0, 65535));
    v("api-key", o.api_key, "Require 'Authorization: Bearer KEY' (except on /health)");
    v("max-concurrent-requests", o.max_concurrent_requests,
      "Requests in flight before new ones get 429", at_least(1));
    v("max-batch-tokens", o.max_batch_tokens,
      "Padded tokens (longest input x inputs) per forward pass", at_least(1));
    v("max-batch-requests", o.max_batch_requests, "Inputs per forward pass", at_least(1));
    v("max-client-batch-size", o.max_client_batch_size, "Inputs per HTTP request (413 beyond)",
      at_least(1));
    v("max-wait-ms", o.max_wait_ms,
      "Longest wait for company when fewer inputs are queued than the last batch took",
      between(0, 10000));
    v("max-input-length", o.max_input_length,
      "Tokens per serialised input, role markers included (413 beyond unless truncating)",
      at_least(3, "one token and two role markers"));
    v("max-request-bytes", o.max_request_bytes, "Request body limit in bytes (413 beyond)",
      at_least(1, "0 does not mean unlimited: give a real limit"));
    v("auto-truncate", o.auto_truncate,
      "Truncate over-long inputs when a request does not say (true/false)");
    v("http-threads", o.http_threads,
      "Threads running whole requests (open connections cost no thread)", between(1, 4096));
    v("max-connections", o.max_connections, "Open connections; one more is answered 503 and closed",
      at_least(1));
    v("keep-alive-timeout", o.keep_alive_timeout_s,
      "Seconds an idle keep-alive connection is kept open", between(1, 3600, "seconds"));
    v("request-timeout", o.request_timeout_s,
      "Seconds a request's headers and body may take to arrive, in total (408 beyond)",
      between(1, 3600, "seconds"));
    v("num-threads", o.num_threads,
      "LibTorch threads of the inference workers together, in [1, CPUs] (0 = "
      "DIALTREE_NUM_THREADS or all CPUs)",
      between(0, cpus, "0 = leave as is; at most this machine's CPUs"));
    v("inference-workers", o.inference_workers,
      "Batches run at once, each by its own worker thread on max(1, threads / workers) LibTorch "
      "threads (more throughput under heavy load, slower single requests)",
      between(1, 256));
    v("device", o.device, kDeviceHelp);
    v("bf16", o.bf16,
      "Run the forward passes under bf16 autocast where the device has native bf16 (true/false; "
      "as fine-tuning predicts, so a tagger answers exactly its test predictions; vectors then "
      "differ from float32 ones by bf16 rounding)");
  }

  /// Checks the ranges of the visit() list (counts >= 1, port 0..65535, max_wait_ms in
  /// [0, 10000], threads at most the CPUs: docs/failure-cases.md C27), the model folder, host and
  /// device given, and that max_input_length fits max_batch_tokens (a single input must fit a
  /// batch: TEI's start-up guard). @throws std::invalid_argument naming the flag.
  void validate() const;
  /// The effective settings as JSON, one key per visit() entry (api_key shown as "***" when
  /// set), logged at start.
  nlohmann::json to_json() const;
};

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
