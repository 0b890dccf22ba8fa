#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/strict_yaml.h"
#include "common/text_distance.h"

namespace dialtree::model {
namespace {

// The HF BertConfig keys first (kHfBertKeys of them), then ours.
const char* const kKeys[] = {"vocab_size",
                             "hidden_size",
                             "num_hidden_layers",
                             "num_attention_heads",
                             "intermediate_size",
                             "hidden_act",
                             "hidden_dropout_prob",
                             "attention_probs_dropout_prob",
                             "max_position_embeddings",
                             "type_vocab_size",
                             "initializer_range",
                             "layer_norm_eps",
                             "pad_token_id",
                             "cls_token_id",
                             "max_turns",
                             "embedding_dropout_prob",
                             "ffn_dropout_prob",
                             "projection_views",
                             "projection_dim",
                             "num_labels",
                             "num_tags"};
constexpr std::size_t kHfBertKeys = 13;  // vocab_size .. pad_token_id

std::string closest_key(const std::string& key) {
  return closest_name(key, encoder_config_keys());
}

double as_number(const json& v, const JsonPlace& place, const std::string& key) {
  if (!v.is_number()) {
    throw SchemaError(place.file, place.where, key,
                      "must be a number, got " + json_type_name(v) +
                          (v.is_string() ? " " + v.dump() : std::string()));
  }
  return v.get<double>();
}

}  // namespace

std::optional<EncoderConfigProblem> EncoderConfig::first_problem(const std::string& prefix,
                                                                 bool vocab_from_tokenizer) const {
  using P = EncoderConfigProblem;
  using strict_yaml::kInf;
  using strict_yaml::kMaxSize;
  std::optional<P> found;
  auto check = [&](const char* key, const std::string& problem) {
    if (!found && !problem.empty()) found = P{{prefix + key}, problem};
  };
  auto integer = [&](const char* key, long long v, long long lo, long long hi,
                     const std::string& note = {}) {
    check(key, integer_range_problem(v, lo, hi, note));
  };
  auto probability = [&](const char* key, double v) {
    check(key, real_range_problem(v, 0, true, 1, false));
  };
  auto positive = [&](const char* key, double v) {
    check(key, real_range_problem(v, 0, false, kInf, false));
  };
  if (vocab_from_tokenizer) {
    integer("vocab_size", vocab_size, 0, 1 << 24, "0 = the tokenizer's size");
  } else {
    integer("vocab_size", vocab_size, 1, 1 << 24);
  }
  integer("hidden_size", hidden_size, 1, 1 << 16);
  integer("num_hidden_layers", num_hidden_layers, 1, 1024);
  integer("num_attention_heads", num_attention_heads, 1, 1024);
  if (!found && hidden_size % num_attention_heads != 0) {
    found = P{{prefix + "hidden_size", prefix + "num_attention_heads"},
              prefix + "hidden_size (" + std::to_string(hidden_size) + ") must be divisible by " +
                  prefix + "num_attention_heads (" + std::to_string(num_attention_heads) + ")"};
  }
  integer("intermediate_size", intermediate_size, 1, 1 << 18);
  check("hidden_act",
        hidden_act == "gelu" ? "" : "only \"gelu\" is supported, got \"" + hidden_act + "\"");
  probability("hidden_dropout_prob", hidden_dropout_prob);
  probability("attention_probs_dropout_prob", attention_probs_dropout_prob);
  probability("embedding_dropout_prob", embedding_dropout_prob);
  probability("ffn_dropout_prob", ffn_dropout_prob);
  integer("max_position_embeddings", max_position_embeddings, 1, kMaxSize);
  positive("layer_norm_eps", layer_norm_eps);
  integer("type_vocab_size", type_vocab_size, 2, 1024, "role ids 0 and 1 are used");
  positive("initializer_range", initializer_range);
  integer("max_turns", max_turns, 1, kMaxSize);
  integer("projection_dim", projection_dim, 1, 1 << 16);
  if (!vocab_from_tokenizer) {
    integer("pad_token_id", pad_token_id, 0, vocab_size - 1, "a row of the word table");
    integer("cls_token_id", cls_token_id, 0, vocab_size - 1, "a row of the word table");
  }
  integer("num_labels", num_labels, 0, kMaxSize, "0 = no intent head");
  integer("num_tags", num_tags, 0, kMaxSize, "0 = no tagger head");
  check("projection_views", projection_views.empty() ? "must name at least one view" : "");
  const auto& all = sts::view_name_list();
  std::set<std::string> seen;
  for (const auto& v : projection_views) {
    if (std::find(all.begin(), all.end(), v) == all.end()) {
      std::string list;
      for (const auto& a : all) list += (list.empty() ? "'" : ", '") + a + "'";
      check("projection_views", "must be one of " + list + ", got '" + v + "'");
    } else if (!seen.insert(v).second) {
      check("projection_views", "'" + v + "' is listed twice");
    }
  }
  return found;
}

const std::vector<std::string>& encoder_config_keys() {
  static const std::vector<std::string> keys(std::begin(kKeys), std::end(kKeys));
  return keys;
}

const std::vector<std::string>& hf_bert_config_keys() {
  static const std::vector<std::string> keys(std::begin(kKeys), std::begin(kKeys) + kHfBertKeys);
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
  nlohmann::ordered_json j;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["intermediate_size"] = c.intermediate_size;
  j["hidden_act"] = c.hidden_act;
  j["hidden_dropout_prob"] = c.hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = c.attention_probs_dropout_prob;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["type_vocab_size"] = c.type_vocab_size;
  j["initializer_range"] = c.initializer_range;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["pad_token_id"] = c.pad_token_id;
  j["cls_token_id"] = c.cls_token_id;
  j["max_turns"] = c.max_turns;
  j["embedding_dropout_prob"] = c.embedding_dropout_prob;
  j["ffn_dropout_prob"] = c.ffn_dropout_prob;
  j["projection_views"] = c.projection_views;
  j["projection_dim"] = c.projection_dim;
  j["num_labels"] = c.num_labels;
  j["num_tags"] = c.num_tags;
  return j;
}

EncoderConfig encoder_config_from_json(const json& j, const std::string& file) {
  const JsonPlace place{file, ""};
  json_as_object(j, place, "(root)");
  for (const auto& item : j.items()) {
    const auto& keys = encoder_config_keys();
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      const std::string hint = closest_key(item.key());
      throw SchemaError(
          file, "", item.key(),
          hint.empty() ? std::string("unknown key") : "unknown key (did you mean '" + hint + "'?)");
    }
  }
  EncoderConfig c;
  auto get_int = [&](const char* key, std::int64_t& out) {
    if (const json* v = json_find(j, key, place, "")) out = json_as_int(*v, place, key);
  };
  auto get_double = [&](const char* key, double& out) {
    if (const json* v = json_find(j, key, place, "")) out = as_number(*v, place, key);
  };
  get_int("vocab_size", c.vocab_size);
  get_int("hidden_size", c.hidden_size);
  get_int("num_hidden_layers", c.num_hidden_layers);
  get_int("num_attention_heads", c.num_attention_heads);
  get_int("intermediate_size", c.intermediate_size);
  if (const json* v = json_find(j, "hidden_act", place, "")) {
    c.hidden_act = json_as_string(*v, place, "hidden_act");
  }
  get_double("hidden_dropout_prob", c.hidden_dropout_prob);
  get_double("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  get_int("max_position_embeddings", c.max_position_embeddings);
  get_int("type_vocab_size", c.type_vocab_size);
  get_double("initializer_range", c.initializer_range);
  get_double("layer_norm_eps", c.layer_norm_eps);
  get_int("pad_token_id", c.pad_token_id);
  get_int("cls_token_id", c.cls_token_id);
  get_int("max_turns", c.max_turns);
  c.embedding_dropout_prob = c.hidden_dropout_prob;
  c.ffn_dropout_prob = c.hidden_dropout_prob;
  get_double("embedding_dropout_prob", c.embedding_dropout_prob);
  get_double("ffn_dropout_prob", c.ffn_dropout_prob);
  if (const json* v = json_find(j, "projection_views", place, "")) {
    json_as_array(*v, place, "projection_views");
    c.projection_views.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      c.projection_views.push_back(
          json_as_string((*v)[i], place, json_index_path("projection_views", i)));
    }
  }
  c.projection_dim = c.hidden_size;
  get_int("projection_dim", c.projection_dim);
  get_int("num_labels", c.num_labels);
  get_int("num_tags", c.num_tags);
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
