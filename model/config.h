// The encoder's architecture settings: the `config.json` of a model bundle (docs/training.md "Model
// bundle"). Hugging Face BERT key names where the concept exists in BERT, plus SPACE-2's own
// (docs/method.md §1.1, §1.2, §1.6). Torch-free, so tools that only read or print a config build
// fast.
//
//   {"vocab_size": 8000, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
//    "intermediate_size": 1024, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
//    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
//    "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
//    "pad_token_id": 0, "cls_token_id": 2, "max_turns": 16, "embedding_dropout_prob": 0.1,
//    "ffn_dropout_prob": 0.1, "projection_views": ["D", "I", ...], "projection_dim": 256,
//    "num_labels": 0, "num_tags": 0}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/settings_fwd.h"
#include "sts/views.h"

namespace dialtree::model {

/// File name of the architecture settings inside a bundle folder.
inline constexpr const char* kEncoderConfigFile = "config.json";

/// A broken rule of an EncoderConfig (EncoderConfig::first_problem).
struct EncoderConfigProblem {
  /// The keys the rule involves, as prefix + field name; a cross-field rule names two, and the
  /// caller blames the one the user set (the last one when it cannot tell).
  std::vector<std::string> keys;
  std::string message;  ///< e.g. "must be in [0.0, 1.0), got 1.0"
};

/// Architecture of the SPACE-2 encoder and its heads: the one schema behind a bundle's
/// config.json, HF imports and the `model:` section of the training YAML (trainer/config.h).
/// Defaults are BERT-base with SPACE-2's extras (docs/method.md §1.1). All sizes are counts >= 1
/// unless noted.
struct EncoderConfig {
  std::int64_t vocab_size = 30522;             ///< rows of the word-embedding table
  std::int64_t hidden_size = 768;              ///< H; a multiple of num_attention_heads
  std::int64_t num_hidden_layers = 12;         ///< transformer blocks
  std::int64_t num_attention_heads = 12;       ///< heads per block
  std::int64_t intermediate_size = 3072;       ///< FFN inner size
  std::string hidden_act = "gelu";             ///< only "gelu" (exact erf form) is supported
  double hidden_dropout_prob = 0.1;            ///< residual-branch dropout (SPACE `dropout`)
  double attention_probs_dropout_prob = 0.1;   ///< dropout on attention probabilities
  std::int64_t max_position_embeddings = 512;  ///< rows of the position table
  std::int64_t type_vocab_size = 2;            ///< rows of the role table (user = 1, system = 0)
  double initializer_range = 0.02;             ///< std of the N(0, s) weight initialisation
  double layer_norm_eps = 1e-12;               ///< every LayerNorm's epsilon
  std::int64_t pad_token_id = 0;               ///< id used for padding (HF key)
  std::int64_t cls_token_id = 101;             ///< ours: row of the word table used as the
                                    ///< prepended [CLS] head vector (docs/method.md §1.2)
  std::int64_t max_turns = 16;  ///< ours: turn table has max_turns + 1 rows, id 0 = pad
  /// Ours: SPACE `embed_dropout` (before the embedding LayerNorm). Absent in a JSON file ->
  /// the file's hidden_dropout_prob (SPACE-2's scripts set all dropouts equal).
  double embedding_dropout_prob = 0.1;
  /// Ours: SPACE `ff_dropout`, the extra dropout after the FFN's GELU (docs/method.md §1.1). Absent
  /// in a JSON file -> the file's hidden_dropout_prob.
  double ffn_dropout_prob = 0.1;
  /// Ours: views with a projection sub-head, a non-empty subset of sts::view_name_list() in
  /// any order, no repeats. Defines K and the order of the projection output's view axis.
  std::vector<std::string> projection_views = sts::view_name_list();
  /// Ours: P, the size of each view's sub-vector. Absent in a JSON file -> hidden_size.
  std::int64_t projection_dim = 768;
  std::int64_t num_labels = 0;  ///< intent classifier outputs; 0 = no intent head
  std::int64_t num_tags = 0;    ///< token tagger outputs; 0 = no tagger head

  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }

  /// The first broken range or cross-field rule, or nullopt: first the rows of
  /// encoder_settings() in order (sizes within their ranges, e.g. hidden_size in [1, 65536],
  /// probabilities in [0, 1), eps and initializer_range > 0, type_vocab_size >= 2 for roles 0
  /// and 1), then the rules across keys: hidden_size divisible by num_attention_heads, token
  /// ids inside the word table, views known and distinct. Keys and messages name the fields as
  /// `prefix` + name ("model." in the training YAML). With `vocab_from_tokenizer`, vocab_size 0
  /// is allowed (the tokenizer decides it) and the token ids are not checked (they come from
  /// the tokenizer too).
  std::optional<EncoderConfigProblem> first_problem(const std::string& prefix = "",
                                                    bool vocab_from_tokenizer = false) const;

  /// first_problem() as an exception.
  /// @throws std::invalid_argument naming the key, e.g. "config: hidden_size: ...".
  void validate() const;
};

/// The encoder's settings, one row per config.json key in the order of the struct (key, help,
/// range): the one table behind config.json, first_problem(), the training YAML's `model:`
/// section (trainer/config.cpp picks its rows from it) and `dialtree print-config
/// --settings-table model`. Its first rows are HF BertConfig's keys (hf_bert_config_keys()).
const std::vector<settings::Setting<EncoderConfig>>& encoder_settings();

/// Every config.json key (encoder_settings()' names), in the order of the struct; the first ones
/// are those of HF's BertConfig with the same meaning (hf_bert_config_keys()).
const std::vector<std::string>& encoder_config_keys();

/// The config.json keys shared with HF's BertConfig, same name and meaning (vocab_size ...
/// pad_token_id): what import-hf reads and export-hf writes (docs/hf-interop.md).
const std::vector<std::string>& hf_bert_config_keys();

/// True for a tensor of the task heads, `intent_classifier.*` (num_labels > 0) and
/// `token_classifier.*` (num_tags > 0): the tensors that pretraining leaves out, fine-tuning
/// initialises anew and HF BERT has no place for (docs/training.md "Model bundle").
bool is_task_head_tensor(const std::string& name);

/// JSON form of `config` (all keys, in the order of the struct).
nlohmann::ordered_json encoder_config_to_json(const EncoderConfig& config);

/// Parses a config.json object. Every key is optional (defaults above), but an unknown key is
/// an error that names it and the closest valid key, and a value of the wrong JSON type (e.g.
/// a string or 3.5 for an integer) is an error naming the key, the expected and the found type.
/// The result is validate()d.
/// @throws SchemaError (wrong type, unknown key) or DataError (bad value), naming `file`.
EncoderConfig encoder_config_from_json(const nlohmann::json& j, const std::string& file);

/// Reads `<dir>/config.json`. @throws DataError naming the file (missing, bad JSON, bad values).
EncoderConfig read_encoder_config(const std::string& dir);

/// Writes `<dir>/config.json` atomically (pretty-printed). The folder must exist.
/// @throws std::invalid_argument if `config` is invalid; std::runtime_error on I/O failure.
void write_encoder_config(const std::string& dir, const EncoderConfig& config);

}  // namespace dialtree::model
