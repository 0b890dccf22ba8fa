// The logging window of pretraining (docs/training.md "Run directory", metrics.jsonl): the sums
// of the logged quantities since the last log line, saved in checkpoints so that a resumed run
// logs the same means, and MetricsLog, the observer that turns a window into a metrics.jsonl
// record and a log line every logging_steps. Torch-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/observer.h"

namespace dialtree::trainer {

/// Sums of the logged quantities over the steps since the last log line.
struct LogWindow {
  double loss = 0, sup = 0, self = 0, mlm_l = 0, mlm_u = 0, grad_norm = 0;
  double generator_mlm = 0, replaced_token = 0;  ///< replaced-token detection only
  double encoder_mlm = 0;                        ///< rtd with loss.encoder_mlm_weight > 0 only
  double token_contrastive = 0;                  ///< loss.token_contrastive_weight > 0 only
  std::int64_t steps = 0, examples = 0;
  double seconds = 0;  ///< wall seconds of the steps
  /// Token rows the encoder's blocks computed (padding included unless padding_free) and real
  /// tokens of the batches, all ranks (docs/training.md, padded_token_fraction).
  double tokens = 0, real_tokens = 0;
  /// Per rank (data-parallel health checks, docs/training.md): seconds summed over the window's
  /// steps of compute (forward and backward), collectives, and the part of the collectives spent
  /// waiting for the slowest rank's compute. Empty in a single process; filled by HealthMonitor.
  std::vector<double> rank_compute, rank_collective, rank_wait;
  /// Seconds this rank spent on the health checks themselves (bookkeeping and watchdog CPU).
  double health = 0;

  /// Adds step `e`: its losses, tokens, gradient norm, examples and seconds (not the per-rank
  /// figures, which are HealthMonitor's).
  void add(const StepEvent& e);

  /// The checkpoint's "log_window" object (trainer_state.json).
  nlohmann::json to_json() const;
  /// Reads to_json()'s object; keys added after the first format (tokens, real_tokens,
  /// generator_mlm, replaced_token, the rank_* lists, health) default to zero / empty.
  /// @throws nlohmann::json::exception for a missing original key or a mistyped value.
  static LogWindow from_json(const nlohmann::json& j);
};

/// Adds to a window's metrics.jsonl record and log line (the data-parallel health report).
class WindowReporter {
 public:
  virtual ~WindowReporter() = default;
  /// Adds keys for window `w` to `record` and returns text for the log line (inserted before
  /// its "ETA"; empty for none). Called on every rank at every logging step, before the window
  /// is reset.
  virtual std::string report(const LogWindow& w, nlohmann::json& record) = 0;
};

/// What MetricsLog needs to know of the run.
struct MetricsLogOptions {
  std::int64_t logging_steps = 10;   ///< a record every this many steps (and at the last), >= 1
  std::int64_t steps_per_epoch = 1;  ///< for the record's "epoch", >= 1
  bool rtd = false;                  ///< replaced-token detection: log its two losses too
  std::int64_t first_step = 0;       ///< the step the run (or resume) started at, for the ETA
  bool encoder_mlm = false;          ///< rtd with loss.encoder_mlm_weight > 0: log encoder_mlm
  bool token_contrastive = false;    ///< loss.token_contrastive_weight > 0: log token_contrastive
};

/// The observer that sums every step into the window and, every logging_steps steps and at the
/// last step, writes the window's means as a metrics.jsonl record (step, epoch, loss,
/// contrastive, self_supervised, mlm_labelled, mlm_unlabelled, learning_rate, grad_norm,
/// examples_per_second, padded_token_fraction, train_seconds, resident_set_mb (the process's
/// resident set, where Linux says it); generator_mlm and replaced_token
/// with rtd, encoder_mlm with its weight > 0, token_contrastive with its weight > 0; the
/// reporter's keys), logs "step N/T  loss ..." and starts a new window.
class MetricsLog : public TrainingObserver {
 public:
  /// @param window the run's window (it outlives this; checkpoints save it)
  /// @param metrics where records go (rank 0's metrics.jsonl; null: nowhere)
  /// @param say receives the log line (may be empty)
  /// @param reporter adds its figures to every record and line (may be null)
  MetricsLog(LogWindow& window, std::ostream* metrics, LogSink say, MetricsLogOptions options,
             WindowReporter* reporter = nullptr);

  void after_step(const StepEvent& e) override;

 private:
  void write(const StepEvent& e);

  LogWindow& window_;
  std::ostream* metrics_;
  LogSink say_;
  MetricsLogOptions options_;
  WindowReporter* reporter_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// A duration for the log: "1h05m" from an hour up, else "3m07s" (seconds, truncated).
std::string duration_text(double seconds);

}  // namespace dialtree::trainer
