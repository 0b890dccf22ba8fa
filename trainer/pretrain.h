// SPACE-2 pretraining (docs/method.md §4): the labelled and unlabelled streams, the per-step
// objective, AdamW with linear warm-up and decay, checkpoints, resume, and the run directory
// (docs/training.md "Run directory"). Torch stays inside pretrain.cpp: a set-up and a loop of
// optimiser steps whose observers (trainer/observer.h) log (trainer/log_window.h), check the
// data-parallel ranks (trainer/health_monitor.h) and inject faults (trainer/fault_injection.h);
// checkpoint folders, their names and trainer_state.json are trainer/run_dir.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/config.h"

namespace dialtree::model {
class SpaceModelImpl;  // model/encoder.h
}

namespace dialtree::trainer {

class DataParallelGroup;  // trainer/distributed.h

/// Evaluation during pretraining (HF Trainer's compute_metrics): called with the model in eval
/// mode every eval_steps (and at step 0 of a fresh run and at the end); returns named figures,
/// e.g. {"eval_probe_banking_accuracy", 0.61}, written to metrics.jsonl. Must not change the
/// weights. The CLI passes the representation probe (docs/evaluation.md "Probe").
using Evaluator =
    std::function<std::vector<std::pair<std::string, double>>(model::SpaceModelImpl& net)>;

/// How a run ended.
struct PretrainResult {
  std::int64_t steps_done = 0;  ///< optimiser steps completed (including resumed ones)
  bool interrupted = false;     ///< stopped by a stop request (SIGINT / SIGTERM)
  std::string final_dir;        ///< final/ bundle (empty when interrupted)
  std::string last_checkpoint;  ///< newest checkpoint written, if any
};

/// Per-step progress, for a progress bar.
struct StepInfo {
  std::int64_t step = 0;           ///< optimiser steps done
  std::int64_t total = 0;          ///< steps of the whole run
  double loss = 0;                 ///< objective of this step
  double learning_rate = 0;        ///< learning rate used by this step
  double examples_per_second = 0;  ///< this step's throughput
  double eta_seconds = 0;          ///< estimated time left
};

/// Runs (or resumes) a pretraining described by `config`:
///  - writes `output_dir/config.yaml` (resolved), `env.json`, appends to `metrics.jsonl`;
///  - every step: one labelled batch (10-view soft-mask contrastive loss + MLM) and one
///    unlabelled batch (self-supervised contrastive + MLM), batches never mixing datasets;
///  - `checkpoint-<step>/` every save_steps (bundle + optimizer.pt + trainer_state.json),
///    written to a temporary folder and renamed, pruned to save_total_limit; `final/` bundle at
///    the end;
///  - stops after the step in progress when `*stop` becomes true, saving a checkpoint first.
/// Resuming from a checkpoint continues with the same learning rate and batch positions; the
/// MLM masks and dropout of every micro-batch are seeded by its global index, so the remaining
/// steps equal those of an uninterrupted run (docs/failure-cases.md C32, C34), also under another
/// world size with the same gradient_accumulation_steps x world_size.
/// @param stop  polled between steps (may be null)
/// @param log   receives human-readable log lines (a line every logging_steps; may be empty)
/// @param on_step called after every optimiser step (may be empty)
/// @param group  data-parallel membership (null = one process). Then one optimiser step takes
///   gradient_accumulation_steps x world_size consecutive batches of each stream, rank r the
///   r-th of each world_size; gradients are averaged over the ranks; logged losses are the
///   means over ranks; only rank 0 writes the run directory and calls `log` / `on_step`; a
///   stop request on any rank stops all at the same step. The run equals a single process
///   with gradient_accumulation_steps x world_size (docs/training.md "Data-parallel").
/// @param evaluate  run on rank 0 when config.eval_steps > 0 (may be empty: no evaluation).
///   With metric_for_best_model, each new best is saved as the bundle `best/` (its recipe holds
///   step, metric and value); with load_best_model_at_end, `final/` gets best/'s weights.
/// @throws DataError for bad inputs (files, tokenizer, checkpoint) or an evaluation that does
///   not report metric_for_best_model; std::runtime_error on I/O or when a collective times
///   out (ddp_timeout).
PretrainResult run_pretraining(const PretrainConfig& config, const std::atomic<bool>* stop,
                               const std::function<void(const std::string&)>& log,
                               const std::function<void(const StepInfo&)>& on_step = {},
                               DataParallelGroup* group = nullptr, const Evaluator& evaluate = {});

}  // namespace dialtree::trainer
