// Strict YAML reading of the fine-tuning hyper-parameters (configs/eval-*.yaml) into
// FinetuneOptions: every key must be one of FinetuneOptions' fields with the right type.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/finetune.h"

namespace dialtree::eval {

/// Reads `path` (a YAML mapping of FinetuneOptions keys, all optional; missing keys keep their
/// defaults) and then applies `overrides` ("key=value" strings, the YAML scalar syntax).
/// @throws DataError naming the file (or "override"), the key, and for an unknown key the
///   closest valid one ("did you mean 'learning_rate'?"); for a wrong type the value found.
FinetuneOptions load_finetune_options(const std::string& path,
                                      const std::vector<std::string>& overrides = {});

/// parse of YAML text; `source` names it in errors. @throws as load_finetune_options().
FinetuneOptions parse_finetune_options(const std::string& yaml_text, const std::string& source,
                                       const std::vector<std::string>& overrides = {});

/// Every option as a JSON object {key: value}, the keys of finetune_option_keys() (recorded in
/// results.json so a table says which recipe made it).
nlohmann::json finetune_options_json(const FinetuneOptions& options);

/// The accepted keys, in FinetuneOptions order.
std::vector<std::string> finetune_option_keys();

}  // namespace dialtree::eval
