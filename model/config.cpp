#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/text_distance.h"

namespace dialtree::model {
namespace {

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

std::string closest_key(const std::string& key) {
  static const std::vector<std::string> keys(std::begin(kKeys), std::end(kKeys));
  return closest_name(key, keys);
}

/// The first broken rule of `c` as (key, message), or nullopt.
std::optional<std::pair<std::string, std::string>> find_problem(const EncoderConfig& c) {
  using P = std::pair<std::string, std::string>;
  const std::pair<const char*, std::int64_t> positives[] = {
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"intermediate_size", c.intermediate_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"type_vocab_size", c.type_vocab_size},
      {"max_turns", c.max_turns},
      {"projection_dim", c.projection_dim}};
  for (const auto& [key, v] : positives) {
    if (v < 1) return P{key, "must be >= 1, got " + std::to_string(v)};
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return P{"hidden_size", "must be a multiple of num_attention_heads (" +
                                std::to_string(c.num_attention_heads) + "), got " +
                                std::to_string(c.hidden_size)};
  }
  if (c.hidden_act != "gelu") {
    return P{"hidden_act", "only \"gelu\" is supported, got \"" + c.hidden_act + "\""};
  }
  const std::pair<const char*, double> probs[] = {
      {"hidden_dropout_prob", c.hidden_dropout_prob},
      {"attention_probs_dropout_prob", c.attention_probs_dropout_prob},
      {"embedding_dropout_prob", c.embedding_dropout_prob},
      {"ffn_dropout_prob", c.ffn_dropout_prob}};
  for (const auto& [key, v] : probs) {
    if (!(v >= 0.0 && v < 1.0)) return P{key, "must be in [0, 1), got " + std::to_string(v)};
  }
  if (!(c.initializer_range > 0.0) || !std::isfinite(c.initializer_range)) {
    return P{"initializer_range", "must be > 0"};
  }
  if (!(c.layer_norm_eps > 0.0) || !std::isfinite(c.layer_norm_eps)) {
    return P{"layer_norm_eps", "must be > 0"};
  }
  if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size) {
    return P{"pad_token_id", "must be in [0, vocab_size), got " + std::to_string(c.pad_token_id)};
  }
  if (c.cls_token_id < 0 || c.cls_token_id >= c.vocab_size) {
    return P{"cls_token_id", "must be in [0, vocab_size), got " + std::to_string(c.cls_token_id)};
  }
  if (c.num_labels < 0) return P{"num_labels", "must be >= 0"};
  if (c.num_tags < 0) return P{"num_tags", "must be >= 0"};
  if (c.projection_views.empty()) return P{"projection_views", "must name at least one view"};
  const auto& all = sts::view_name_list();
  std::set<std::string> seen;
  for (const auto& v : c.projection_views) {
    if (std::find(all.begin(), all.end(), v) == all.end()) {
      return P{"projection_views",
               "unknown view \"" + v + "\" (valid: D, I, S, V, DI, IS, SV, DIS, ISV, DISV)"};
    }
    if (!seen.insert(v).second) return P{"projection_views", "view \"" + v + "\" repeated"};
  }
  return std::nullopt;
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

void EncoderConfig::validate() const {
  if (auto p = find_problem(*this)) {
    throw std::invalid_argument("config: " + p->first + ": " + p->second);
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
    if (std::find_if(std::begin(kKeys), std::end(kKeys),
                     [&](const char* k) { return item.key() == k; }) == std::end(kKeys)) {
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
  if (auto p = find_problem(c)) throw DataError(file, "", p->first, p->second);
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
