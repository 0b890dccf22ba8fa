// Strict YAML reading of the fine-tuning hyper-parameters (configs/eval-*.yaml) into
// FinetuneOptions: every key must be one of FinetuneOptions' fields, with the type and range
// docs/evaluation.md "Hyper-parameters" gives it, read by the same strict rules as the
// pretraining config (common/strict_yaml.h: no quoted numbers, no yes/no, file:line errors).
// Torch-free.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/settings_fwd.h"
#include "eval/finetune.h"

namespace dialtree::eval {

/// A fine-tuning recipe with per-task sections (docs/evaluation.md "Per-task options"): the
/// options every task uses, and for the tasks the config's `tasks:` section names, the options
/// that task uses instead (the common ones with the section's keys on top).
struct FinetuneRecipe {
  FinetuneOptions options;
  /// By data folder name (`dstc8_sgd`, never `dstc8`): every option of the task, not only those
  /// its section sets.
  std::map<std::string, FinetuneOptions> task_options;

  /// The options `task` (either spelling) fine-tunes with.
  const FinetuneOptions& for_task(const std::string& task) const;
};

/// Reads a recipe whose YAML may hold, besides the option keys, a `tasks:` mapping from DialoGLUE
/// task names (either spelling: `dstc8` or `dstc8_sgd`) to mappings of option keys; overrides
/// "tasks.<task>.<key>=value" (or "tasks.<task>={key: value}", "tasks={task: {...}}") go to that
/// task, the others to every task. A task's options, lowest precedence first: the file's keys,
/// the file's section of the task, the common overrides, the task's overrides
/// (docs/evaluation.md "Per-task options"). @throws as load_finetune_options(), and DataError
/// at the line (or override) for an unknown task name, a `tasks:` that is not a mapping of
/// mappings, or a duplicate task; an error inside a section names its key `tasks.<task>.<key>`.
FinetuneRecipe parse_finetune_recipe(const std::string& yaml_text, const std::string& source,
                                     const std::vector<std::string>& overrides = {});

/// parse_finetune_recipe() of the file at `path`. @throws as parse_finetune_recipe().
FinetuneRecipe load_finetune_recipe(const std::string& path,
                                    const std::vector<std::string>& overrides = {});

/// The options of `task_options` that differ from `options`, as {task: {key: value}} with the
/// keys of finetune_option_keys() (results.json's "task_options"); tasks without a difference
/// are left out, so an empty object means every task ran with `options`.
nlohmann::json task_options_json(const FinetuneRecipe& recipe);

/// Reads `path` (a YAML mapping of FinetuneOptions keys, all optional; missing keys keep their
/// defaults) and then applies `overrides` ("key=value" strings, the YAML scalar syntax). A
/// `tasks:` section is refused (the callers of this form have no per-task runs).
/// @throws DataError naming the file and line (or the override's text), the key, and: for an
///   unknown key the closest valid one ("did you mean 'learning_rate'?"); for a wrong type the
///   value found ("expected an integer, found the string \"3\""); for a value out of range the
///   range ("must be >= 1, got 0"); a YAML syntax error with its line and column.
FinetuneOptions load_finetune_options(const std::string& path,
                                      const std::vector<std::string>& overrides = {});

/// parse of YAML text; `source` names it in errors. @throws as load_finetune_options().
FinetuneOptions parse_finetune_options(const std::string& yaml_text, const std::string& source,
                                       const std::vector<std::string>& overrides = {});

/// The first option of `options` outside its range, as {key, "must be >= 1, got 0"}, or nullopt.
/// The loader reports these at the key's line; fine-tuning checks options built in code with it.
std::optional<std::pair<std::string, std::string>> finetune_options_problem(
    const FinetuneOptions& options);

/// Every option as a JSON object {key: value}, the keys of finetune_option_keys() (recorded in
/// results.json so a table says which recipe made it).
nlohmann::json finetune_options_json(const FinetuneOptions& options);

/// The recipe's settings, one row per FinetuneOptions field (key, help, range, aliases): the one
/// table behind the reader, the checks, the JSON form and `dialtree print-config
/// --settings-table finetune` (docs/evaluation.md "Hyper-parameters").
const std::vector<settings::Setting<FinetuneOptions>>& finetune_settings();

/// The accepted keys, in FinetuneOptions order.
std::vector<std::string> finetune_option_keys();

}  // namespace dialtree::eval
