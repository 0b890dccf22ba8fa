// Strict YAML reading of a settings table (common/settings.h): a document of keys (with
// sections: `model:` holds the rows named "model.*") and `key=value` command-line overrides,
// each value read by strict_yaml::read_value into its row's member, and where each key was set
// recorded for later messages. The pretraining config (trainer/config.cpp) and the fine-tuning
// recipe (eval/eval_config.cpp) read this way; docs/training.md "Config" gives the rules.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/strict_yaml.h"

namespace dialtree::settings {

/// Where each key that was set came from, by row name: its line, or its override.
using Origins = std::map<std::string, strict_yaml::Origin>;

/// A table as YAML reads it.
struct YamlTable {
  std::vector<Bound> rows;  ///< bound to the object being read
  /// The message for a document that is not a mapping, before ", found <what>".
  std::string not_a_mapping;
  /// How an unknown key's message lists the keys of a section ("" = the top level).
  std::function<KeyList(const std::string& section)> key_list;
  /// The key in split_override's "must look like `key`=value" ("key.sub", "key").
  std::string key_example;
};

/// Reads the value `value` into the row `b` (strict_yaml::read_value), reporting errors as
/// `source` places them (`key_node` names the line of a null value), and records its origin.
/// @throws DataError as read_value; std::logic_error for a type YAML does not read (size_t,
///   optional: flag-only types).
void read_row(const strict_yaml::Source& source, const Bound& b, const YAML::Node& key_node,
              const YAML::Node& value, Origins& origins);

/// Reads a whole document into the table's rows; a null document sets nothing.
/// @throws DataError at the line: not a mapping (table.not_a_mapping), a key that is not a
///   plain scalar, a duplicate key, an unknown key (unknown_key_message), a section that is not a
///   mapping, or a bad value (read_row).
void read_document(const YamlTable& table, const strict_yaml::Source& source, const YAML::Node& doc,
                   Origins& origins);

/// Applies one `key=value` override (`section.key=value` or `section={...}` with sections).
/// @throws DataError against strict_yaml::kCommandLine naming the override, as read_document.
void apply_override(const YamlTable& table, const std::string& text, Origins& origins);

}  // namespace dialtree::settings
