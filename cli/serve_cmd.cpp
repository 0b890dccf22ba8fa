// `dialtree serve --model DIR [flags]`: the embedding server (serve/server.h, docs/serving.md).
// Every flag has a DIALTREE_* environment twin (--max-batch-tokens <-> DIALTREE_MAX_BATCH_TOKENS),
// the effective settings are logged at start, and SIGTERM / SIGINT drain requests in flight
// before the process exits 0.
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/malloc_info.h"
#include "model/config.h"
#include "model/device.h"
#include "serve/server.h"

namespace dialtree::cli {
namespace {

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
  add_setting_flags(cmd, serve::server_settings(), *o);  // --model, --device: their helpers
  const CLI::Option* api_key = cmd->get_option("--api-key");
  cmd->callback([o, api_key] {
    log_to_stderr(/*timestamps=*/true);
    // An empty key, given on purpose, would serve without authentication, silently
    // (docs/failure-cases.md B11). CLI11 reads an empty environment variable as unset.
    const std::string env_name = env_twin("api-key");
    const char* env_key = std::getenv(env_name.c_str());
    if (o->api_key.empty() && (api_key->count() > 0 || (env_key != nullptr && *env_key == 0))) {
      throw std::invalid_argument((api_key->count() > 0 ? "--api-key" : env_name) +
                                  " is set but empty, which would serve without authentication; "
                                  "give a key, or leave --api-key and " +
                                  env_name + " unset to serve without one");
    }
    o->validate();
    model::resolve_device(o->device, "--device");  // a GPU that is not there, before binding
    // A missing folder (existing_folder, at parse time) or a broken config.json is bad usage
    // (status 2) and is said before the port is bound; the weights load in the background
    // while /health answers 503.
    model::read_encoder_config(o->model_dir);
    if (o->num_threads > 0) set_num_threads(o->num_threads);
    spdlog::info("dialtree serve: {}", o->to_json().dump());
    spdlog::info("malloc: {}", malloc_implementation());
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
