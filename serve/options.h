// The settings of `dialtree serve` (docs/serving.md "Settings"): the options struct and its one
// settings table (common/settings.h), behind the flags and their DIALTREE_* environment twins
// (cli/serve_cmd.cpp), the checks, the logged JSON and `dialtree print-config --settings-table
// serve`. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/settings_fwd.h"

namespace dialtree::serve {

/// Every setting of the server. Each has a `--flag` and a `DIALTREE_*` environment twin, declared
/// once in server_settings(); defaults follow TEI where TEI has the setting (docs/serving.md).
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

  /// Checks the ranges of server_settings() (counts >= 1, port 0..65535, max_wait_ms in
  /// [0, 10000]: docs/failure-cases.md C27), num_threads at most the CPUs, the model folder, host
  /// and device given, and that max_input_length fits max_batch_tokens (a single input must fit a
  /// batch: TEI's start-up guard). @throws std::invalid_argument naming the flag.
  void validate() const;
  /// The effective settings as JSON, one key per row of server_settings() (the flag with '_'
  /// for '-'; api_key shown as "***" when set), logged at start.
  nlohmann::json to_json() const;
};

/// The rows of ServerOptions, in `dialtree serve --help` order; names are the flags without
/// their dashes ("max-batch-tokens"), each with its DIALTREE_* twin. The row `model` is
/// declared by cli/common_options.h add_model_option (its help is the option's detail).
const std::vector<settings::Setting<ServerOptions>>& server_settings();

}  // namespace dialtree::serve
