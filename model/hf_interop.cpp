#include "model/hf_interop.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/join.h"
#include "common/json_util.h"
#include "common/shape_text.h"
#include "data/tokenizer_factory.h"
#include "data/wordpiece.h"
#include "model/bundle.h"
#include "model/encoder.h"

namespace dialtree::model {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWordEmbeddings = "bert.embeddings.word_embeddings.weight";
constexpr const char* kTurnEmbeddings = "bert.embeddings.turn_embeddings.weight";
constexpr const char* kMlmBias = "cls.predictions.bias";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// ------------------------------------------------------------------------------------------
// The rename table (docs/hf-interop.md "The rename table"), in the order the steps apply.

struct Replace {
  std::string_view from, to;
};
/// Step 1: BertModel / sentence-transformers names lack BertForPreTraining's `bert.` prefix.
constexpr Replace kPrefixes[] = {{"embeddings.", "bert.embeddings."},
                                 {"encoder.", "bert.encoder."},
                                 {"pooler.", "bert.pooler."}};
/// Step 2: TF-converted checkpoints name LayerNorm parameters gamma / beta.
constexpr Replace kSuffixes[] = {{"LayerNorm.gamma", "LayerNorm.weight"},
                                 {"LayerNorm.beta", "LayerNorm.bias"}};
/// Step 3: names that are not loaded as they are (`prefix`: the rule matches a name prefix).
struct Special {
  std::string_view name;
  bool prefix;
  HfTensorAction action;
  std::string_view detail;  ///< tie target, or the reason for ignoring / dropping
};
constexpr Special kSpecials[] = {
    {"bert.embeddings.position_ids", false, HfTensorAction::kIgnore,
     "buffer of position indices, not a parameter"},
    {"cls.predictions.decoder.weight", false, HfTensorAction::kTiedDecoder, kWordEmbeddings},
    {"cls.predictions.decoder.bias", false, HfTensorAction::kTiedBias, kMlmBias},
    {"cls.seq_relationship.", true, HfTensorAction::kDrop,
     "next-sentence-prediction head; SPACE-2 has none"},
    {"bert.pooler.", true, HfTensorAction::kDrop,
     "BERT pooler; SPACE-2 uses the bare [CLS] state (docs/method.md §1.3), and export writes "
     "none"},
    {"classifier.", true, HfTensorAction::kDrop,
     "task head of an HF fine-tune; dialtree's heads are intent_classifier / token_classifier"},
};

/// dialtree parameters HF BERT has no place for (initialised on import, side file on export).
bool is_space2_only(const std::string& name) {
  return name == kTurnEmbeddings || starts_with(name, "projection.") || is_task_head_tensor(name);
}

// ------------------------------------------------------------------------------------------
// config.json keys.

/// Keys transformers writes that do not shape a BERT encoder's weights or forward pass
/// (bookkeeping, generation settings, label maps of task heads, tokenizer hints).
constexpr std::string_view kIgnoredKeys[] = {"architectures",
                                             "transformers_version",
                                             "torch_dtype",
                                             "gradient_checkpointing",
                                             "use_cache",
                                             "classifier_dropout",
                                             "tie_word_embeddings",
                                             "id2label",
                                             "label2id",
                                             "num_labels",
                                             "finetuning_task",
                                             "problem_type",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "output_past",
                                             "torchscript",
                                             "use_bfloat16",
                                             "pruned_heads",
                                             "chunk_size_feed_forward",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "eos_token_ids",
                                             "sep_token_id",
                                             "decoder_start_token_id",
                                             "do_sample",
                                             "max_length",
                                             "min_length",
                                             "num_beams",
                                             "num_return_sequences",
                                             "length_penalty",
                                             "repetition_penalty",
                                             "temperature",
                                             "top_k",
                                             "top_p",
                                             "early_stopping",
                                             "no_repeat_ngram_size",
                                             "bad_words_ids",
                                             "prefix",
                                             "task_specific_params",
                                             "directionality",
                                             "pooler_fc_size",
                                             "pooler_num_attention_heads",
                                             "pooler_num_fc_layers",
                                             "pooler_size_per_head",
                                             "pooler_type",
                                             "tokenizer_class",
                                             "return_dict",
                                             "is_encoder_decoder",
                                             "tf_legacy_loss",
                                             "use_return_dict"};

/// Token string of a tokenizer_config.json / special_tokens_map.json entry: a string or an
/// AddedToken object {"content": ...}; nullptr (absent) or JSON null -> `fallback`.
std::string token_string(const json* v, const std::string& fallback, const JsonPlace& place,
                         const std::string& key) {
  if (!v || v->is_null()) return fallback;
  if (v->is_object()) return json_as_string(json_require(*v, "content", place, key), place, key);
  return json_as_string(*v, place, key);
}

/// The WordPiece options of an HF tokenizer folder (see import_hf()).
data::WordPieceOptions hf_wordpiece_options(const fs::path& dir, const std::string& vocab_file) {
  data::WordPieceOptions o;
  json tok_cfg = json::object(), specials = json::object();
  const fs::path tc = dir / "tokenizer_config.json", sm = dir / "special_tokens_map.json";
  if (fs::exists(tc)) tok_cfg = json_parse_file(tc.string());
  if (fs::exists(sm)) specials = json_parse_file(sm.string());
  const JsonPlace tc_place{tc.string(), ""}, sm_place{sm.string(), ""};
  json_as_object(tok_cfg, tc_place, "");
  json_as_object(specials, sm_place, "");
  if (const json* v = json_find(tok_cfg, "do_lower_case", tc_place, "")) {
    o.lower_case = json_as_bool(*v, tc_place, "do_lower_case");
  }
  // special_tokens_map.json wins over tokenizer_config.json, as in transformers.
  auto name = [&](const char* key, const char* fallback) {
    const std::string from_tc =
        token_string(json_find(tok_cfg, key, tc_place, ""), fallback, tc_place, key);
    return token_string(json_find(specials, key, sm_place, ""), from_tc, sm_place, key);
  };
  o.unk_token = name("unk_token", "[UNK]");
  const data::WordPieceTokenizer vocab(vocab_file, o);
  auto id_of = [&](const std::string& token, const char* role) {
    const std::int32_t id = vocab.token_to_id(token);
    if (id < 0) {
      throw DataError(vocab_file, "", "",
                      "has no entry " + quote_for_message(token) + " for the " + role +
                          " token (a BERT vocab.txt is expected)");
    }
    return id;
  };
  o.special.pad = id_of(name("pad_token", "[PAD]"), "pad");
  o.special.unk = id_of(o.unk_token, "unk");
  o.special.cls = id_of(name("cls_token", "[CLS]"), "cls");
  o.special.sep = id_of(name("sep_token", "[SEP]"), "sep");
  o.special.mask = id_of(name("mask_token", "[MASK]"), "mask");
  // SPACE-2's role markers live on fixed [unusedK] slots (docs/method.md §1.4).
  o.special.sos_u = id_of("[unused12]", "<sos_u> role marker");
  o.special.eos_u = id_of("[unused6]", "<eos_u> role marker");
  o.special.sos_r = id_of("[unused13]", "<sos_r> role marker");
  o.special.eos_r = id_of("[unused7]", "<eos_r> role marker");
  return o;
}

/// Refuses an output folder that is, or contains, the input folder (it is replaced whole).
void check_out_not_input(const std::string& in, const std::string& out, const char* in_flag) {
  std::error_code e1, e2;
  const fs::path i = fs::weakly_canonical(fs::absolute(in), e1);
  fs::path o = fs::weakly_canonical(fs::absolute(out), e2);
  if (o.filename().empty()) o = o.parent_path();
  if (e1 || e2) return;
  const auto [oi, ii] = std::mismatch(o.begin(), o.end(), i.begin(), i.end());
  if (oi == o.end()) {
    throw std::invalid_argument("--out '" + out + "' is or contains " + in_flag + " '" + in +
                                "'; the output folder is replaced as a whole");
  }
}

/// A sibling temporary folder of `out`, removed on scope exit.
class TempSibling {
 public:
  explicit TempSibling(const std::string& out, const char* tag) {
    const fs::path o = resolve_output_folder(out);  // where save_bundle() will write
    fs::create_directories(o.parent_path());
    path_ = o.parent_path() /
            ("." + o.filename().string() + "." + tag + "." + std::to_string(::getpid()));
    fs::remove_all(path_);
  }
  ~TempSibling() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempSibling(const TempSibling&) = delete;
  TempSibling& operator=(const TempSibling&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// The parsed side config of an earlier export.
struct SideConfig {
  EncoderConfig config;
  data::TokenizerConfig tokenizer;
  bool has_tokenizer = false;
  BundleInfo info;
};

SideConfig read_side_config(const std::string& file) {
  const json j = json_parse_file(file);
  const JsonPlace place{file, ""};
  const std::string format = json_as_string(json_require(j, "format", place, ""), place, "format");
  if (format != kHfSideConfigFormat) {
    throw DataError(
        file, "", "format",
        "expected \"" + std::string(kHfSideConfigFormat) + "\", got \"" + format + "\"");
  }
  SideConfig s;
  s.config = encoder_config_from_json(json_require(j, "encoder_config", place, ""), file);
  if (const json* t = json_find(j, "tokenizer", place, "")) {
    s.tokenizer = data::tokenizer_config_from_json(*t, file);
    s.has_tokenizer = true;
  }
  const json& maps = json_as_object(json_require(j, "label_maps", place, ""), place, "label_maps");
  const std::pair<const char*, std::vector<std::string>*> heads[] = {
      {"intent_classifier", &s.info.intent_labels}, {"token_classifier", &s.info.tag_labels}};
  for (const auto& [key, target] : heads) {
    const std::string path = std::string("label_maps.") + key;
    const json& arr = json_as_array(json_require(maps, key, place, "label_maps"), place, path);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      target->push_back(json_as_string(arr[i], place, json_index_path(path, i)));
    }
  }
  if (const json* r = json_find(j, "recipe", place, "")) s.info.recipe = *r;
  return s;
}

}  // namespace

HfRename rename_hf_tensor(const std::string& hf_name) {
  std::string name = hf_name;
  for (const Replace& r : kPrefixes) {
    if (starts_with(name, r.from)) {
      name = std::string(r.to) + name.substr(r.from.size());
      break;
    }
  }
  for (const Replace& r : kSuffixes) {
    if (ends_with(name, r.from)) {
      name = name.substr(0, name.size() - r.from.size()) + std::string(r.to);
      break;
    }
  }
  for (const Special& s : kSpecials) {
    if (s.prefix ? starts_with(name, s.name) : name == s.name) {
      const bool tied =
          s.action == HfTensorAction::kTiedDecoder || s.action == HfTensorAction::kTiedBias;
      return {s.action, tied ? std::string(s.detail) : name, tied ? "" : std::string(s.detail)};
    }
  }
  return {HfTensorAction::kLoad, name, ""};
}

HfTensorMapping map_hf_tensors(const NamedTensors& hf, const std::string& source) {
  HfTensorMapping out;
  std::map<std::string, std::string> origin;  // dialtree name -> HF name
  const torch::Tensor* decoder = nullptr;
  const torch::Tensor* decoder_bias = nullptr;
  std::string decoder_name, decoder_bias_name;
  for (const auto& [name, t] : hf) {
    const HfRename r = rename_hf_tensor(name);
    switch (r.action) {
      case HfTensorAction::kLoad: {
        const auto [it, fresh] = origin.emplace(r.target, name);
        if (!fresh) {
          throw DataError(source, "tensor '" + name + "'", "",
                          "and tensor '" + it->second + "' both map to '" + r.target +
                              "' (two naming variants of one parameter)");
        }
        out.tensors.emplace_back(r.target, t);
        break;
      }
      case HfTensorAction::kIgnore:
        out.notes.push_back(name + ": ignored (" + r.reason + ")");
        break;
      case HfTensorAction::kDrop:
        out.notes.push_back(name + " " + shape_text(t) + ": dropped (" + r.reason + ")");
        break;
      case HfTensorAction::kTiedDecoder:
        decoder = &t, decoder_name = name;
        break;
      case HfTensorAction::kTiedBias:
        decoder_bias = &t, decoder_bias_name = name;
        break;
    }
  }
  auto loaded = [&](const std::string& target) -> const torch::Tensor* {
    for (const auto& [n, t] : out.tensors) {
      if (n == target) return &t;
    }
    return nullptr;
  };
  auto check_equal = [&](const torch::Tensor& a, const std::string& a_name, const torch::Tensor& b,
                         const std::string& b_name) {
    if (a.sizes() != b.sizes()) {
      throw DataError(source, "tensor '" + a_name + "'", "",
                      "has shape " + shape_text(a) + " but '" + b_name + "' has " + shape_text(b) +
                          "; dialtree ties them, so they must be equal");
    }
    const torch::Tensor fa = a.to(torch::kFloat64), fb = b.to(torch::kFloat64);
    if (!torch::equal(fa, fb)) {
      const double diff = (fa - fb).abs().max().item<double>();
      throw DataError(source, "tensor '" + a_name + "'", "",
                      "differs from '" + b_name + "' (max abs difference " + std::to_string(diff) +
                          "); dialtree ties them, an untied checkpoint cannot be imported");
    }
  };
  if (decoder) {
    const torch::Tensor* word = loaded(kWordEmbeddings);
    if (!word) {
      throw DataError(source, "tensor '" + decoder_name + "'", "",
                      "is present but the word embeddings it is tied to are not");
    }
    check_equal(*decoder, decoder_name, *word, origin[kWordEmbeddings]);
    out.notes.push_back(decoder_name + ": equal to the word embeddings (tied), not stored twice");
  }
  if (decoder_bias) {
    if (const torch::Tensor* bias = loaded(kMlmBias)) {
      check_equal(*decoder_bias, decoder_bias_name, *bias, origin[kMlmBias]);
      out.notes.push_back(decoder_bias_name + ": equal to " + kMlmBias + " (tied)");
    } else {
      out.tensors.emplace_back(kMlmBias, *decoder_bias);
      out.notes.push_back(decoder_bias_name + ": loaded as " + kMlmBias + " (tied)");
    }
  }
  return out;
}

EncoderConfig encoder_config_from_hf(const json& j, const std::string& file,
                                     std::int64_t cls_token_id) {
  const JsonPlace place{file, ""};
  json_as_object(j, place, "");
  json picked = json::object();
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const json& value = item.value();
    const auto is = [&](std::string_view k) { return key == k; };
    if (std::any_of(hf_bert_config_keys().begin(), hf_bert_config_keys().end(), is)) {
      picked[key] = value;
    } else if (key == "model_type") {
      if (json_as_string(value, place, key) != "bert") {
        throw DataError(file, "", key,
                        "is \"" + value.get<std::string>() +
                            "\"; only BERT checkpoints (\"bert\") can be imported (HF's "
                            "\"convbert\" is a different architecture from DialoGLUE's ConvBERT, "
                            "which is a BERT)");
      }
    } else if (key == "position_embedding_type") {
      if (json_as_string(value, place, key) != "absolute") {
        throw DataError(file, "", key, "must be \"absolute\" (dialtree has no relative positions)");
      }
    } else if (key == "is_decoder" || key == "add_cross_attention") {
      if (json_as_bool(value, place, key)) {
        throw DataError(file, "", key, "is true; only a bidirectional BERT encoder is imported");
      }
    } else if (!starts_with(key, "_") &&
               std::none_of(std::begin(kIgnoredKeys), std::end(kIgnoredKeys), is)) {
      throw SchemaError(file, "", key,
                        "unknown HF config key: it is neither a BERT architecture key nor one "
                        "dialtree knows to ignore; remove it if it does not change the model");
    }
  }
  picked["cls_token_id"] = cls_token_id;
  return encoder_config_from_json(picked, file);
}

nlohmann::ordered_json hf_config_from_encoder(const EncoderConfig& c,
                                              const std::vector<std::string>& architectures) {
  const nlohmann::ordered_json all = encoder_config_to_json(c);
  nlohmann::ordered_json out;
  out["architectures"] = architectures;
  out["model_type"] = "bert";
  for (const std::string& key : hf_bert_config_keys()) out[key] = all.at(key);
  out["position_embedding_type"] = "absolute";
  out["torch_dtype"] = "float32";
  return out;
}

namespace {

/// Checks that `dir` (the folder `from`) is an HF BERT folder import_hf can read, with
/// `weights` and `vocab_file` in it, and that `out` is not inside it. Throws DataError naming
/// the first problem: not a folder, `out` inside the input, a missing model.safetensors (saying
/// which other checkpoint format is there, if one is), a missing vocab.txt.
void check_hf_import_folder(const fs::path& dir, const std::string& from, const std::string& out,
                            const std::string& weights, const std::string& vocab_file) {
  if (!fs::is_directory(dir)) {
    throw DataError(from, "", "",
                    "is not a folder (expected config.json, model.safetensors, "
                    "vocab.txt)");
  }
  check_out_not_input(from, out, "--from");
  if (!fs::exists(weights)) {
    const std::pair<const char*, const char*> others[] = {
        {"pytorch_model.bin",
         "is a PyTorch pickle, which dialtree does not read (unpickling can run code); convert "
         "it to model.safetensors first (docs/hf-interop.md)"},
        {"model.safetensors.index.json",
         "names a sharded checkpoint; merge the shards into one model.safetensors"},
        {"tf_model.h5", "is a TensorFlow checkpoint; convert it to model.safetensors first"}};
    for (const auto& [name, why] : others) {
      if (fs::exists(dir / name)) throw DataError((dir / name).string(), "", "", why);
    }
    throw DataError(weights, "", "",
                    "missing (an HF BERT folder has config.json, "
                    "model.safetensors and vocab.txt)");
  }
  if (!fs::exists(vocab_file)) {
    throw DataError(vocab_file, "", "", "missing: only WordPiece (BERT) tokenizers are imported");
  }
}

/// The dialtree config and tokenizer settings of an earlier export's side config `side_file`;
/// sets `wp` and notes the restore in `report`. Throws DataError when the side config has no
/// WordPiece tokenizer or config.json (`hf_config`, read from `config_file`) disagrees with it.
SideConfig restore_hf_side_config(const fs::path& side_file, const json& hf_config,
                                  const std::string& config_file, data::WordPieceOptions& wp,
                                  HfImportReport& report) {
  SideConfig side = read_side_config(side_file.string());
  if (!side.has_tokenizer || side.tokenizer.type != "wordpiece") {
    throw DataError(side_file.string(), "", "tokenizer", "is not a WordPiece tokenizer");
  }
  wp.lower_case = side.tokenizer.lower_case;
  wp.unk_token = side.tokenizer.unk_token;
  wp.max_input_chars_per_word = side.tokenizer.max_input_chars_per_word;
  wp.special = side.tokenizer.special;
  // config.json must still say what the side config says (nobody edited one of them).
  const nlohmann::ordered_json expect = encoder_config_to_json(side.config);
  const EncoderConfig from_hf =
      encoder_config_from_hf(hf_config, config_file, side.config.cls_token_id);
  const nlohmann::ordered_json got = encoder_config_to_json(from_hf);
  for (const std::string& key : hf_bert_config_keys()) {
    if (expect.at(std::string(key)) != got.at(std::string(key))) {
      throw DataError(config_file, "", std::string(key),
                      "is " + got.at(std::string(key)).dump() + " but " + side_file.string() +
                          " says " + expect.at(std::string(key)).dump());
    }
  }
  report.notes.push_back(side_file.string() +
                         ": dialtree config, tokenizer settings and "
                         "label maps restored");
  return side;
}

/// The dialtree config of a plain HF folder `dir`, from its tokenizer files and config.json
/// (`hf_config`, read from `config_file`), with a recipe saying where it came from; sets `wp`.
/// Throws DataError (or SchemaError) on tokenizer or config values dialtree cannot take.
SideConfig hf_folder_side_config(const fs::path& dir, const std::string& vocab_file,
                                 const json& hf_config, const std::string& config_file,
                                 data::WordPieceOptions& wp) {
  SideConfig side;
  wp = hf_wordpiece_options(dir, vocab_file);
  side.config = encoder_config_from_hf(hf_config, config_file, wp.special.cls);
  json recipe = json::object();
  recipe["imported_from"] = fs::absolute(dir).lexically_normal().string();
  if (const json* a = json_find(hf_config, "architectures", {config_file, ""}, "")) {
    recipe["hf_architectures"] = *a;
  }
  side.info.recipe = recipe;
  return side;
}

/// Tensors to import, by dialtree name, each with the file it comes from: the checkpoint
/// `weights` renamed, plus the dialtree-only tensors of an export's extra file in `dir`. Adds
/// notes to `report`. Throws DataError on a checkpoint that cannot be read or mapped, or a
/// tensor that is in both files.
std::map<std::string, std::pair<torch::Tensor, std::string>> hf_import_tensors(
    const fs::path& dir, const std::string& weights, HfImportReport& report) {
  HfTensorMapping mapped = map_hf_tensors(load_safetensors(weights).tensors, weights);
  report.notes.insert(report.notes.end(), mapped.notes.begin(), mapped.notes.end());
  std::map<std::string, std::pair<torch::Tensor, std::string>> given;  // name -> (tensor, file)
  for (auto& [name, t] : mapped.tensors) given.emplace(name, std::make_pair(t, weights));
  const fs::path extra = dir / kHfExtraWeightsFile;
  if (fs::exists(extra)) {
    const SafetensorsContents extras = load_safetensors(extra.string());
    for (const auto& [name, t] : extras.tensors) {
      if (!given.emplace(name, std::make_pair(t, extra.string())).second) {
        throw DataError(extra.string(), "tensor '" + name + "'", "",
                        "is also in " + weights + "; a tensor must come from one file");
      }
    }
    report.notes.push_back(extra.string() + ": dialtree-only tensors restored");
  }
  return given;
}

/// Every parameter of `params` (a fresh model's, in order) with its imported value from
/// `given`, or its initial value where the checkpoint has none and that is allowed; counts and
/// notes them in `report`. Throws DataError (naming `weights`) on tensors that are no
/// parameter, or on missing ones unless options.allow_missing.
NamedTensors complete_hf_import(
    const NamedTensors& params,
    const std::map<std::string, std::pair<torch::Tensor, std::string>>& given,
    const std::string& weights, const HfImportOptions& options, HfImportReport& report) {
  std::set<std::string> param_names;
  for (const auto& [name, p] : params) param_names.insert(name);
  std::vector<std::string> unexpected, missing;
  for (const auto& [name, v] : given) {
    if (!param_names.count(name)) unexpected.push_back(name + " (from " + v.second + ")");
  }
  if (!unexpected.empty()) {
    throw DataError(weights, "", "",
                    std::to_string(unexpected.size()) +
                        " unexpected tensor(s), not BERT and not dialtree: " + join(unexpected));
  }
  NamedTensors full;
  for (const auto& [name, p] : params) {
    const auto it = given.find(name);
    if (it != given.end()) {
      full.emplace_back(name, it->second.first);
      ++report.loaded;
    } else if (name == kTurnEmbeddings) {
      full.emplace_back(name, torch::zeros_like(p));
      report.initialised.push_back(name +
                                   ": zeros (new SPACE-2 turn table; the plain encoder "
                                   "equals BERT until it is trained)");
    } else if (is_space2_only(name)) {
      full.emplace_back(name, p);
      report.initialised.push_back(name + ": HF BERT init (new SPACE-2 head)");
    } else if (options.allow_missing) {
      full.emplace_back(name, p);
      report.initialised.push_back(name + ": HF BERT init (missing, --allow-missing)");
    } else {
      missing.push_back(name);
    }
  }
  if (!missing.empty()) {
    throw DataError(weights, "", "",
                    std::to_string(missing.size()) + " tensor(s) missing: " + join(missing, ", ", 20) +
                        " (pass --allow-missing to initialise them, e.g. the MLM head of a "
                        "BertModel save)");
  }
  return full;
}

}  // namespace

HfImportReport import_hf(const std::string& from, const std::string& out,
                         const HfImportOptions& options) {
  const fs::path dir(from);
  const std::string weights = (dir / kWeightsFile).string();
  const std::string config_file = (dir / kEncoderConfigFile).string();
  const std::string vocab_file = (dir / "vocab.txt").string();
  check_hf_import_folder(dir, from, out, weights, vocab_file);
  const json hf_config = json_parse_file(config_file);

  HfImportReport report;
  // Tokenizer and config: from the side config of an earlier export, else from the HF files.
  const fs::path side_file = dir / kHfSideConfigFile;
  data::WordPieceOptions wp;
  SideConfig side = fs::exists(side_file)
                        ? restore_hf_side_config(side_file, hf_config, config_file, wp, report)
                        : hf_folder_side_config(dir, vocab_file, hf_config, config_file, wp);

  // Weights: the checkpoint (renamed) plus an export's side tensors.
  const std::map<std::string, std::pair<torch::Tensor, std::string>> given =
      hf_import_tensors(dir, weights, report);

  // The tokenizer must fit the config; errors name the HF folder's files, not our temp copy.
  const std::string tok_source =
      fs::exists(side_file) ? side_file.string() : (dir / "tokenizer_config.json").string();
  const data::WordPieceTokenizer vocab(vocab_file, wp);
  if (vocab.vocab_size() > side.config.vocab_size) {
    throw DataError(vocab_file, "", "",
                    "has " + std::to_string(vocab.vocab_size()) + " entries but " + config_file +
                        " has vocab_size " + std::to_string(side.config.vocab_size));
  }

  torch::manual_seed(options.seed);
  SpaceModel model(side.config);
  const NamedTensors full =
      complete_hf_import(model_tensors(*model), given, weights, options, report);
  load_model_tensors(*model, full, weights);

  TempSibling tok(out, "tok");
  try {
    data::save_wordpiece_tokenizer_config(tok.path().string(), vocab_file, wp);
  } catch (const DataError& e) {
    throw DataError(tok_source, e.where(), e.field(), e.detail());
  }
  save_bundle(out, *model, tok.path().string(), side.info);
  return report;
}

HfExportReport export_hf(const std::string& bundle, const std::string& out, HfExportFormat format,
                         bool weights_only) {
  check_out_not_input(bundle, out, "--model");
  const LoadedBundle b = load_bundle(bundle);
  const data::TokenizerConfig tc = data::read_tokenizer_config(bundle);
  const bool wordpiece = tc.type == "wordpiece";
  if (!wordpiece && !weights_only) {
    throw DataError((fs::path(bundle) / data::kTokenizerConfigFile).string(), "", "type",
                    "is \"" + tc.type +
                        "\": transformers' BertTokenizer reads only a WordPiece vocab.txt, so "
                        "this tokenizer cannot be exported; pass --weights-only to export "
                        "config.json and the weights without tokenizer files");
  }
  const bool st = format == HfExportFormat::kSentenceTransformers;
  const EncoderConfig& config = b.model->config();

  HfExportReport report;
  NamedTensors main, side;
  for (const auto& [name, t] : model_tensors(*b.model)) {
    if (is_space2_only(name) || (st && starts_with(name, "cls."))) {
      side.emplace_back(name, t);
      report.side.push_back(name);
    } else {
      const std::string hf_name = st && starts_with(name, "bert.") ? name.substr(5) : name;
      main.emplace_back(hf_name, t);
      report.exported.push_back(hf_name);
    }
  }

  AtomicDirectory d{fs::path(out)};
  auto write_json = [&](const std::string& name, const nlohmann::ordered_json& j) {
    write_file_atomic(d.file(name), j.dump(2) + "\n");
    report.files.push_back(name);
  };
  save_safetensors(d.file(kWeightsFile).string(), main, {{"format", "pt"}});
  report.files.push_back(kWeightsFile);
  save_safetensors(d.file(kHfExtraWeightsFile).string(), side, {{"format", "pt"}});
  report.files.push_back(kHfExtraWeightsFile);
  write_json(kEncoderConfigFile,
             hf_config_from_encoder(config, {st ? "BertModel" : "BertForPreTraining"}));

  nlohmann::ordered_json s;
  s["format"] = kHfSideConfigFormat;
  s["note"] = std::string("written by dialtree export: ") + kHfExtraWeightsFile +
              " holds the tensors transformers has no place for; dialtree import-hf restores "
              "them and this file's settings";
  s["encoder_config"] = encoder_config_to_json(config);
  s["tokenizer"] = data::tokenizer_config_to_json(tc);
  s["label_maps"] = {{"intent_classifier", b.info.intent_labels},
                     {"token_classifier", b.info.tag_labels}};
  s["recipe"] = b.info.recipe;
  s["side_tensors"] = report.side;
  write_json(kHfSideConfigFile, s);

  if (wordpiece) {
    write_file_atomic(d.file("vocab.txt"),
                      read_file_bytes((fs::path(bundle) / tc.vocab_file).string()));
    report.files.push_back("vocab.txt");
    const data::Tokenizer& tok = *b.tokenizer;
    const data::SpecialTokens& sp = tok.special();
    nlohmann::ordered_json map;
    map["unk_token"] = tok.id_to_token(sp.unk);
    map["sep_token"] = tok.id_to_token(sp.sep);
    map["pad_token"] = tok.id_to_token(sp.pad);
    map["cls_token"] = tok.id_to_token(sp.cls);
    map["mask_token"] = tok.id_to_token(sp.mask);
    // Role markers as additional special tokens, so BertTokenizer never splits "[unused12]".
    map["additional_special_tokens"] = {tok.id_to_token(sp.sos_u), tok.id_to_token(sp.eos_u),
                                        tok.id_to_token(sp.sos_r), tok.id_to_token(sp.eos_r)};
    nlohmann::ordered_json tcj;
    tcj["tokenizer_class"] = "BertTokenizer";
    tcj["do_lower_case"] = tc.lower_case;
    tcj["do_basic_tokenize"] = true;
    tcj["tokenize_chinese_chars"] = true;
    tcj["strip_accents"] = nullptr;  // BERT: follow do_lower_case
    tcj["model_max_length"] = config.max_position_embeddings;
    for (const auto& [k, v] : map.items()) tcj[k] = v;
    write_json("tokenizer_config.json", tcj);
    write_json("special_tokens_map.json", map);
  }

  if (st) {
    nlohmann::ordered_json modules = nlohmann::ordered_json::array();
    modules.push_back(nlohmann::ordered_json{{"idx", 0},
                                             {"name", "0"},
                                             {"path", ""},
                                             {"type", "sentence_transformers.models.Transformer"}});
    modules.push_back(nlohmann::ordered_json{{"idx", 1},
                                             {"name", "1"},
                                             {"path", "1_Pooling"},
                                             {"type", "sentence_transformers.models.Pooling"}});
    write_json("modules.json", modules);
    // do_lower_case here is sentence-transformers' own pre-lower-casing; the tokenizer does it.
    write_json("sentence_bert_config.json",
               {{"max_seq_length", config.max_position_embeddings}, {"do_lower_case", false}});
    nlohmann::ordered_json stc;
    stc["__version__"] = {{"dialtree_export", kHfSideConfigFormat}};
    stc["prompts"] = nlohmann::ordered_json::object();
    stc["default_prompt_name"] = nullptr;
    stc["similarity_fn_name"] = "cosine";
    write_json("config_sentence_transformers.json", stc);
    // SPACE-2's dialog vector is the [CLS] state (docs/method.md §1.6): CLS pooling.
    nlohmann::ordered_json pool;
    pool["word_embedding_dimension"] = config.hidden_size;
    pool["pooling_mode_cls_token"] = true;
    pool["pooling_mode_mean_tokens"] = false;
    pool["pooling_mode_max_tokens"] = false;
    pool["pooling_mode_mean_sqrt_len_tokens"] = false;
    pool["pooling_mode_weightedmean_tokens"] = false;
    pool["pooling_mode_lasttoken"] = false;
    pool["include_prompt"] = true;
    fs::create_directory(d.temp_path() / "1_Pooling");
    write_file_atomic(d.temp_path() / "1_Pooling" / "config.json", pool.dump(2) + "\n");
    report.files.push_back("1_Pooling/config.json");
  }
  d.commit();
  return report;
}

}  // namespace dialtree::model
