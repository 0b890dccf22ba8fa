#include "model/bundle.h"

#include <atomic>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "data/tokenizer_factory.h"
#include "model/config.h"

namespace dialtree::model {
namespace fs = std::filesystem;
namespace {

constexpr const char* kIntentHead = "intent_classifier";
constexpr const char* kTagHead = "token_classifier";

void check_labels(const std::vector<std::string>& labels, std::int64_t expected, const char* head) {
  if (static_cast<std::int64_t>(labels.size()) != expected) {
    throw std::invalid_argument(std::string("save_bundle: ") + head + ": " +
                                std::to_string(labels.size()) + " label names for " +
                                std::to_string(expected) + " outputs");
  }
  std::set<std::string> seen;
  for (const auto& l : labels) {
    if (!seen.insert(l).second) {
      throw std::invalid_argument(std::string("save_bundle: ") + head + ": label '" + l +
                                  "' repeated");
    }
  }
}

/// A model/vocab path from tokenizer.json: relative and inside the folder.
fs::path inner_path(const std::string& rel, const std::string& config_file, const char* field) {
  const fs::path p(rel);
  bool escapes = p.empty() || p.is_absolute();
  for (const auto& part : p) escapes = escapes || part == "..";
  if (escapes) {
    throw DataError(config_file, "", field,
                    "must be a path relative to the tokenizer folder, got \"" + rel + "\"");
  }
  return p;
}

/// Loads the tokenizer of `dir` and checks it fits `config` (the prepended [CLS] row and the
/// word table must be the tokenizer's).
std::unique_ptr<data::Tokenizer> load_checked_tokenizer(const std::string& dir,
                                                        const EncoderConfig& config,
                                                        const std::string& shown_dir) {
  std::unique_ptr<data::Tokenizer> tok = data::load_tokenizer(dir);
  const std::string file = (fs::path(shown_dir) / data::kTokenizerConfigFile).string();
  if (tok->special().cls != config.cls_token_id) {
    throw DataError(file, "", "special_tokens.cls",
                    "is " + std::to_string(tok->special().cls) +
                        " but config.json has cls_token_id " + std::to_string(config.cls_token_id));
  }
  if (tok->vocab_size() > config.vocab_size) {
    throw DataError(file, "", "",
                    "tokenizer has " + std::to_string(tok->vocab_size()) +
                        " entries but config.json has vocab_size " +
                        std::to_string(config.vocab_size));
  }
  return tok;
}

std::vector<std::string> read_labels(const nlohmann::json& maps, const char* head,
                                     std::int64_t expected, const JsonPlace& place) {
  std::vector<std::string> out;
  const std::string path = std::string("label_maps.") + head;
  if (const auto* v = json_find(maps, head, place, "label_maps")) {
    json_as_array(*v, place, path);
    for (std::size_t i = 0; i < v->size(); ++i) {
      out.push_back(json_as_string((*v)[i], place, json_index_path(path, i)));
    }
  }
  if (static_cast<std::int64_t>(out.size()) != expected) {
    throw DataError(place.file, "", path,
                    "has " + std::to_string(out.size()) + " names but config.json says " +
                        std::to_string(expected) + " outputs");
  }
  return out;
}

fs::path sibling_temp(const fs::path& dir, const char* tag) {
  static std::atomic<unsigned> counter{0};
  return dir.parent_path() / ("." + dir.filename().string() + "." + tag + "." +
                              std::to_string(::getpid()) + "." + std::to_string(counter++));
}

}  // namespace

NamedTensors model_tensors(const torch::nn::Module& model) {
  NamedTensors out;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

void load_model_tensors(torch::nn::Module& model, const NamedTensors& tensors,
                        const std::string& source) {
  std::unordered_map<std::string, torch::Tensor> params;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    params.emplace(item.key(), item.value());
  }
  std::set<std::string> loaded;
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    const std::string where = "tensor '" + name + "'";
    auto it = params.find(name);
    if (it == params.end()) {
      throw DataError(source, where, "",
                      "is not a parameter of this model (does config.json match the weights?)");
    }
    if (!loaded.insert(name).second) throw DataError(source, where, "", "given twice");
    torch::Tensor& p = it->second;
    if (t.sizes() != p.sizes()) {
      std::ostringstream msg;
      msg << "has shape " << t.sizes() << " but the model expects " << p.sizes();
      throw DataError(source, where, "", msg.str());
    }
    if (t.is_floating_point() != p.is_floating_point()) {
      throw DataError(source, where, "",
                      std::string("has dtype ") + c10::toString(t.scalar_type()) +
                          " but the model expects " + c10::toString(p.scalar_type()));
    }
    if (t.is_floating_point()) {
      const std::int64_t bad = torch::isfinite(t).logical_not().sum().item<std::int64_t>();
      if (bad > 0) {
        throw DataError(source, where, "",
                        "holds " + std::to_string(bad) + " NaN or infinite value(s) of " +
                            std::to_string(t.numel()) +
                            "; a model with them computes no meaningful output (did its "
                            "training diverge?)");
      }
    }
    p.copy_(t);
  }
  if (loaded.size() != params.size()) {
    std::string missing;
    int shown = 0;
    for (const auto& item : model.named_parameters(true)) {
      if (loaded.count(item.key())) continue;
      if (shown++ < 5) missing += (missing.empty() ? "" : ", ") + item.key();
    }
    throw DataError(source, "", "",
                    std::to_string(params.size() - loaded.size()) +
                        " model parameter(s) missing: " + missing + (shown > 5 ? ", ..." : ""));
  }
}

void save_bundle(const std::string& dir, const SpaceModelImpl& model,
                 const std::string& tokenizer_dir, const BundleInfo& info) {
  const EncoderConfig& config = model.config();
  check_labels(info.intent_labels, config.num_labels, kIntentHead);
  check_labels(info.tag_labels, config.num_tags, kTagHead);
  const data::TokenizerConfig tok_config = data::read_tokenizer_config(tokenizer_dir);
  const std::string tok_file = (fs::path(tokenizer_dir) / data::kTokenizerConfigFile).string();
  const fs::path tok_rel = tok_config.type == "sentencepiece"
                               ? inner_path(tok_config.model_file, tok_file, "model_file")
                               : inner_path(tok_config.vocab_file, tok_file, "vocab_file");

  const fs::path final_dir = resolve_output_folder(dir);  // as the kernel resolves it
  fs::create_directories(final_dir.parent_path());
  const fs::path tmp = sibling_temp(final_dir, "tmp");
  fs::create_directory(tmp);
  try {
    write_encoder_config(tmp.string(), config);
    save_safetensors((tmp / kWeightsFile).string(), model_tensors(model), {{"format", "pt"}});
    fs::copy_file(fs::path(tokenizer_dir) / data::kTokenizerConfigFile,
                  tmp / data::kTokenizerConfigFile);
    if (tok_rel.has_parent_path()) fs::create_directories(tmp / tok_rel.parent_path());
    fs::copy_file(fs::path(tokenizer_dir) / tok_rel, tmp / tok_rel);
    load_checked_tokenizer(tmp.string(), config, tokenizer_dir);

    nlohmann::ordered_json j;
    j["format"] = kBundleFormat;
    j["label_maps"] = {{kIntentHead, info.intent_labels}, {kTagHead, info.tag_labels}};
    j["recipe"] = info.recipe;
    write_file_atomic(tmp / kBundleInfoFile, j.dump(2) + "\n");

    if (fs::exists(final_dir)) {
      const fs::path old = sibling_temp(final_dir, "old");
      fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      std::error_code ec;
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, final_dir);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

LoadedBundle load_bundle(const std::string& dir) {
  LoadedBundle out;
  const EncoderConfig config = read_encoder_config(dir);

  const std::string info_file = (fs::path(dir) / kBundleInfoFile).string();
  const nlohmann::json j = json_parse_file(info_file);
  const JsonPlace place{info_file, ""};
  const std::string format = json_as_string(json_require(j, "format", place, ""), place, "format");
  if (format != kBundleFormat) {
    throw DataError(info_file, "", "format",
                    "expected \"" + std::string(kBundleFormat) + "\", got \"" + format + "\"");
  }
  for (const auto& item : j.items()) {
    if (item.key() != "format" && item.key() != "label_maps" && item.key() != "recipe") {
      throw SchemaError(info_file, "", item.key(), "unknown key");
    }
  }
  const nlohmann::json empty = nlohmann::json::object();
  const json* maps = json_find(j, "label_maps", place, "");
  if (maps) json_as_object(*maps, place, "label_maps");
  for (const auto& item : (maps ? *maps : empty).items()) {
    if (item.key() != kIntentHead && item.key() != kTagHead) {
      throw SchemaError(info_file, "", "label_maps." + item.key(), "unknown head");
    }
  }
  out.info.intent_labels = read_labels(maps ? *maps : empty, kIntentHead, config.num_labels, place);
  out.info.tag_labels = read_labels(maps ? *maps : empty, kTagHead, config.num_tags, place);
  if (const json* r = json_find(j, "recipe", place, "")) out.info.recipe = *r;

  out.tokenizer = load_checked_tokenizer(dir, config, dir);
  out.model = SpaceModel(config);
  const std::string weights = (fs::path(dir) / kWeightsFile).string();
  load_model_tensors(*out.model, load_safetensors(weights).tensors, weights);
  out.model->eval();
  return out;
}

}  // namespace dialtree::model
