// The settings of `dialtree embed` (docs/serving.md "Offline: `dialtree embed`"): the options
// struct and its one settings table (common/settings.h), behind the flags and their DIALTREE_*
// environment twins (cli/embed_cmd.cpp), the checks and `dialtree print-config --settings-table
// embed`. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/settings.h"

namespace dialtree::cli {

/// Every setting of `dialtree embed`, each a --flag with its DIALTREE_* environment twin. Names,
/// defaults and meanings match `serve`'s where both have them.
struct EmbedArgs {
  std::string model, input = "-", output = "-", input_format = "text";
  bool normalize = true, truncate = true;
  std::size_t max_input_length = 256, batch_size = 64, max_batch_tokens = 16384;
  std::optional<std::int64_t> dimensions;
  int num_threads = 0;  ///< in [0, CPUs]: checked by the command (a machine limit)
  std::string device = "auto";
};

/// The rows of EmbedArgs in --help order, names as flags without dashes; the row `model` is
/// declared by add_model_option (cli/common_options.h).
const std::vector<settings::Setting<EmbedArgs>>& embed_settings();

}  // namespace dialtree::cli
