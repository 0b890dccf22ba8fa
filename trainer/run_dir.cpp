#include "trainer/run_dir.h"

#include <algorithm>
#include <limits>
#include <system_error>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"

namespace dialtree::trainer {

namespace fs = std::filesystem;
using nlohmann::json;

std::string checkpoint_name(std::int64_t step) {
  return std::string(kCheckpointPrefix) + std::to_string(step);
}

std::optional<std::int64_t> parse_checkpoint_name(std::string_view name) {
  if (name.substr(0, kCheckpointPrefix.size()) != kCheckpointPrefix) return std::nullopt;
  const std::string_view digits = name.substr(kCheckpointPrefix.size());
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t step = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (step > (kMax - digit) / 10) return std::nullopt;  // step * 10 + digit would not fit
    step = step * 10 + digit;
  }
  return step;
}

std::vector<CheckpointDir> list_checkpoints(const fs::path& dir) {
  std::vector<CheckpointDir> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<std::int64_t> step = parse_checkpoint_name(it->path().filename().string());
    std::error_code type_ec;
    if (step && it->is_directory(type_ec)) out.push_back({*step, it->path()});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointDir& a, const CheckpointDir& b) { return a.step < b.step; });
  return out;
}

std::string newest_checkpoint(const std::string& output_dir,
                              std::optional<fs::file_time_type> not_before) {
  if (output_dir.empty()) return {};
  const std::vector<CheckpointDir> all = list_checkpoints(output_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const fs::path state = it->path / kTrainerStateFile;
    std::error_code ec;
    if (!fs::is_regular_file(state, ec)) continue;
    if (not_before && !(fs::last_write_time(state, ec) >= *not_before)) continue;
    return it->path.string();
  }
  return {};
}

bool is_stale_temporary(const std::string& name) {
  if (name.rfind(".checkpoint-", 0) == 0 && name.find(".tmp") != std::string::npos) return true;
  const auto tmp = name.rfind(".tmp.");
  if (tmp == std::string::npos) return false;
  const std::string rest = name.substr(tmp + 5);  // "<pid>.<n>"
  const auto dot = rest.find('.');
  auto digits = [](const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return dot != std::string::npos && digits(rest.substr(0, dot)) && digits(rest.substr(dot + 1));
}

std::vector<std::string> remove_stale_temporaries(const fs::path& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_stale_temporary(name)) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

namespace {

json stream_position_json(const std::optional<StreamPosition>& p) {
  if (!p) return json();
  return {{"epoch", p->epoch}, {"next_batch", p->next_batch}};
}

std::optional<StreamPosition> stream_position_from(const json& state, const char* key) {
  const auto it = state.find(key);
  if (it == state.end() || it->is_null()) return std::nullopt;
  return StreamPosition{it->at("epoch").get<std::uint64_t>(),
                        it->at("next_batch").get<std::size_t>()};
}

// Removes the oldest checkpoints of steps <= `step` in `dir` until `limit` of them remain.
void prune_checkpoints(const fs::path& dir, std::int64_t step, int limit) {
  std::vector<CheckpointDir> all = list_checkpoints(dir);
  // Checkpoints beyond this step are not this run's (an earlier run in the same output_dir):
  // they are neither counted nor pruned, so they can never push out the one just saved.
  all.erase(
      std::remove_if(all.begin(), all.end(), [&](const CheckpointDir& c) { return c.step > step; }),
      all.end());
  std::error_code ec;
  for (std::size_t i = 0; i + static_cast<std::size_t>(limit) < all.size(); ++i) {
    fs::remove_all(all[i].path, ec);
  }
}

}  // namespace

json trainer_state_json(const TrainerState& s) {
  return {{"format", kTrainerStateFormat},
          {"global_step", s.global_step},
          {"total_steps", s.total_steps},
          {"labelled_position", stream_position_json(s.labelled_position)},
          {"unlabelled_position", stream_position_json(s.unlabelled_position)},
          {"micro_batches_done", s.micro_batches_done},
          {"world_size", s.world_size},
          {"gradient_accumulation_steps", s.gradient_accumulation_steps},
          {"log_window", s.log_window},
          {"train_seconds", s.train_seconds},
          {"seed", s.seed},
          {"data_seed", s.data_seed},
          {"batch_grouping", s.batch_grouping}};
}

TrainerState read_trainer_state(const fs::path& dir, std::int64_t data_seed,
                                std::int64_t gradient_accumulation_steps,
                                const std::string& batch_grouping) {
  const std::string path = (dir / kTrainerStateFile).string();
  const json state = json_parse_file(path);
  const JsonPlace place{path, ""};
  auto integer = [&](const char* key) {
    return json_as_int(json_require(state, key, place, ""), place, key);
  };
  const std::string format =
      json_as_string(json_require(state, "format", place, ""), place, "format");
  if (format != kTrainerStateFormat && format != kTrainerStateFormatV1) {
    throw DataError(path, "", "format", "unsupported trainer state '" + format + "'");
  }
  TrainerState s;
  s.data_seed = integer("data_seed");
  if (s.data_seed != data_seed) {
    throw DataError(path, "", "data_seed",
                    "the checkpoint was made with another data_seed; resuming would change the "
                    "batch order (docs/failure-cases.md C34)");
  }
  // Absent in checkpoints made before data.group_by_view existed: they drew random batches.
  s.batch_grouping = state.contains("batch_grouping")
                         ? json_as_string(state.at("batch_grouping"), place, "batch_grouping")
                         : std::string();
  if (s.batch_grouping != batch_grouping) {
    const auto name = [](const std::string& g) {
      return g.empty() ? std::string("random batches") : "groups " + g;
    };
    throw DataError(path, "", "batch_grouping",
                    "the checkpoint was made with " + name(s.batch_grouping) +
                        " (data.group_by_view/data.group_size), this run asks for " +
                        name(batch_grouping) +
                        "; resuming would change the batch order (docs/failure-cases.md C34)");
  }
  s.global_step = integer("global_step");
  s.labelled_position = stream_position_from(state, "labelled_position");
  s.unlabelled_position = stream_position_from(state, "unlabelled_position");
  // A version-1 state was written by a single process: its micro-batches were step x accum.
  s.micro_batches_done = format == kTrainerStateFormatV1
                             ? s.global_step * gradient_accumulation_steps
                             : integer("micro_batches_done");
  s.log_window = json_require(state, "log_window", place, "");
  s.train_seconds = state.value("train_seconds", 0.0);  // absent in older checkpoints
  return s;
}

fs::path write_checkpoint(const fs::path& output_dir, const TrainerState& state,
                          const std::function<void(const fs::path& folder)>& write_files,
                          int save_total_limit) {
  const std::int64_t step = state.global_step;
  const fs::path final_dir = output_dir / checkpoint_name(step);
  const fs::path tmp = output_dir / ("." + checkpoint_name(step) + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  write_files(tmp);
  fs::create_directories(tmp);  // in case write_files wrote nothing
  write_file_atomic(tmp / kTrainerStateFile, trainer_state_json(state).dump(2) + "\n");
  sync_tree(tmp);  // every file, before the rename publishes the checkpoint
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir);
  sync_path(output_dir);
  if (save_total_limit > 0) prune_checkpoints(output_dir, step, save_total_limit);
  return final_dir;
}

}  // namespace dialtree::trainer
