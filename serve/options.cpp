// The settings table of `dialtree serve` and its checks (options.h).
#include "serve/options.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/batching.h"
#include "common/device_spec.h"
#include "common/settings_json.h"

namespace dialtree::serve {

const std::vector<settings::Setting<ServerOptions>>& server_settings() {
  using O = ServerOptions;
  const auto flag = [](std::string name, auto member, std::string help) {
    return settings::field(std::move(name), member, std::move(help)).env();
  };
  static const std::vector<settings::Setting<O>> table = {
      // --help: "Model bundle folder (<this>)", the words of cli/common_options.h's --model.
      flag("model", &O::model_dir, "e.g. runs/pretrain-intent-pseudo/final")
          .default_shown("required"),
      flag("served-model-name", &O::served_model_name,
           "Name echoed as the OpenAI `model` (default: the bundle folder's name)")
          .default_shown("folder name"),
      flag("host", &O::host,
           "Address to bind: an IPv4 or IPv6 address, localhost or a host name (its first "
           "address); 0.0.0.0 exposes the server to the network"),
      flag("port", &O::port, "TCP port; 0 picks a free one (logged at start)")
          .in(between(0, 65535)),
      flag("api-key", &O::api_key, "Require 'Authorization: Bearer KEY' (except on /health)")
          .default_shown("none"),
      flag("max-concurrent-requests", &O::max_concurrent_requests,
           "Requests in flight before new ones get 429")
          .in(at_least(1)),
      flag("max-batch-tokens", &O::max_batch_tokens,
           "Padded tokens (longest input x inputs) per forward pass")
          .in(at_least(1)),
      flag("max-batch-requests", &O::max_batch_requests, "Inputs per forward pass").in(at_least(1)),
      flag("max-client-batch-size", &O::max_client_batch_size,
           "Inputs per HTTP request (413 beyond)")
          .in(at_least(1)),
      flag("max-wait-ms", &O::max_wait_ms,
           "Longest wait for company when fewer inputs are queued than the last batch took")
          .in(between(0, 10000)),
      flag("max-input-length", &O::max_input_length,
           "Tokens per serialised input, role markers included (413 beyond unless truncating)")
          .in(at_least(3, "one token and two role markers")),
      flag("max-request-bytes", &O::max_request_bytes, "Request body limit in bytes (413 beyond)")
          .in(at_least(1, "0 does not mean unlimited: give a real limit")),
      flag("auto-truncate", &O::auto_truncate,
           "Truncate over-long inputs when a request does not say (true/false)"),
      flag("http-threads", &O::http_threads,
           "Threads running whole requests (open connections cost no thread)")
          .in(between(1, 4096)),
      flag("max-connections", &O::max_connections,
           "Open connections; one more is answered 503 and closed")
          .in(at_least(1)),
      flag("keep-alive-timeout", &O::keep_alive_timeout_s,
           "Seconds an idle keep-alive connection is kept open")
          .in(between(1, 3600, "seconds")),
      flag("request-timeout", &O::request_timeout_s,
           "Seconds a request's headers and body may take to arrive, in total (408 beyond)")
          .in(between(1, 3600, "seconds")),
      flag("num-threads", &O::num_threads,
           "LibTorch threads of the inference workers together; 0 = DIALTREE_NUM_THREADS or "
           "all CPUs")
          .allows("in [0, CPUs]"),
      flag("inference-workers", &O::inference_workers,
           "Batches run at once, each by its own worker thread on max(1, threads / workers) "
           "LibTorch threads (more throughput under heavy load, slower single requests)")
          .in(between(1, 256)),
      flag("device", &O::device, kDeviceHelp)
          .checked(&device_spec_problem, "auto, cpu, cuda, cuda:N"),
      flag("bf16", &O::bf16,
           "Run the forward passes under bf16 autocast where the device has native bf16 "
           "(true/false; as fine-tuning predicts, so a tagger answers exactly its test "
           "predictions; vectors then differ from float32 ones by bf16 rounding)"),
  };
  return table;
}

void ServerOptions::validate() const {
  auto bad = [](const std::string& flag, const std::string& what) {
    throw std::invalid_argument("--" + flag + ": " + what);
  };
  if (model_dir.empty()) bad("model", "is required");
  if (host.empty()) bad("host", "must not be empty");
  settings::check_flags(settings::view(server_settings(), *this));
  const long long cpus = std::max(1u, std::thread::hardware_concurrency());
  if (const std::string p = integer_range_problem(num_threads, 0, cpus,
                                                  "0 = leave as is; at most this machine's CPUs");
      !p.empty()) {
    bad("num-threads", p);
  }
  if (const std::string p = input_length_problem(max_input_length, max_batch_tokens); !p.empty())
    bad("max-input-length", p);
}

namespace {

std::string json_key(const std::string& flag) {
  std::string key = flag;
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

}  // namespace

nlohmann::json ServerOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  settings::write_json(settings::view(server_settings(), *this), j, &json_key);
  if (!api_key.empty()) j["api_key"] = "***";
  return j;
}

}  // namespace dialtree::serve
