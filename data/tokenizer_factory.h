// The tokenizer settings file `tokenizer.json` of a model bundle, and loading a tokenizer from
// it (docs/failure-cases.md C17): casing, normalisation and special ids travel with the model, and
// serving reads them from the bundle, never from defaults.
//
//   {"format": "dialtree-tokenizer/1", "type": "sentencepiece", "model_file": "spm.model",
//    "lower_case": false, "normalization": "nmt_nfkc",
//    "special_tokens": {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4,
//                       "sos_u": 5, "eos_u": 6, "sos_r": 7, "eos_r": 8}}
//
// A WordPiece bundle has "type": "wordpiece", "vocab_file": "vocab.txt",
// "normalization": "bert_basic", plus "unk_token" and "max_input_chars_per_word".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "data/tokenizer.h"
#include "data/wordpiece.h"

namespace dialtree::data {

/// Value of the "format" field.
inline constexpr const char* kTokenizerConfigFormat = "dialtree-tokenizer/1";
/// File name of the settings file inside a bundle folder.
inline constexpr const char* kTokenizerConfigFile = "tokenizer.json";
/// "normalization" of a WordPiece bundle: BERT's BasicTokenizer (lower-casing and accent
/// stripping only when lower_case is true).
inline constexpr const char* kWordPieceNormalization = "bert_basic";

/// The parsed contents of tokenizer.json.
struct TokenizerConfig {
  std::string type;                 ///< "sentencepiece" or "wordpiece"
  std::string model_file;           ///< sentencepiece: model path relative to the bundle folder
  std::string vocab_file;           ///< wordpiece: vocab.txt path relative to the bundle folder
  bool lower_case = false;          ///< whether the tokenizer lower-cases its input
  std::string normalization;        ///< SentencePiece rule name, or kWordPieceNormalization
  SpecialTokens special{};          ///< special ids
  std::string unk_token = "[UNK]";  ///< wordpiece only
  std::size_t max_input_chars_per_word = 100;  ///< wordpiece only
};

/// JSON form of `config` (the tokenizer.json object, fields in the documented order).
nlohmann::ordered_json tokenizer_config_to_json(const TokenizerConfig& config);
/// Parses the tokenizer.json object. Every field is required except the two wordpiece extras;
/// keys that are not fields of the given type are rejected; model_file / vocab_file must name a
/// file inside the bundle folder (relative, no ".." component).
/// @throws SchemaError / DataError naming `file` and the field (e.g. "special_tokens.cls").
TokenizerConfig tokenizer_config_from_json(const nlohmann::json& j, const std::string& file);

/// Reads `<dir>/tokenizer.json`. @throws DataError naming the file if it is missing or invalid.
TokenizerConfig read_tokenizer_config(const std::string& dir);
/// Writes `<dir>/tokenizer.json` atomically (the folder must exist).
/// @throws std::runtime_error on I/O failure.
void write_tokenizer_config(const std::string& dir, const TokenizerConfig& config);

/// Checks `config` against the loaded `tokenizer`: every special id is inside the vocabulary
/// and names the expected entry ("[CLS]" for cls; for WordPiece a role marker may also be an
/// "[unusedK]" alias, docs/method.md §1.4), the ids are distinct, and casing/normalisation agree
/// with the tokenizer. For WordPiece the vocabulary's own casing must agree with lower_case
/// (C17): lower_case=false with an uncased vocabulary (no token with an upper-case letter, as in
/// bert-base-uncased) is rejected, and so is lower_case=true with a cased one (more than 1% of
/// the non-special tokens with upper-case letters).
/// @throws DataError naming `config_file` and the field.
void check_tokenizer_config(const TokenizerConfig& config, const Tokenizer& tokenizer,
                            const std::string& config_file);

/// Builds the tokenizer described by `<dir>/tokenizer.json` (docs/failure-cases.md C17) and checks
/// it with check_tokenizer_config(). @throws DataError naming the file and field for a missing or
/// bad
///   settings file; TokenizerError if the model/vocab file itself cannot be loaded.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

/// Makes `dir` (created if missing) a WordPiece bundle: copies `vocab_source` to
/// `<dir>/vocab.txt` and writes tokenizer.json from `options` (casing and special ids), both
/// atomically. The vocabulary is loaded and checked first, so a bad source writes nothing.
/// @throws TokenizerError if the vocabulary cannot be loaded; DataError if the special ids do
///   not match it; std::runtime_error on I/O failure.
void save_wordpiece_tokenizer_config(const std::string& dir, const std::string& vocab_source,
                                     const WordPieceOptions& options = {});

}  // namespace dialtree::data
