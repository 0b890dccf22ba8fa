// Model bundles (docs/training.md "Model bundle"): a directory a model is saved to and served from.
//
//   config.json        EncoderConfig (model/config.h): HF BERT keys plus ours
//   model.safetensors  every parameter under its HF-style name (model/encoder.h), float32 as
//                      trained; __metadata__ {"format": "pt"}
//   tokenizer.json     + the SentencePiece model / WordPiece vocab it names (data/
//                      tokenizer_factory.h): serving loads the tokenizer from here (CASES C17)
//   dialtree.json      {"format": "dialtree-bundle/1",
//                       "label_maps": {"intent_classifier": [names by class id],
//                                      "token_classifier": [names by tag id]},
//                       "recipe": {free-form JSON, e.g. the resolved training config}}
//
// Head sizes live in config.json (num_labels, num_tags) because they shape the model; their
// names live in dialtree.json and must match those sizes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "data/tokenizer.h"
#include "model/encoder.h"
#include "model/safetensors.h"

namespace dialtree::model {

inline constexpr const char* kBundleFormat = "dialtree-bundle/1";
inline constexpr const char* kBundleInfoFile = "dialtree.json";
inline constexpr const char* kWeightsFile = "model.safetensors";

/// The non-tensor contents of dialtree.json.
struct BundleInfo {
  std::vector<std::string> intent_labels;            ///< class id -> name; size = config num_labels
  std::vector<std::string> tag_labels;               ///< tag id -> name; size = config num_tags
  nlohmann::json recipe = nlohmann::json::object();  ///< free-form (how the model was made)
};

/// A loaded bundle. The model is in eval() mode on the CPU.
struct LoadedBundle {
  SpaceModel model{nullptr};
  std::unique_ptr<data::Tokenizer> tokenizer;
  BundleInfo info;
};

/// The parameters of `model` (a SpaceModel, or any module such as the RTD heads) by HF-style
/// name, in registration order (handles, not copies).
NamedTensors model_tensors(const torch::nn::Module& model);

/// Copies `tensors` into the model's parameters (no autograd). Strict: every parameter must be
/// present exactly once with the same shape, no extra names; floating tensors of any float
/// dtype are converted to the parameter's dtype.
/// @throws DataError naming `source` and the tensor (unknown, missing, shape or dtype mismatch,
///   NaN or infinite values: docs/failure-cases.md B10).
void load_model_tensors(torch::nn::Module& model, const NamedTensors& tensors,
                        const std::string& source);

/// Writes a bundle to `dir` atomically: everything is written into a sibling temporary folder,
/// the tokenizer is re-loaded from that copy and checked against the config (cls id and
/// vocabulary size), then the folder is renamed onto `dir` (an existing `dir` is moved aside
/// first and removed afterwards). `tokenizer_dir` holds tokenizer.json and its model/vocab.
/// @throws std::invalid_argument if the label lists do not match num_labels / num_tags or
///   repeat a name; DataError for a bad tokenizer folder or a tokenizer that does not fit the
///   config; std::runtime_error / std::filesystem::filesystem_error on I/O failure. Nothing is
///   left at `dir` (nor changed there) when it throws.
void save_bundle(const std::string& dir, const SpaceModelImpl& model,
                 const std::string& tokenizer_dir, const BundleInfo& info = {});

/// Loads a bundle written by save_bundle(): config, tokenizer (from the bundle itself), label
/// maps, and the weights (strict, see load_model_tensors()).
/// @throws DataError naming the offending file (and key or tensor).
LoadedBundle load_bundle(const std::string& dir);

}  // namespace dialtree::model
