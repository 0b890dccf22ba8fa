// Strict YAML reading of settings tables (settings_yaml.h).
#include "common/settings_yaml.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <type_traits>

namespace dialtree::settings {
namespace {

using strict_yaml::describe;
using strict_yaml::fail;
using strict_yaml::Origin;
using strict_yaml::Source;

std::string full_key(const std::string& section, const std::string& name) {
  return section.empty() ? name : section + "." + name;
}

std::vector<const Info*> infos_of(const std::vector<Bound>& rows) {
  std::vector<const Info*> out;
  for (const Bound& b : rows) out.push_back(b.info);
  return out;
}

[[noreturn]] void unknown_key(const YamlTable& table, const Origin& at, const std::string& section,
                              const std::string& name) {
  const std::string key = full_key(section, name);
  fail(at, key,
       unknown_key_message(infos_of(table.rows), section, name, key, table.key_list(section)));
}

bool is_section(const YamlTable& table, const std::string& name) {
  const auto all = sections(infos_of(table.rows));
  return std::find(all.begin(), all.end(), name) != all.end();
}

const Bound& row_or_fail(const YamlTable& table, const Origin& at, const std::string& section,
                         const std::string& name) {
  const Bound* b = find(table.rows, full_key(section, name));
  if (b == nullptr) unknown_key(table, at, section, name);
  return *b;
}

void read_section(const YamlTable& table, const Source& source, const std::string& section,
                  const YAML::Node& map, Origins& origins) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      fail(source.at(kv.first), section, "keys must be plain names, found " + describe(kv.first));
    }
    const std::string name = kv.first.Scalar();
    const Origin at = source.at(kv.first);
    if (!seen.insert(name).second) {
      fail(at, full_key(section, name), "duplicate key '" + full_key(section, name) + "'");
    }
    if (section.empty() && is_section(table, name)) {
      if (kv.second.IsNull()) continue;  // an empty section: every key keeps its default
      if (!kv.second.IsMap()) {
        fail(at, name, "expected a mapping of '" + name + "' keys, found " + describe(kv.second));
      }
      read_section(table, source, name, kv.second, origins);
      continue;
    }
    read_row(source, row_or_fail(table, at, section, name), kv.first, kv.second, origins);
  }
}

}  // namespace

void read_row(const Source& source, const Bound& b, const YAML::Node& key_node,
              const YAML::Node& value, Origins& origins) {
  const strict_yaml::ValueContext ctx{source, key_node, b.info->name, b.info->nullable};
  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::size_t> ||
                      std::is_same_v<T, std::optional<std::int64_t>>) {
          throw std::logic_error("settings: " + b.info->name + " has a type YAML does not read");
        } else {
          strict_yaml::read_value(ctx, value, target);
        }
      },
      b.target);
  origins[b.info->name] = source.at(value, &key_node);
}

void read_document(const YamlTable& table, const Source& source, const YAML::Node& doc,
                   Origins& origins) {
  if (doc.IsNull()) return;
  if (!doc.IsMap()) fail(source.at(doc), "", table.not_a_mapping + ", found " + describe(doc));
  read_section(table, source, "", doc, origins);
}

void apply_override(const YamlTable& table, const std::string& text, Origins& origins) {
  const Source source{strict_yaml::kCommandLine, text};
  const Origin at = strict_yaml::override_origin(text);
  const auto [key, value] = strict_yaml::split_override(text, table.key_example);
  if (sections(infos_of(table.rows)).empty()) {  // no sections: the key is one name
    read_row(source, row_or_fail(table, at, "", key), value, value, origins);
    return;
  }
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const auto dot = key.find('.', from);
    parts.push_back(key.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  if (parts.size() == 1 && is_section(table, parts[0])) {
    if (!value.IsMap()) {
      fail(at, key, "expected a mapping of '" + key + "' keys, found " + describe(value));
    }
    read_section(table, source, parts[0], value, origins);
    return;
  }
  if (parts.size() == 1) {
    read_row(source, row_or_fail(table, at, "", parts[0]), value, value, origins);
    return;
  }
  if (parts.size() == 2 && is_section(table, parts[0])) {
    read_row(source, row_or_fail(table, at, parts[0], parts[1]), value, value, origins);
    return;
  }
  // No such section (or too deep): suggest from the part that names the key.
  const bool in_section = is_section(table, parts[0]);
  const std::string hint = suggestion(infos_of(table.rows), in_section ? parts[0] : "",
                                      parts[in_section ? 1 : parts.size() - 1]);
  fail(at, key,
       "unknown key '" + key + "'" + (hint.empty() ? "" : " — did you mean '" + hint + "'?"));
}

}  // namespace dialtree::settings
