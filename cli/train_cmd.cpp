// `dialtree train [--nproc-per-node N] CONFIG [key=value ...]` (print-config is in
// cli/print_config_cmd.cpp).
//
// Data-parallel runs (docs/training.md "Data-parallel"): with RANK / WORLD_SIZE / MASTER_ADDR /
// MASTER_PORT in the environment (torchrun's convention) this process is one rank of the job;
// with --nproc-per-node N it launches N such ranks on 127.0.0.1 itself and waits for them.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.h"
#include "common/error.h"
#include "data/tokenizer_factory.h"
#include "eval/probe_eval.h"
#include "eval/probe_model.h"
#include "eval/tasks.h"
#include "trainer/config.h"
#include "trainer/distributed.h"
#include "trainer/pretrain.h"

namespace dialtree::cli {

namespace {

// Evaluation during pretraining (docs/training.md): the representation probe on val of
// eval_tasks, fitted on train_10. Rank 0 only; empty when eval_steps is 0. Resolves the data
// folder and loads the tokenizer up front, so a missing folder stops the run before step 1.
trainer::Evaluator probe_evaluator(const trainer::PretrainConfig& cfg, bool rank0) {
  if (cfg.eval_steps == 0 || !rank0) return {};
  const std::string data_dir = eval::resolve_data_dir(cfg.eval_data_dir);
  std::shared_ptr<const data::Tokenizer> tok = data::load_tokenizer(cfg.data.tokenizer);
  eval::ProbeOptions options;
  options.protocols = {eval::ProbeProtocol::DialoglueFew};
  options.split = "val";  // model selection: never test
  options.threads = cfg.threads;
  const std::vector<std::string> tasks = cfg.eval_tasks;
  return [data_dir, tok, options, tasks](model::SpaceModelImpl& net) {
    return eval::probe_eval_figures(eval::run_probe(net, *tok, data_dir, tasks, options));
  };
}

std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true);
}

// "[#########-----------]  120/600  loss 7.3841  lr 9.1e-05  30.2 ex/s  ETA 12m30s"
std::string progress_bar(const trainer::StepInfo& s) {
  constexpr int kWidth = 24;
  const int done = s.total > 0 ? static_cast<int>(kWidth * s.step / s.total) : kWidth;
  const auto eta = static_cast<long>(s.eta_seconds);
  return fmt::format("[{}{}] {:>6}/{}  loss {:.4f}  lr {:.1e}  {:.1f} ex/s  ETA {}m{:02}s",
                     std::string(done, '#'), std::string(kWidth - done, '-'), s.step, s.total,
                     s.loss, s.learning_rate, s.examples_per_second, eta / 60, eta % 60);
}

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  int nproc_per_node = 1;
  bool nproc_given = false;
};

// Runs `dialtree train CONFIG OVERRIDES...` as ranks 0..n-1 of a local job (MASTER_ADDR
// 127.0.0.1, a free port), forwards SIGINT / SIGTERM to them (they stop together after a
// checkpoint), and kills the others when one fails, so a crashed rank never leaves the rest
// waiting for ddp_timeout. Returns the exit status for the whole job: 0, the first failing
// rank's status, or 128 + signal.
int launch_local_workers(const TrainArgs& a) {
  const int port = trainer::free_loopback_port();
  std::vector<std::string> args = {"dialtree", "train", a.config};
  args.insert(args.end(), a.overrides.begin(), a.overrides.end());
  std::vector<pid_t> pids;
  for (int rank = 0; rank < a.nproc_per_node; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      throw std::runtime_error("--nproc-per-node: fork failed");
    }
    if (pid == 0) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(a.nproc_per_node).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      std::vector<char*> argv;
      for (auto& s : args) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  int status_out = 0;
  bool forwarded = false;
  std::size_t running = pids.size();
  while (running > 0) {
    if (g_stop.load() && !forwarded) {
      for (pid_t p : pids) ::kill(p, SIGTERM);
      forwarded = true;
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    --running;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    for (auto& p : pids) {
      if (p == done) p = -1;
    }
    if (code != 0 && status_out == 0) {
      status_out = code;
      const bool graceful = forwarded && code == 128 + static_cast<int>(g_signal);
      if (!graceful) {
        fmt::print(stderr, "error: a rank exited with status {}; stopping the others\n", code);
        for (pid_t p : pids) {
          if (p > 0) ::kill(p, SIGKILL);
        }
      }
    }
  }
  return status_out;
}

}  // namespace

void register_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* train = app.add_subcommand(
      "train", "Pretrain a dialog encoder the SPACE-2 way (configs/pretrain-small.yaml)");
  train->add_option("config", a->config, "YAML config")->required();
  train->add_option("overrides", a->overrides, "key.sub=value overrides, applied in order");
  CLI::Option* nproc = train->add_option(
      "--nproc-per-node", a->nproc_per_node,
      "Launch N data-parallel processes on this machine (Gloo over 127.0.0.1); without it, "
      "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT select a rank");
  train->callback([a, nproc] {
    a->nproc_given = nproc->count() > 0;
    const trainer::PretrainConfig cfg = trainer::load_config(a->config, a->overrides);
    const std::optional<trainer::Rendezvous> rz = trainer::rendezvous_from_env();
    if (a->nproc_given) {
      if (a->nproc_per_node < 1 || a->nproc_per_node > 1024) {
        throw DataError("<command line>", "", "--nproc-per-node",
                        fmt::format("must be in [1, 1024], got {}", a->nproc_per_node));
      }
      if (rz) {
        throw DataError("<command line>", "", "--nproc-per-node",
                        "cannot be combined with RANK / WORLD_SIZE in the environment (this "
                        "process would be one rank of another job)");
      }
    }
    struct sigaction sa {};
    // SIGINT / SIGTERM: finish the step in progress, save a checkpoint, exit (replaces the
    // temporary-file clean-up handlers installed by main()); the launcher forwards them.
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (a->nproc_per_node > 1) {
      const int status = launch_local_workers(*a);
      if (status != 0) std::exit(status);
      return;
    }
    std::unique_ptr<trainer::DataParallelGroup> group;
    if (rz && rz->world_size > 1) {
      trainer::DistributedOptions o;
      o.backend = cfg.ddp_backend;
      o.timeout = std::chrono::seconds(cfg.ddp_timeout);
      o.bucket_cap_bytes = static_cast<std::int64_t>(cfg.ddp_bucket_cap_mb) << 20;
      group = std::make_unique<trainer::DataParallelGroup>(*rz, o);
    }
    const bool rank0 = !rz || rz->rank == 0;
    // On a terminal: log lines scroll above a progress bar redrawn after every step; otherwise
    // plain log lines only.
    const bool tty = rank0 && ::isatty(STDERR_FILENO);
    auto log = [tty](const std::string& line) {
      fmt::print(stderr, "{}{}\n", tty ? "\r\x1b[K" : "", line);
    };
    std::function<void(const trainer::StepInfo&)> bar;
    if (tty)
      bar = [](const trainer::StepInfo& s) { fmt::print(stderr, "\r\x1b[K{}", progress_bar(s)); };
    const trainer::PretrainResult r =
        trainer::run_pretraining(cfg, &g_stop, log, bar, group.get(), probe_evaluator(cfg, rank0));
    if (tty) fmt::print(stderr, "\n");
    if (r.interrupted) {
      // A rank that stopped because another rank was signalled reports SIGTERM.
      const int sig = g_signal != 0 ? static_cast<int>(g_signal) : SIGTERM;
      if (rank0) {
        fmt::print("interrupted by signal {} after step {}; checkpoint: {}\n", sig, r.steps_done,
                   r.last_checkpoint);
      }
      std::exit(128 + sig);
    }
    if (rank0) fmt::print("trained {} steps; model: {}\n", r.steps_done, r.final_dir);
  });
}

}  // namespace dialtree::cli
