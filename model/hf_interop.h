// Hugging Face BERT interoperability (docs/hf-interop.md): `dialtree import-hf` turns a
// transformers BERT folder (config.json, model.safetensors, vocab.txt) into a dialtree bundle, and
// `dialtree export` writes a bundle back as a folder transformers / sentence-transformers load.
//
// One rename table (rename_hf_tensor) covers every naming variant of docs/hf-interop.md "The rename
// table": the `bert.` prefix of BertForPreTraining (absent in BertModel / sentence-transformers
// saves), TF-era LayerNorm `gamma`/`beta`, the `embeddings.position_ids` buffer, the tied MLM
// decoder, the NSP head and the pooler.
//
// Decisions (justified in docs/hf-interop.md):
// * Import: SPACE-2-only tensors are created here. The turn table starts at zero, so the imported
//   model's plain encoder computes exactly BERT's forward (turn embeddings are additive, so they
//   still get gradients); the projection head and any task head get the HF BERT initialisation
//   (N(0, initializer_range) weights, zero biases) from a seeded generator. The pooler and the
//   NSP head are dropped (SPACE-2 uses neither, docs/method.md §1.3). A decoder weight must equal
//   the word embeddings (dialtree ties them); an untied one is an error.
// * Export: tensors HF BERT has no place for (turn table, projection head, task heads, and for
//   sentence-transformers also the MLM head) are never silently lost: they go to the side file
//   dialtree_extra.safetensors, with the full dialtree config, tokenizer settings and label maps
//   in dialtree_config.json. import-hf reads both back, so export -> import is exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/config.h"
#include "model/safetensors.h"

namespace dialtree::model {

/// Side file of an export: the tensors transformers has no place for, under dialtree names.
inline constexpr const char* kHfExtraWeightsFile = "dialtree_extra.safetensors";
/// Side file of an export: dialtree config, tokenizer settings, label maps, recipe.
inline constexpr const char* kHfSideConfigFile = "dialtree_config.json";
/// Value of "format" in kHfSideConfigFile.
inline constexpr const char* kHfSideConfigFormat = "dialtree-hf-side/1";

/// What import does with one tensor of an HF checkpoint.
enum class HfTensorAction {
  kLoad,         ///< load into the dialtree parameter `target`
  kIgnore,       ///< a buffer, not a parameter (embeddings.position_ids)
  kDrop,         ///< a head dialtree has no use for (NSP, pooler, HF classifier); see `reason`
  kTiedDecoder,  ///< cls.predictions.decoder.weight: must equal the word embeddings
  kTiedBias,     ///< cls.predictions.decoder.bias: must equal (or stands in for) the MLM bias
};

/// The rename table's verdict for one HF tensor name.
struct HfRename {
  HfTensorAction action = HfTensorAction::kLoad;
  std::string target;  ///< dialtree name (kLoad) or the tensor it is tied to (kTied*)
  std::string reason;  ///< why a tensor is ignored or dropped (empty for kLoad)
};

/// The rename table (docs/hf-interop.md "The rename table"). Steps, in order: a BertModel name
/// without the `bert.` prefix (`embeddings.`, `encoder.`, `pooler.`) gets it;
/// `LayerNorm.gamma`/`LayerNorm.beta` become `LayerNorm.weight`/`LayerNorm.bias`; then the special
/// names are classified (see HfTensorAction). Every other name is kLoad under the normalised name
/// (dialtree names such as `projection.dense.weight` pass through unchanged). Pure string function,
/// never throws.
HfRename rename_hf_tensor(const std::string& hf_name);

/// Tensors of an HF checkpoint renamed to dialtree names, with notes on what was not loaded.
struct HfTensorMapping {
  NamedTensors tensors;            ///< dialtree name -> tensor (as stored: any dtype)
  std::vector<std::string> notes;  ///< one line per ignored, dropped or tie-checked tensor
};

/// Applies rename_hf_tensor() to every tensor of `hf` and checks the ties.
/// @throws DataError naming `source` and the tensors when two names collapse onto one dialtree
///   name (e.g. both `LayerNorm.gamma` and `LayerNorm.weight`), when the decoder weight differs
///   from the word embeddings (or there are no word embeddings to compare with), or when the
///   decoder bias differs from `cls.predictions.bias`.
HfTensorMapping map_hf_tensors(const NamedTensors& hf, const std::string& source);

/// EncoderConfig from an HF BERT config.json object: the BERT keys are taken as they are (types
/// checked by encoder_config_from_json), dialtree's own keys get their defaults (both extra
/// dropouts = hidden_dropout_prob, projection_dim = hidden_size), cls_token_id is
/// `cls_token_id`. Keys transformers writes that do not shape a BERT encoder (architectures,
/// generation settings, label maps, ...) are ignored.
/// @throws SchemaError / DataError naming `file` and the key for an unknown key, a model_type
///   other than "bert" (HF's "convbert" is a different architecture), a position_embedding_type
///   other than "absolute", is_decoder / add_cross_attention true, or a bad value.
EncoderConfig encoder_config_from_hf(const nlohmann::json& j, const std::string& file,
                                     std::int64_t cls_token_id);

/// HF BERT config.json for `config` (keys of docs/hf-interop.md "The rename table", model_type
/// "bert", the given `architectures`, torch_dtype "float32"). Dialtree's own keys are not written
/// (they go to the side config).
nlohmann::ordered_json hf_config_from_encoder(const EncoderConfig& config,
                                              const std::vector<std::string>& architectures);

/// Options of import_hf().
struct HfImportOptions {
  /// Initialise (HF BERT init) BERT tensors the checkpoint lacks instead of failing; e.g. the
  /// MLM head of a BertModel / sentence-transformers save. Each one is reported.
  bool allow_missing = false;
  std::uint64_t seed = 0;  ///< seed of the generator for initialised tensors
};

/// What import_hf() did.
struct HfImportReport {
  std::size_t loaded = 0;                ///< dialtree parameters taken from the folder
  std::vector<std::string> initialised;  ///< parameters created here, "name: how"
  std::vector<std::string> notes;        ///< ignored / dropped / tie-checked tensors, side files
};

/// Reads the HF folder `from` (config.json, model.safetensors, vocab.txt, optional
/// tokenizer_config.json / special_tokens_map.json, optional export side files) and writes the
/// dialtree bundle `out` atomically (save_bundle) with a WordPiece tokenizer: casing from
/// `do_lower_case` (default true, as BertTokenizer), [PAD]/[UNK]/[CLS]/[SEP]/[MASK] by the
/// tokenizer's token strings, role markers on SPACE-2's [unused12]/[unused6]/[unused13]/
/// [unused7] (docs/method.md §1.4). With side files the saved dialtree config, tokenizer settings,
/// label maps, recipe and extra tensors are restored.
/// @throws DataError naming the file (and key or tensor): missing file, pytorch_model.bin or
///   sharded checkpoint only (convert to one model.safetensors), bad config, vocab without the
///   special tokens, unexpected tensors (all listed), missing tensors (all listed) unless
///   allow_missing, shape mismatches; std::invalid_argument if `out` is `from`.
HfImportReport import_hf(const std::string& from, const std::string& out,
                         const HfImportOptions& options = {});

/// Target layout of export_hf().
enum class HfExportFormat {
  kHf,                    ///< BertForPreTraining: `bert.` names + MLM head (tied decoder)
  kSentenceTransformers,  ///< BertModel names + sentence-transformers files, CLS pooling
};

/// What export_hf() did.
struct HfExportReport {
  std::vector<std::string> exported;  ///< tensor names in model.safetensors
  std::vector<std::string> side;      ///< dialtree names moved to dialtree_extra.safetensors
  std::vector<std::string> files;     ///< files written, relative to the output folder
};

/// Writes the bundle `bundle` as an HF folder `out` (atomically, as a whole): config.json,
/// model.safetensors, vocab.txt, tokenizer_config.json, special_tokens_map.json (role markers
/// as additional special tokens so BertTokenizer keeps them whole), the side files, and for
/// kSentenceTransformers modules.json, sentence_bert_config.json,
/// config_sentence_transformers.json and 1_Pooling/config.json. dialtree's own tokenizer.json is
/// not written there (the name is transformers' fast-tokenizer file); its contents go to the
/// side config. A SentencePiece bundle has no BERT tokenizer to export: it is refused unless
/// `weights_only`, which writes no tokenizer files.
/// @throws DataError for a bad bundle or a SentencePiece tokenizer without weights_only;
///   std::invalid_argument if `out` is `bundle`; std::runtime_error on I/O failure.
HfExportReport export_hf(const std::string& bundle, const std::string& out, HfExportFormat format,
                         bool weights_only = false);

}  // namespace dialtree::model
