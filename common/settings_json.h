// JSON form of a settings table (common/settings.h): every row's value under its key (a
// bundle's config.json, a fine-tuning run's recorded recipe, the server's logged settings), and
// the reading of such an object back, strictly (unknown keys and wrong types name the key).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/json_util.h"
#include "common/settings.h"

namespace dialtree::settings {

/// Writes every row's value into the JSON object `out`, in table order, under `key_of(name)`
/// (the name itself when null). An empty optional is written as null.
template <class Json>
void write_json(const std::vector<Bound>& rows, Json& out,
                std::string (*key_of)(const std::string&) = nullptr) {
  for (const Bound& b : rows) {
    const std::string key = key_of != nullptr ? key_of(b.info->name) : b.info->name;
    std::visit(
        [&](const auto* value) {
          using T = std::remove_cv_t<std::remove_pointer_t<decltype(value)>>;
          if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
            out[key] = *value ? Json(**value) : Json(nullptr);
          } else {
            out[key] = *value;
          }
        },
        b.target);
  }
}

/// Reads the keys of the JSON object `j` into the rows of those names; absent keys keep their
/// values. Integers must be JSON integers (json_as_int; an int row also within int's range),
/// reals any JSON number, booleans, strings and lists of strings their JSON types.
/// @throws SchemaError naming `place` and the key: `j` not an object, an unknown key ("unknown
///   key (did you mean 'hidden_size'?)", suggestion()), a value of the wrong type; DataError for
///   an integer outside its type's range. std::logic_error for a flag-only row type.
void read_json(const std::vector<Bound>& rows, const json& j, const JsonPlace& place);

}  // namespace dialtree::settings
