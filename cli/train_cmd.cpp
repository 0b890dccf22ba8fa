// `dialtree train CONFIG [key=value ...]` and `dialtree print-config CONFIG [key=value ...]`.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>

#include <fmt/core.h>
#include <unistd.h>

#include "cli/commands.h"
#include "trainer/config.h"
#include "trainer/pretrain.h"

namespace dialtree::cli {

namespace {

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
};

}  // namespace

void register_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* train = app.add_subcommand(
      "train", "Pretrain a dialog encoder the SPACE-2 way (configs/pretrain-small.yaml)");
  train->add_option("config", a->config, "YAML config")->required();
  train->add_option("overrides", a->overrides, "key.sub=value overrides, applied in order");
  train->callback([a] {
    const trainer::PretrainConfig cfg = trainer::load_config(a->config, a->overrides);
    // SIGINT / SIGTERM: finish the step in progress, save a checkpoint, exit (replaces the
    // temporary-file clean-up handlers installed by main()).
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    // On a terminal: log lines scroll above a progress bar redrawn after every step; otherwise
    // plain log lines only.
    const bool tty = ::isatty(STDERR_FILENO);
    auto log = [tty](const std::string& line) {
      fmt::print(stderr, "{}{}\n", tty ? "\r\x1b[K" : "", line);
    };
    std::function<void(const trainer::StepInfo&)> bar;
    if (tty)
      bar = [](const trainer::StepInfo& s) { fmt::print(stderr, "\r\x1b[K{}", progress_bar(s)); };
    const trainer::PretrainResult r = trainer::run_pretraining(cfg, &g_stop, log, bar);
    if (tty) fmt::print(stderr, "\n");
    if (r.interrupted) {
      fmt::print("interrupted by signal {} after step {}; checkpoint: {}\n",
                 static_cast<int>(g_signal), r.steps_done, r.last_checkpoint);
      std::exit(128 + static_cast<int>(g_signal));
    }
    fmt::print("trained {} steps; model: {}\n", r.steps_done, r.final_dir);
  });

  auto p = std::make_shared<TrainArgs>();
  CLI::App* print = app.add_subcommand(
      "print-config", "Print the resolved config (every key, defaults filled in) as YAML");
  print->add_option("config", p->config, "YAML config")->required();
  print->add_option("overrides", p->overrides, "key.sub=value overrides, applied in order");
  print->callback([p] {
    fmt::print("{}", trainer::dump_config(trainer::load_config(p->config, p->overrides)));
  });
}

}  // namespace dialtree::cli
