// `dialtree train [--nproc-per-node N] CONFIG [key=value ...]` (print-config is in
// cli/print_config_cmd.cpp).
//
// Data-parallel runs (docs/training.md "Data-parallel"): with RANK / WORLD_SIZE / MASTER_ADDR /
// MASTER_PORT in the environment (torchrun's convention) this process is one rank of the job;
// with --nproc-per-node N it launches N such ranks on 127.0.0.1 itself and waits for them.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "data/tokenizer_factory.h"
#include "eval/probe_eval.h"
#include "eval/probe_model.h"
#include "eval/tasks.h"
#include "trainer/config.h"
#include "trainer/distributed.h"
#include "trainer/health.h"
#include "trainer/launcher.h"
#include "trainer/pretrain.h"
#include "trainer/pretrain_data.h"
#include "trainer/view_stats.h"

namespace dialtree::cli {

namespace {

// Evaluation during pretraining (docs/training.md): the representation probe on val of
// eval_tasks, fitted on train_10. Rank 0 only; empty when eval_steps is 0. Resolves the data
// folder and loads the tokenizer up front, so a missing folder stops the run before step 1.
trainer::Evaluator probe_evaluator(const trainer::PretrainConfig& cfg, bool rank0) {
  if (cfg.eval_steps == 0 || !rank0) return {};
  // The inputs first (run_pretraining checks them too): a missing data.tokenizer folder is
  // named by its config key, not by the tokenizer.json it lacks.
  trainer::check_inputs_exist(cfg);
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
volatile std::sig_atomic_t g_signal_count = 0;
volatile std::sig_atomic_t g_is_launcher = 0;

// The first SIGINT / SIGTERM asks for a stop after the step in progress (with a checkpoint); a
// second one stops at once: a rank exits with 128 + signal, the launcher kills its ranks. Only
// async-signal-safe calls (write, _exit) here.
extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_signal_count = g_signal_count + 1;
  if (g_signal_count >= 2 && !g_is_launcher) {
    constexpr char kNow[] = "dialtree: second stop signal: stopping now, without a checkpoint\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kNow, sizeof(kNow) - 1);
    ::_exit(128 + sig);
  }
  if (g_signal_count == 1) {
    constexpr char kAck[] =
        "dialtree: stop requested: stopping after this step with a checkpoint (send the signal "
        "again to stop at once)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kAck, sizeof(kAck) - 1);
  }
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
  int max_restarts = 0;
  bool exclude_failed_rank = false;
  std::size_t view_stats = 0;
  std::string view_stats_json;
};

// --view-stats: what the soft targets of the first N labelled batches hold, per view
// (trainer/view_stats.h), printed (and written as JSON); no training.
void print_view_stats(const trainer::PretrainConfig& cfg, const TrainArgs& a) {
  if (cfg.data.labelled.empty()) {
    throw DataError("<command line>", "", "--view-stats", "the config has no data.labelled files");
  }
  const auto tok = data::load_tokenizer(cfg.data.tokenizer);
  const auto datasets = trainer::load_pretrain_data(cfg.data.labelled, true, *tok,
                                                    trainer::serialize_options(cfg.data));
  const trainer::BatchViewStats s = trainer::batch_view_stats(
      datasets, static_cast<std::size_t>(cfg.per_device_train_batch_size),
      static_cast<std::size_t>(cfg.data.contrastive_shard_size), a.view_stats,
      static_cast<std::uint64_t>(cfg.data_seed), trainer::view_grouping(datasets, cfg.data));
  fmt::print(
      "{} labelled batches of {} (data_seed {}), shards of {:.1f}: {} anchors{}\n", s.batches,
      cfg.per_device_train_batch_size, cfg.data_seed, s.mean_shard_size, s.anchors,
      cfg.data.group_by_view.empty() ? std::string()
                                     : fmt::format(", groups of {} sharing a {} element",
                                                   cfg.data.group_size, cfg.data.group_by_view));
  fmt::print("{:<5} {:>10} {:>10} {:>12} {:>10}\n", "view", "positives", "mass", "no positive",
             "empty set");
  nlohmann::json j = {
      {"batches", s.batches},
      {"anchors", s.anchors},
      {"group_by_view", cfg.data.group_by_view},
      {"group_size", cfg.data.group_by_view.empty() ? nlohmann::json(nullptr)
                                                    : nlohmann::json(cfg.data.group_size)},
      {"mean_shard_size", s.mean_shard_size},
      {"views", nlohmann::json::array()}};
  for (const trainer::ViewStats& v : s.views) {
    fmt::print("{:<5} {:>10.2f} {:>10.2f} {:>11.1f}% {:>9.1f}%\n", v.view, v.positives_per_anchor,
               v.target_mass, 100 * v.anchors_without_positive, 100 * v.empty_sets);
    j["views"].push_back({{"view", v.view},
                          {"positives_per_anchor", v.positives_per_anchor},
                          {"target_mass", v.target_mass},
                          {"anchors_without_positive", v.anchors_without_positive},
                          {"empty_sets", v.empty_sets}});
  }
  if (!a.view_stats_json.empty()) write_file_atomic(a.view_stats_json, j.dump(2) + "\n");
}

}  // namespace

void register_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* train = app.add_subcommand(
      "train",
      "Pretrain a dialog encoder the SPACE-2 way from a YAML config (configs/pretrain-*.yaml; "
      "the main job: pretrain-lm.yaml, then pretrain-intent.yaml)");
  train->add_option("config", a->config, "YAML config")->required();
  train->add_option("overrides", a->overrides, "key.sub=value overrides, applied in order");
  CLI::Option* nproc = train->add_option(
      "--nproc-per-node", a->nproc_per_node,
      "Launch N data-parallel processes on this machine (Gloo over 127.0.0.1); without it, "
      "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT select a rank");
  train
      ->add_option("--max-restarts", a->max_restarts,
                   "With --nproc-per-node: restart the ranks from the newest checkpoint up to N "
                   "times after a rank fails or hangs (docs/training.md \"Health checks\")")
      ->check(CLI::Range(0, 1000));
  train->add_flag("--exclude-failed-rank", a->exclude_failed_rank,
                  "With --max-restarts: restart with one rank fewer and a larger "
                  "gradient_accumulation_steps, so the global batch stays the same");
  train
      ->add_option("--view-stats", a->view_stats,
                   "Print, per tree view, what the soft targets of the first N labelled batches "
                   "hold (positives per anchor, their mass, anchors without one, empty sets) "
                   "and exit without training (docs/training.md \"What the views see\")")
      ->check(CLI::Range(1, 1000000));
  train->add_option("--view-stats-json", a->view_stats_json,
                    "With --view-stats: also write the figures as JSON to this file");
  train->callback([a, nproc] {
    a->nproc_given = nproc->count() > 0;
    const trainer::PretrainConfig cfg = trainer::load_config(a->config, a->overrides);
    if (a->view_stats > 0) return print_view_stats(cfg, *a);
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
    // A malformed DIALTREE_FAULT, or one for a rank the job does not have, stops the job before
    // any rank loads data (docs/training.md "Fault injection").
    const int world = a->nproc_per_node > 1 ? a->nproc_per_node : (rz ? rz->world_size : 1);
    trainer::check_fault_rank(trainer::fault_plan_from_env(), world);
    if (a->max_restarts > 0 && a->nproc_per_node <= 1) {
      throw DataError("<command line>", "", "--max-restarts",
                      "needs --nproc-per-node N > 1 (under torchrun, use its --max-restarts with "
                      "resume_from_checkpoint=latest)");
    }
    struct sigaction sa {};
    // SIGINT / SIGTERM: finish the step in progress, save a checkpoint, exit (replaces the
    // temporary-file clean-up handlers installed by main()); the launcher forwards them.
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (a->nproc_per_node > 1) {
      trainer::LaunchOptions lo;
      lo.nproc = a->nproc_per_node;
      lo.args = {"train", a->config};
      lo.args.insert(lo.args.end(), a->overrides.begin(), a->overrides.end());
      lo.output_dir = cfg.output_dir;
      lo.max_restarts = a->max_restarts;
      lo.exclude_failed_rank = a->exclude_failed_rank;
      lo.gradient_accumulation_steps = cfg.gradient_accumulation_steps;
      g_is_launcher = 1;
      const int status = trainer::launch_local_workers(
          lo, [] { return static_cast<int>(g_signal); }, [] { return g_signal_count >= 2; },
          [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
      if (status != 0) throw ExitRequest(status);
      return;
    }
    std::unique_ptr<trainer::DataParallelGroup> group;
    if (rz && rz->world_size > 1) {
      trainer::DistributedOptions o;
      o.backend = cfg.ddp_backend;
      o.timeout = std::chrono::seconds(cfg.ddp_timeout);
      o.bucket_cap_bytes = static_cast<std::int64_t>(cfg.ddp_bucket_cap_mb) << 20;
      o.watchdog = cfg.ddp_health_checks;
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
      throw ExitRequest(128 + sig);
    }
    if (rank0) fmt::print("trained {} steps; model: {}\n", r.steps_done, r.final_dir);
  });
}

}  // namespace dialtree::cli
