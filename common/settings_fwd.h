// The names of the settings layer (common/settings.h) that headers need without its templates: a
// table's row type, to declare `const std::vector<settings::Setting<X>>& x_settings();`, and the
// environment twin of a flag. Keeps option headers (model/config.h, serve/options.h) light.
#pragma once

#include <string>

namespace dialtree::settings {

/// One setting of an options struct `Owner` (defined in common/settings.h).
template <class Owner>
struct Setting;

/// The environment twin of a flag: "max-batch-tokens" -> "DIALTREE_MAX_BATCH_TOKENS".
std::string env_twin(const std::string& flag);

}  // namespace dialtree::settings
