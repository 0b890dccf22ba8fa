// JSON reading of settings tables (settings_json.h).
#include "common/settings_json.h"

#include <limits>
#include <stdexcept>

#include "common/error.h"

namespace dialtree::settings {

void read_json(const std::vector<Bound>& rows, const json& j, const JsonPlace& place) {
  json_as_object(j, place, "(root)");
  std::vector<const Info*> all;
  for (const Bound& b : rows) all.push_back(b.info);
  for (const auto& item : j.items()) {
    if (find(rows, item.key()) != nullptr) continue;
    const std::string hint = suggestion(all, "", item.key());
    throw SchemaError(
        place.file, place.where, item.key(),
        hint.empty() ? std::string("unknown key") : "unknown key (did you mean '" + hint + "'?)");
  }
  for (const Bound& b : rows) {
    const std::string& key = b.info->name;
    const json* v = json_find(j, key, place, "");
    if (v == nullptr) continue;
    std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            *target = json_as_int(*v, place, key);
          } else if constexpr (std::is_same_v<T, int>) {
            const std::int64_t n = json_as_int(*v, place, key);
            if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
              throw DataError(place.file, place.where, key,
                              "integer " + std::to_string(n) + " is out of range");
            }
            *target = static_cast<int>(n);
          } else if constexpr (std::is_same_v<T, double>) {
            if (!v->is_number()) {
              throw SchemaError(place.file, place.where, key,
                                "must be a number, got " + json_type_name(*v) +
                                    (v->is_string() ? " " + v->dump() : std::string()));
            }
            *target = v->template get<double>();
          } else if constexpr (std::is_same_v<T, bool>) {
            *target = json_as_bool(*v, place, key);
          } else if constexpr (std::is_same_v<T, std::string>) {
            *target = json_as_string(*v, place, key);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            json_as_array(*v, place, key);
            target->clear();
            for (std::size_t i = 0; i < v->size(); ++i) {
              target->push_back(json_as_string((*v)[i], place, json_index_path(key, i)));
            }
          } else {
            throw std::logic_error("settings: " + key + " has a type JSON does not read");
          }
        },
        b.target);
  }
}

}  // namespace dialtree::settings
