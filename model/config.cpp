#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/join.h"
#include "common/json_util.h"
#include "common/settings_json.h"
#include "common/strict_yaml.h"

namespace dialtree::model {
namespace {

std::string hidden_act_problem(const std::string& v) {
  return v == "gelu" ? "" : "only \"gelu\" is supported, got \"" + v + "\"";
}

}  // namespace

const std::vector<settings::Setting<EncoderConfig>>& encoder_settings() {
  using C = EncoderConfig;
  using settings::field;
  using strict_yaml::kInf;
  using strict_yaml::kMaxSize;
  const Range probability{0, true, 1, false};
  const Range positive{0, false, kInf, false};
  static const std::vector<settings::Setting<C>> table = {
      field("vocab_size", &C::vocab_size, "rows of the word-embedding table")
          .in(between(0, 1 << 24, "0 = the tokenizer's size, in a training config only")),
      field("hidden_size", &C::hidden_size, "H, a multiple of num_attention_heads")
          .in(between(1, 1 << 16)),
      field("num_hidden_layers", &C::num_hidden_layers, "transformer blocks")
          .in(between(1, 1024))
          .alias("num_layers"),
      field("num_attention_heads", &C::num_attention_heads, "heads per block").in(between(1, 1024)),
      field("intermediate_size", &C::intermediate_size, "FFN inner size").in(between(1, 1 << 18)),
      field("hidden_act", &C::hidden_act, "the FFN activation (exact erf GELU)")
          .checked(&hidden_act_problem, "gelu"),
      field("hidden_dropout_prob", &C::hidden_dropout_prob,
            "residual-branch dropout (SPACE `dropout`)")
          .in(probability)
          .alias("dropout"),
      field("attention_probs_dropout_prob", &C::attention_probs_dropout_prob,
            "dropout on attention probabilities")
          .in(probability),
      field("max_position_embeddings", &C::max_position_embeddings, "rows of the position table")
          .in(between(1, kMaxSize)),
      field("type_vocab_size", &C::type_vocab_size, "rows of the role table (user 1, system 0)")
          .in(between(2, 1024, "role ids 0 and 1 are used")),
      field("initializer_range", &C::initializer_range, "std of the N(0, s) initialisation")
          .in(positive),
      field("layer_norm_eps", &C::layer_norm_eps, "every LayerNorm's epsilon").in(positive),
      field("pad_token_id", &C::pad_token_id, "id used for padding")
          .allows("a row of the word table"),
      field("cls_token_id", &C::cls_token_id,
            "row of the word table prepended as the [CLS] head vector")
          .allows("a row of the word table"),
      field("max_turns", &C::max_turns, "turn ids 1..max_turns (id 0 = padding)")
          .in(between(1, kMaxSize)),
      field("embedding_dropout_prob", &C::embedding_dropout_prob,
            "dropout before the embedding LayerNorm (SPACE `embed_dropout`); a config.json "
            "without it takes hidden_dropout_prob")
          .in(probability),
      field("ffn_dropout_prob", &C::ffn_dropout_prob,
            "dropout after the FFN's GELU (SPACE `ff_dropout`); a config.json without it takes "
            "hidden_dropout_prob")
          .in(probability),
      field("projection_views", &C::projection_views,
            "views with a projection sub-head, in the order of the output's view axis")
          .allows("known views, no repeats, at least one"),
      field("projection_dim", &C::projection_dim,
            "P, the size of each view's sub-vector; a config.json without it takes hidden_size")
          .in(between(1, 1 << 16)),
      field("num_labels", &C::num_labels, "intent classifier outputs")
          .in(between(0, kMaxSize, "0 = no intent head")),
      field("num_tags", &C::num_tags, "token tagger outputs")
          .in(between(0, kMaxSize, "0 = no tagger head")),
  };
  return table;
}

std::optional<EncoderConfigProblem> EncoderConfig::first_problem(const std::string& prefix,
                                                                 bool vocab_from_tokenizer) const {
  using P = EncoderConfigProblem;
  std::optional<P> found;
  auto check = [&](const char* key, const std::string& problem) {
    if (!found && !problem.empty()) found = P{{prefix + key}, problem};
  };
  // A bundle's own vocabulary: the row's 0 (the tokenizer decides) is not allowed.
  if (!vocab_from_tokenizer) check("vocab_size", integer_range_problem(vocab_size, 1, 1 << 24));
  if (found) return found;
  if (const auto p = settings::first_problem(settings::view(encoder_settings(), *this))) {
    return P{{prefix + p->name}, p->message};
  }
  // Rules across keys, after the rows' own ranges.
  if (hidden_size % num_attention_heads != 0) {
    return P{{prefix + "hidden_size", prefix + "num_attention_heads"},
             prefix + "hidden_size (" + std::to_string(hidden_size) + ") must be divisible by " +
                 prefix + "num_attention_heads (" + std::to_string(num_attention_heads) + ")"};
  }
  if (!vocab_from_tokenizer) {
    check("pad_token_id",
          integer_range_problem(pad_token_id, 0, vocab_size - 1, "a row of the word table"));
    check("cls_token_id",
          integer_range_problem(cls_token_id, 0, vocab_size - 1, "a row of the word table"));
  }
  check("projection_views", projection_views.empty() ? "must name at least one view" : "");
  std::set<std::string> seen;
  for (const auto& v : projection_views) {
    if (!sts::find_view(v)) {
      check("projection_views",
            "must be one of '" + join(sts::view_name_list(), "', '") + "', got '" + v + "'");
    } else if (!seen.insert(v).second) {
      check("projection_views", "'" + v + "' is listed twice");
    }
  }
  return found;
}

const std::vector<std::string>& encoder_config_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& row : encoder_settings()) k.push_back(row.info.name);
    return k;
  }();
  return keys;
}

const std::vector<std::string>& hf_bert_config_keys() {
  // HF's BertConfig keys come first in the table, up to pad_token_id.
  static const std::vector<std::string> keys = [] {
    const auto& all = encoder_config_keys();
    const auto end = std::find(all.begin(), all.end(), "pad_token_id");
    return std::vector<std::string>(all.begin(), end + 1);
  }();
  return keys;
}

bool is_task_head_tensor(const std::string& name) {
  return name.rfind("intent_classifier.", 0) == 0 || name.rfind("token_classifier.", 0) == 0;
}

void EncoderConfig::validate() const {
  if (auto p = first_problem()) {
    throw std::invalid_argument("config: " + p->keys.front() + ": " + p->message);
  }
}

nlohmann::ordered_json encoder_config_to_json(const EncoderConfig& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  settings::write_json(settings::view(encoder_settings(), c), j);
  return j;
}

EncoderConfig encoder_config_from_json(const json& j, const std::string& file) {
  EncoderConfig c;
  settings::read_json(settings::bind(encoder_settings(), c), j, JsonPlace{file, ""});
  // Absent keys that follow another key of the file (SPACE-2's scripts set all dropouts equal).
  if (!j.contains("embedding_dropout_prob")) c.embedding_dropout_prob = c.hidden_dropout_prob;
  if (!j.contains("ffn_dropout_prob")) c.ffn_dropout_prob = c.hidden_dropout_prob;
  if (!j.contains("projection_dim")) c.projection_dim = c.hidden_size;
  if (auto p = c.first_problem()) throw DataError(file, "", p->keys.front(), p->message);
  return c;
}

EncoderConfig read_encoder_config(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / kEncoderConfigFile).string();
  return encoder_config_from_json(json_parse_file(file), file);
}

void write_encoder_config(const std::string& dir, const EncoderConfig& config) {
  config.validate();
  write_file_atomic(std::filesystem::path(dir) / kEncoderConfigFile,
                    encoder_config_to_json(config).dump(2) + "\n");
}

}  // namespace dialtree::model
