// Strict YAML reading of the fine-tuning recipe (eval_config.h): the same scalar, document and
// override rules as the pretraining config (common/strict_yaml.h), one table of keys and ranges.
#include "eval/eval_config.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <variant>

#include "common/device_spec.h"
#include "common/error.h"
#include "common/strict_yaml.h"
#include "common/text_distance.h"

namespace dialtree::eval {
namespace {

namespace sy = strict_yaml;

using Member = std::variant<int FinetuneOptions::*, double FinetuneOptions::*,
                            bool FinetuneOptions::*, std::string FinetuneOptions::*>;

using strict_yaml::kInf;

// One row per key: its member and its allowed range (common/value_range.h; booleans and strings
// ignore it).
struct Field {
  const char* name;
  Member member;
  Range range = {};
  /// String keys: the problem with a value ("" = none).
  std::string (*string_problem)(const std::string&) = nullptr;
};

std::string classifier_init_problem(const std::string& value) {
  if (value == "random" || value == "linear_probe") return {};
  return "must be random or linear_probe, got \"" + value + "\"";
}

const std::vector<Field>& fields() {
  using O = FinetuneOptions;
  static const std::vector<Field> table = {
      {"num_train_epochs", &O::num_train_epochs, at_least(1)},
      {"per_device_train_batch_size", &O::per_device_train_batch_size, at_least(1)},
      {"per_device_eval_batch_size", &O::per_device_eval_batch_size, at_least(1)},
      {"learning_rate", &O::learning_rate, greater_than(0)},
      {"warmup_ratio", &O::warmup_ratio, between(0, 1)},
      {"weight_decay", &O::weight_decay, at_least(0)},
      {"adam_epsilon", &O::adam_epsilon, greater_than(0)},
      {"max_grad_norm", &O::max_grad_norm, at_least(0)},
      {"dropout", &O::dropout, {-kInf, true, 1, false}},
      {"max_utt_len", &O::max_utt_len, at_least(1)},
      {"bf16", &O::bf16},
      {"from_scratch", &O::from_scratch},
      {"rdrop_weight", &O::rdrop_weight, at_least(0)},
      {"mlm_weight", &O::mlm_weight, at_least(0)},
      {"mlm_probability", &O::mlm_probability, {0, false, 1, false}},
      {"early_stopping_patience", &O::early_stopping_patience, at_least(0, "0 = off")},
      {"device", &O::device, {}, &device_spec_problem},
      {"classifier_init", &O::classifier_init, {}, &classifier_init_problem},
      {"linear_probe_c", &O::linear_probe_c, greater_than(0)}};
  return table;
}

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for (const auto& f : fields()) names.emplace_back(f.name);
  return names;
}

// Names other tools use for a key of ours that edit distance would not find.
std::string alias_of(const std::string& key) {
  static const std::map<std::string, std::string> aliases = {
      {"epochs", "num_train_epochs"},
      {"lr", "learning_rate"},
      {"batch_size", "per_device_train_batch_size"},
      {"eval_batch_size", "per_device_eval_batch_size"},
      {"warmup_steps", "warmup_ratio"},
      {"fp16", "bf16"},
      {"patience", "early_stopping_patience"},
      {"r_drop", "rdrop_weight"},
      {"max_seq_length", "max_utt_len"}};
  const auto it = aliases.find(ascii_lower(key));
  return it == aliases.end() ? std::string() : it->second;
}

const Field& find_field(const sy::Origin& at, const std::string& key) {
  for (const auto& f : fields()) {
    if (key == f.name) return f;
  }
  std::string hint = alias_of(key);
  if (hint.empty()) hint = closest_name(key, field_names());
  if (!hint.empty()) sy::fail(at, key, "unknown key '" + key + "' — did you mean '" + hint + "'?");
  std::string all;
  for (const auto& f : fields()) all += (all.empty() ? "" : ", ") + std::string(f.name);
  sy::fail(at, key,
           "unknown key '" + key + "' (a fine-tuning recipe's keys: " + all +
               "; docs/evaluation.md \"Hyper-parameters\")");
}

// The problem with field `f` of `o` ("must be >= 1, got 0"), or "".
std::string problem(const Field& f, const FinetuneOptions& o) {
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_cv_t<std::remove_reference_t<decltype(o.*member)>>;
        if constexpr (std::is_same_v<T, bool>) {
          return {};
        } else if constexpr (std::is_same_v<T, std::string>) {
          return f.string_problem != nullptr ? f.string_problem(o.*member) : std::string();
        } else {
          return range_problem(o.*member, f.range);
        }
      },
      f.member);
}

void read_field(const sy::Source& source, const Field& f, const YAML::Node& key_node,
                const YAML::Node& value, FinetuneOptions& o) {
  const sy::ValueContext ctx{source, key_node, f.name, false};
  std::visit([&](auto member) { sy::read_value(ctx, value, &(o.*member)); }, f.member);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> finetune_options_problem(
    const FinetuneOptions& options) {
  for (const auto& f : fields()) {
    if (std::string p = problem(f, options); !p.empty()) return std::make_pair(f.name, p);
  }
  return std::nullopt;
}

nlohmann::json finetune_options_json(const FinetuneOptions& o) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : fields()) {
    std::visit([&](auto member) { out[f.name] = o.*member; }, f.member);
  }
  return out;
}

std::vector<std::string> finetune_option_keys() {
  return field_names();
}

FinetuneOptions parse_finetune_options(const std::string& yaml_text, const std::string& source,
                                       const std::vector<std::string>& overrides) {
  FinetuneOptions o;
  std::map<std::string, sy::Origin> origins;
  const sy::Source file{source, ""};
  if (const auto doc = sy::load_document(yaml_text, source); doc && !doc->IsNull()) {
    if (!doc->IsMap()) {
      sy::fail(file.at(*doc), "",
               "must be a YAML mapping of option keys, found " + sy::describe(*doc));
    }
    std::set<std::string> seen;
    for (const auto& kv : *doc) {
      const sy::Origin at = file.at(kv.first);
      if (!kv.first.IsScalar()) {
        sy::fail(at, "", "keys must be plain names, found " + sy::describe(kv.first));
      }
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) sy::fail(at, key, "duplicate key '" + key + "'");
      read_field(file, find_field(at, key), kv.first, kv.second, o);
      origins[key] = file.at(kv.second, &kv.first);
    }
  }
  sy::check_utf8(yaml_text, source);  // comments and keys (values were checked above)
  for (const auto& text : overrides) {
    const sy::Source source_of{sy::kCommandLine, text};
    const auto [key, value] = sy::split_override(text, "key");
    const sy::Origin at = source_of.at(value);
    read_field(source_of, find_field(at, key), value, value, o);
    origins[key] = at;
  }
  for (const auto& f : fields()) {
    const std::string p = problem(f, o);
    if (p.empty()) continue;
    const auto it = origins.find(f.name);
    if (it != origins.end()) sy::fail(it->second, f.name, p);
    sy::fail(sy::Origin{source, ""}, f.name, p + " (the default value)");
  }
  return o;
}

FinetuneOptions load_finetune_options(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  return parse_finetune_options(sy::read_file(path), path, overrides);
}

}  // namespace dialtree::eval
