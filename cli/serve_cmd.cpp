// `dialtree serve --model DIR [flags]`: the embedding server (serve/server.h, docs/serving.md).
// Every flag has a DIALTREE_* environment twin (--max-batch-tokens <-> DIALTREE_MAX_BATCH_TOKENS),
// the effective settings are logged at start, and SIGTERM / SIGINT drain requests in flight
// before the process exits 0.
#include <pthread.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "model/config.h"
#include "serve/server.h"

namespace dialtree::cli {
namespace {

// "max-batch-tokens" -> "DIALTREE_MAX_BATCH_TOKENS".
std::string env_twin(const std::string& flag) {
  std::string env = "DIALTREE_";
  for (char c : flag) env.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  return env;
}

template <class T>
CLI::Option* flag(CLI::App* cmd, const std::string& name, T& value, const std::string& help) {
  return cmd->add_option("--" + name, value, help)->envname(env_twin(name))->capture_default_str();
}

// Runs `server` until SIGTERM / SIGINT (drain, exit 0) or until it stops by itself.
int run_until_signal(serve::Server& server) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);  // our own wake-up when the server stopped without a signal
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: all inherit it
  std::signal(SIGPIPE, SIG_IGN);              // a client gone mid-write is not fatal (C24)
  server.start();
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGUSR1) {
      spdlog::info("received {}: finishing requests in flight, then exiting",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
      server.stop();
    }
  });
  const int status = server.wait();
  pthread_kill(watcher.native_handle(), SIGUSR1);
  watcher.join();
  spdlog::info("stopped");
  return status;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<serve::ServerOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve embeddings, intents and tokens over HTTP (OpenAI / TEI compatible)");
  flag(cmd, "model", o->model_dir, "Model bundle folder (e.g. runs/pretrain-small/final)")
      ->required();
  flag(cmd, "served-model-name", o->served_model_name,
       "Name echoed as the OpenAI `model` (default: the bundle folder's name)");
  flag(cmd, "host", o->host, "Address to bind (0.0.0.0 exposes the server to the network)");
  flag(cmd, "port", o->port, "TCP port; 0 picks a free one (logged at start)");
  flag(cmd, "api-key", o->api_key, "Require 'Authorization: Bearer KEY' (except on /health)");
  flag(cmd, "max-concurrent-requests", o->max_concurrent_requests,
       "Requests in flight before new ones get 429");
  flag(cmd, "max-batch-tokens", o->max_batch_tokens,
       "Padded tokens (longest input x inputs) per forward pass");
  flag(cmd, "max-batch-requests", o->max_batch_requests, "Inputs per forward pass");
  flag(cmd, "max-client-batch-size", o->max_client_batch_size,
       "Inputs per HTTP request (413 beyond)");
  flag(cmd, "max-wait-ms", o->max_wait_ms, "How long an input waits for others to share a batch");
  flag(cmd, "max-input-length", o->max_input_length,
       "Tokens per serialised input, role markers included (413 beyond unless truncating)");
  flag(cmd, "max-request-bytes", o->max_request_bytes, "Request body limit in bytes (413 beyond)");
  flag(cmd, "auto-truncate", o->auto_truncate,
       "Truncate over-long inputs when a request does not say (true/false)");
  flag(cmd, "http-threads", o->http_threads,
       "Threads running whole requests (open connections cost no thread)");
  flag(cmd, "max-connections", o->max_connections,
       "Open connections; one more is answered 503 and closed");
  flag(cmd, "keep-alive-timeout", o->keep_alive_timeout_s,
       "Seconds an idle keep-alive connection is kept open");
  flag(cmd, "request-timeout", o->request_timeout_s,
       "Seconds a request's headers and body may take to arrive, in total (408 beyond)");
  flag(cmd, "num-threads", o->num_threads,
       "LibTorch threads of the inference worker, in [1, CPUs] (0 = DIALTREE_NUM_THREADS or all "
       "CPUs)");
  cmd->callback([o] {
    log_to_stderr(/*timestamps=*/true);
    o->validate();
    // A missing folder or a broken config.json is bad usage (status 2) and is said before the
    // port is bound; the weights load in the background while /health answers 503.
    if (std::error_code ec; !std::filesystem::is_directory(o->model_dir, ec)) {
      throw DataError(o->model_dir, "", "--model", "no model bundle folder here");
    }
    model::read_encoder_config(o->model_dir);
    if (o->num_threads > 0) set_num_threads(o->num_threads);
    spdlog::info("dialtree serve: {}", o->to_json().dump());
    spdlog::info("malloc: {}", serve::malloc_implementation());
    serve::Server server(*o);
    const int status = run_until_signal(server);
    if (status != 0) {
      throw std::runtime_error(
          "the server stopped because the model could not be loaded (see the "
          "log above)");
    }
  });
}

}  // namespace dialtree::cli
