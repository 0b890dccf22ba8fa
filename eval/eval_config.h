// Strict YAML reading of the fine-tuning hyper-parameters (configs/eval-*.yaml) into
// FinetuneOptions: every key must be one of FinetuneOptions' fields, with the type and range
// docs/evaluation.md "Hyper-parameters" gives it, read by the same strict rules as the
// pretraining config (common/strict_yaml.h: no quoted numbers, no yes/no, file:line errors).
// Torch-free.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/settings_fwd.h"
#include "eval/finetune.h"

namespace dialtree::eval {

/// Reads `path` (a YAML mapping of FinetuneOptions keys, all optional; missing keys keep their
/// defaults) and then applies `overrides` ("key=value" strings, the YAML scalar syntax).
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
