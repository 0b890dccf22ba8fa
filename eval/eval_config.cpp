#include "eval/eval_config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <variant>
#include <vector>

#include "common/error.h"
#include "common/text_distance.h"

namespace dialtree::eval {
namespace {

using Field =
    std::variant<int FinetuneOptions::*, double FinetuneOptions::*, bool FinetuneOptions::*>;

const std::vector<std::pair<std::string, Field>>& fields() {
  static const std::vector<std::pair<std::string, Field>> table = {
      {"num_train_epochs", &FinetuneOptions::num_train_epochs},
      {"per_device_train_batch_size", &FinetuneOptions::per_device_train_batch_size},
      {"per_device_eval_batch_size", &FinetuneOptions::per_device_eval_batch_size},
      {"learning_rate", &FinetuneOptions::learning_rate},
      {"warmup_ratio", &FinetuneOptions::warmup_ratio},
      {"weight_decay", &FinetuneOptions::weight_decay},
      {"adam_epsilon", &FinetuneOptions::adam_epsilon},
      {"max_grad_norm", &FinetuneOptions::max_grad_norm},
      {"dropout", &FinetuneOptions::dropout},
      {"max_utt_len", &FinetuneOptions::max_utt_len},
      {"bf16", &FinetuneOptions::bf16},
      {"from_scratch", &FinetuneOptions::from_scratch},
      {"rdrop_weight", &FinetuneOptions::rdrop_weight},
      {"mlm_weight", &FinetuneOptions::mlm_weight},
      {"mlm_probability", &FinetuneOptions::mlm_probability},
      {"early_stopping_patience", &FinetuneOptions::early_stopping_patience}};
  return table;
}

void set_value(FinetuneOptions& o, const std::string& source, const std::string& where,
               const std::string& key, const YAML::Node& node) {
  auto fail = [&](const std::string&, const std::string&, const std::string& why) {
    throw DataError(source, where, key, why);
  };
  const Field* field = nullptr;
  for (const auto& [name, f] : fields()) {
    if (name == key) field = &f;
  }
  if (field == nullptr) {
    std::vector<std::string> names;
    for (const auto& [name, f] : fields()) names.push_back(name);
    fail(source, key, "unknown key; did you mean '" + closest_name(key, names) + "'?");
  }
  if (!node.IsScalar()) fail(source, key, "must be a single value");
  const std::string text = node.Scalar();
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(o.*member)>;
        try {
          if constexpr (std::is_same_v<T, bool>) {
            o.*member = node.as<bool>();
          } else if constexpr (std::is_same_v<T, int>) {
            o.*member = node.as<int>();
          } else {
            o.*member = node.as<double>();
          }
        } catch (const YAML::Exception&) {
          const char* want = std::is_same_v<T, bool>  ? "true or false"
                             : std::is_same_v<T, int> ? "an integer"
                                                      : "a number";
          fail(source, key, std::string("must be ") + want + ", got '" + text + "'");
        }
      },
      *field);
}

}  // namespace

nlohmann::json finetune_options_json(const FinetuneOptions& o) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, f] : fields()) {
    std::visit([&, n = name](auto member) { out[n] = o.*member; }, f);
  }
  return out;
}

std::vector<std::string> finetune_option_keys() {
  std::vector<std::string> out;
  for (const auto& [name, f] : fields()) out.push_back(name);
  return out;
}

FinetuneOptions parse_finetune_options(const std::string& yaml_text, const std::string& source,
                                       const std::vector<std::string>& overrides) {
  FinetuneOptions o;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw DataError(source, "line " + std::to_string(e.mark.line + 1), "", e.msg);
  }
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap()) throw DataError(source, "", "", "must be a YAML mapping of option keys");
    for (const auto& kv : root) {
      set_value(o, source, "line " + std::to_string(kv.first.Mark().line + 1),
                kv.first.as<std::string>(), kv.second);
    }
  }
  for (const auto& ov : overrides) {
    const auto eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw DataError("override", "", ov, "must be key=value");
    }
    YAML::Node value;
    try {
      value = YAML::Load(ov.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw DataError("override", "", ov.substr(0, eq), e.msg);
    }
    set_value(o, "override", "", ov.substr(0, eq), value);
  }
  return o;
}

FinetuneOptions load_finetune_options(const std::string& path,
                                      const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path, "", "", "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_finetune_options(ss.str(), path, overrides);
}

}  // namespace dialtree::eval
