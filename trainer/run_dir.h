// The checkpoints of a run directory (docs/training.md "Run directory"): the folder name
// "checkpoint-<step>" and the one parser of it, listing, the newest complete checkpoint, the
// temporaries a killed save leaves behind, the crash-safe save (staging folder, fsync, rename,
// pruning) and trainer_state.json. Torch-free: the launcher (trainer/launcher.h) uses it without
// LibTorch; the trainer (trainer/pretrain.cpp) writes and reads the weights and the optimiser
// state through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/batching.h"  // StreamPosition

namespace dialtree::trainer {

/// What every checkpoint folder's name starts with.
inline constexpr std::string_view kCheckpointPrefix = "checkpoint-";

/// The trainer's state file inside a checkpoint folder.
inline constexpr const char* kTrainerStateFile = "trainer_state.json";

/// The format trainer_state.json is written in. Version 2 derives the masking and dropout seeds
/// from the micro-batch index, so a checkpoint resumes under any world size.
inline constexpr const char* kTrainerStateFormat = "dialtree-trainer-state/2";

/// The older format still read: one masking RNG stream, written by a single process.
inline constexpr const char* kTrainerStateFormatV1 = "dialtree-trainer-state/1";

/// The folder name of the checkpoint after `step` (>= 0) optimiser steps: "checkpoint-<step>",
/// the step in decimal without leading zeros.
std::string checkpoint_name(std::int64_t step);

/// The step that a folder name stands for, or nullopt when `name` is not a checkpoint name. The
/// one rule of every reader (the trainer's listing and pruning, resume_from_checkpoint=latest,
/// the launcher's restarts): "checkpoint-" and then a step in [0, 2^63 - 1] written as
/// checkpoint_name() writes it, i.e. decimal digits only, no sign, no leading zero ("0" itself
/// excepted). So checkpoint_name() and this function are inverses, and no two names stand for one
/// step. Never throws: "checkpoint-", "checkpoint-007", "checkpoint-1a", "checkpoint--1" and a
/// step beyond int64 (e.g. 20 digits) are not checkpoint names.
std::optional<std::int64_t> parse_checkpoint_name(std::string_view name);

/// One checkpoint folder of a run directory.
struct CheckpointDir {
  std::int64_t step = 0;       ///< from its name (parse_checkpoint_name)
  std::filesystem::path path;  ///< the folder
};

/// The checkpoint folders directly inside `dir`: directories whose name parse_checkpoint_name()
/// accepts, complete or not, by ascending step. Empty when `dir` is missing or unreadable; never
/// throws for what it finds there.
std::vector<CheckpointDir> list_checkpoints(const std::filesystem::path& dir);

/// The newest complete checkpoint of a run: output_dir/checkpoint-N with the largest N that
/// holds a trainer_state.json (checkpoints are renamed into place only when complete, so a
/// killed save leaves no such folder), written at or after `not_before` when given (so a
/// restart never picks up an older run's checkpoint). Empty when there is none or output_dir
/// is missing.
std::string newest_checkpoint(
    const std::string& output_dir,
    std::optional<std::filesystem::file_time_type> not_before = std::nullopt);

/// True for the name of something a save left behind when the process was killed mid-way: the
/// checkpoint's staging folder ".checkpoint-<step>.tmp", and the temporaries of atomic writes,
/// "<target>.tmp.<pid>.<n>" (common/atomic_file.h).
bool is_stale_temporary(const std::string& name);

/// Removes the stale temporaries (is_stale_temporary) directly inside `dir` and returns their
/// names, sorted. Nothing else in `dir` is touched; what cannot be removed is left out of the
/// list. Never throws.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& dir);

/// The trainer's state in a checkpoint (trainer_state.json, format kTrainerStateFormat): where
/// the run is, enough to continue it exactly (docs/training.md "Run directory").
struct TrainerState {
  std::int64_t global_step = 0;  ///< optimiser steps done
  std::int64_t total_steps = 0;  ///< steps of the whole run (information; not read back)
  /// Batch stream positions; nullopt (JSON null) for a stream the run does not have.
  std::optional<StreamPosition> labelled_position, unlabelled_position;
  std::int64_t micro_batches_done = 0;  ///< global micro-batches consumed (the seeds' index)
  int world_size = 1;                   ///< ranks it was made with (information; not read back)
  int gradient_accumulation_steps = 1;  ///< ditto
  nlohmann::json log_window;            ///< LogWindow::to_json() (trainer/log_window.h)
  double train_seconds = 0;             ///< seconds of optimisation steps so far
  std::int64_t seed = 0;                ///< the run's seed (information; not read back)
  std::int64_t data_seed = 0;           ///< the data order's seed, checked on resume
  /// How labelled batches are grouped, checked on resume: "" (random batches) or
  /// "<data.group_by_view>/<data.group_size>", e.g. "SV/4" (docs/training.md "Batches that share
  /// values"); absent in older checkpoints, which read as "".
  std::string batch_grouping;
};

/// trainer_state.json's object for `state` (format kTrainerStateFormat; keys as listed in
/// TrainerState).
nlohmann::json trainer_state_json(const TrainerState& state);

/// Reads and checks the trainer_state.json of the checkpoint folder `dir`. A version-1 state has
/// no micro_batches_done: it was written by a single process, so it is global_step x
/// `gradient_accumulation_steps`. train_seconds is 0 when absent (older checkpoints); the keys
/// marked "not read back" keep their defaults.
/// @param data_seed the resuming run's; it must equal the checkpoint's, or the batch order would
///   change (docs/failure-cases.md C34)
/// @param batch_grouping the resuming run's (TrainerState::batch_grouping); it must equal the
///   checkpoint's for the same reason
/// @throws DataError naming the file for a missing or malformed file, an unsupported format,
///   another data_seed or batch grouping, or a missing or mistyped key;
///   nlohmann::json::exception for a malformed stream position.
TrainerState read_trainer_state(const std::filesystem::path& dir, std::int64_t data_seed,
                                std::int64_t gradient_accumulation_steps,
                                const std::string& batch_grouping = "");

/// Saves checkpoint `state.global_step` of the run directory `output_dir` crash-safely: in the
/// staging folder ".checkpoint-<step>.tmp" (emptied first), `write_files` writes the weights and
/// the optimiser state (it may create the folder itself; model::save_bundle does), then
/// trainer_state.json is written; every file is synced, and the folder is renamed to
/// "checkpoint-<step>" (replacing one of that name) and the directory synced. With
/// `save_total_limit` > 0, the oldest checkpoints are then removed until that many of those up
/// to this step remain; checkpoints beyond this step belong to an earlier run in the same
/// output_dir and are neither counted nor removed, so they can never push out this one.
/// @return the checkpoint folder.
/// @throws std::filesystem::filesystem_error or std::runtime_error on I/O errors, and what
///   `write_files` throws (the staging folder is then left for the next start-up to remove).
std::filesystem::path write_checkpoint(
    const std::filesystem::path& output_dir, const TrainerState& state,
    const std::function<void(const std::filesystem::path& folder)>& write_files,
    int save_total_limit);

}  // namespace dialtree::trainer
