#include "data/tokenizer_factory.h"

#include <array>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"
#include "data/sentencepiece_tokenizer.h"

namespace dialtree::data {

namespace {

namespace fs = std::filesystem;

struct SpecialField {
  const char* key;                  ///< key in "special_tokens"
  std::int32_t SpecialTokens::*id;  ///< member of SpecialTokens
  const char* piece;                ///< expected vocabulary entry (SentencePiece name)
  bool role_marker;                 ///< may be an [unusedK] alias in a WordPiece vocabulary
};

constexpr std::array<SpecialField, 9> kSpecialFields = {{
    {"pad", &SpecialTokens::pad, "[PAD]", false},
    {"unk", &SpecialTokens::unk, "[UNK]", false},
    {"cls", &SpecialTokens::cls, "[CLS]", false},
    {"sep", &SpecialTokens::sep, "[SEP]", false},
    {"mask", &SpecialTokens::mask, "[MASK]", false},
    {"sos_u", &SpecialTokens::sos_u, "<sos_u>", true},
    {"eos_u", &SpecialTokens::eos_u, "<eos_u>", true},
    {"sos_r", &SpecialTokens::sos_r, "<sos_r>", true},
    {"eos_r", &SpecialTokens::eos_r, "<eos_r>", true},
}};

/// True for BERT's reserved "[unusedK]" entries (docs/method.md §1.4 aliases role markers on them).
bool is_unused_alias(const std::string& token) {
  constexpr std::string_view prefix = "[unused";
  if (token.size() < prefix.size() + 2 || token.compare(0, prefix.size(), prefix) != 0 ||
      token.back() != ']') {
    return false;
  }
  for (std::size_t i = prefix.size(); i + 1 < token.size(); ++i) {
    if (token[i] < '0' || token[i] > '9') return false;
  }
  return true;
}

/// A bundle-relative file name from `field`. @throws DataError if empty, absolute, or with a
/// ".." component (a file outside the bundle folder).
std::string relative_file(const json& j, const char* field, const JsonPlace& place) {
  std::string name = json_as_string(json_require(j, field, place, ""), place, field);
  bool escapes = false;
  for (const fs::path& part : fs::path(name)) escapes = escapes || part == "..";
  if (name.empty() || fs::path(name).is_absolute() || escapes) {
    throw DataError(place.file, "", field,
                    "must be a file name inside the bundle folder (relative, no '..'), got " +
                        quote_for_message(name));
  }
  return name;
}

/// Whether `token` (valid UTF-8) has a letter with a case mapping: an upper-case one (whose
/// lower-case form differs; "ℝ" has none) or a lower-case one.
void letter_cases(const std::string& token, bool& upper, bool& lower) {
  upper = lower = false;
  for (char32_t c : utf8::decode(token)) {
    const auto cp = static_cast<utf8proc_int32_t>(c);
    const auto cat = utf8proc_category(cp);
    if ((cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) &&
        utf8proc_tolower(cp) != cp) {
      upper = true;
    } else if (cat == UTF8PROC_CATEGORY_LL && utf8proc_toupper(cp) != cp) {
      lower = true;
    }
  }
}

/// C17: a WordPiece vocabulary must match the casing its settings claim. An uncased vocabulary
/// (lower-case letters, no upper-case ones) with lower_case=false turns every capitalised word
/// into [UNK]; a cased one (over 1% of its ordinary tokens with upper-case letters) with
/// lower_case=true never reaches its capitalised pieces. Bracketed entries ([CLS], [unused0])
/// and the special ids do not count.
void check_wordpiece_casing(const TokenizerConfig& config, const Tokenizer& tokenizer,
                            const std::string& config_file) {
  std::set<std::int32_t> special;
  for (const SpecialField& f : kSpecialFields) special.insert(config.special.*f.id);
  std::size_t ordinary = 0, with_upper = 0, with_lower = 0;
  std::string example;
  for (std::int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (special.count(id)) continue;
    const std::string token = tokenizer.id_to_token(id);
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') continue;
    ++ordinary;
    bool upper = false, lower = false;
    letter_cases(token, upper, lower);
    if (upper && example.empty()) example = token;
    with_upper += upper;
    with_lower += lower;
  }
  const std::string vocab = quote_for_message(config.vocab_file);
  if (!config.lower_case && with_upper == 0 && with_lower > 0) {
    throw DataError(config_file, "", "lower_case",
                    "false, but the vocabulary " + vocab +
                        " has no token with an upper-case letter: it is an uncased vocabulary "
                        "(like bert-base-uncased), so every capitalised word (\"May\") would "
                        "become " +
                        config.unk_token + "; set \"lower_case\": true");
  }
  if (config.lower_case && with_upper * 100 > ordinary) {
    throw DataError(config_file, "", "lower_case",
                    "true, but " + std::to_string(with_upper) + " of the " +
                        std::to_string(ordinary) + " vocabulary tokens in " + vocab +
                        " have upper-case letters (e.g. " + quote_for_message(example) +
                        "): it is a cased vocabulary, whose capitalised pieces lower-cased input "
                        "never reaches; set \"lower_case\": false");
  }
}

std::string config_path(const std::string& dir) {
  return (fs::path(dir) / kTokenizerConfigFile).string();
}

}  // namespace

nlohmann::ordered_json tokenizer_config_to_json(const TokenizerConfig& config) {
  nlohmann::ordered_json j;
  j["format"] = kTokenizerConfigFormat;
  j["type"] = config.type;
  if (config.type == "wordpiece") {
    j["vocab_file"] = config.vocab_file;
  } else {
    j["model_file"] = config.model_file;
  }
  j["lower_case"] = config.lower_case;
  j["normalization"] = config.normalization;
  if (config.type == "wordpiece") {
    j["unk_token"] = config.unk_token;
    j["max_input_chars_per_word"] = config.max_input_chars_per_word;
  }
  nlohmann::ordered_json special = nlohmann::ordered_json::object();
  for (const SpecialField& f : kSpecialFields) special[f.key] = config.special.*f.id;
  j["special_tokens"] = std::move(special);
  return j;
}

TokenizerConfig tokenizer_config_from_json(const nlohmann::json& j, const std::string& file) {
  const JsonPlace place{file, ""};
  json_as_object(j, place, "(root)");
  TokenizerConfig c;
  const std::string format = json_as_string(json_require(j, "format", place, ""), place, "format");
  if (format != kTokenizerConfigFormat) {
    throw DataError(file, "", "format",
                    "expected \"" + std::string(kTokenizerConfigFormat) + "\", got " +
                        quote_for_message(format));
  }
  c.type = json_as_string(json_require(j, "type", place, ""), place, "type");
  if (c.type == "sentencepiece") {
    c.model_file = relative_file(j, "model_file", place);
  } else if (c.type == "wordpiece") {
    c.vocab_file = relative_file(j, "vocab_file", place);
    if (const json* v = json_find(j, "unk_token", place, "")) {
      c.unk_token = json_as_string(*v, place, "unk_token");
    }
    if (const json* v = json_find(j, "max_input_chars_per_word", place, "")) {
      const std::int64_t n = json_as_int(*v, place, "max_input_chars_per_word");
      if (n < 1) throw DataError(file, "", "max_input_chars_per_word", "must be >= 1");
      c.max_input_chars_per_word = static_cast<std::size_t>(n);
    }
  } else {
    throw DataError(file, "", "type",
                    "must be \"sentencepiece\" or \"wordpiece\", got " + quote_for_message(c.type));
  }
  // Unknown keys are errors, as everywhere in the loader: a misspelt "lowercase" must not be
  // silently ignored. Fields of the other tokenizer type count as unknown.
  for (const auto& [key, value] : j.items()) {
    static const std::set<std::string> kCommon = {"format", "type", "lower_case", "normalization",
                                                  "special_tokens"};
    static const std::set<std::string> kSentencePiece = {"model_file"};
    static const std::set<std::string> kWordPiece = {"vocab_file", "unk_token",
                                                     "max_input_chars_per_word"};
    const auto& own = c.type == "wordpiece" ? kWordPiece : kSentencePiece;
    if (kCommon.count(key) == 0 && own.count(key) == 0) {
      throw DataError(
          file, "", key,
          "unknown key for a " + c.type + " tokenizer.json (known: format, type, " +
              (c.type == "wordpiece" ? "vocab_file, lower_case, normalization, unk_token, "
                                       "max_input_chars_per_word, special_tokens)"
                                     : "model_file, lower_case, normalization, special_tokens)"));
    }
  }
  c.lower_case = json_as_bool(json_require(j, "lower_case", place, ""), place, "lower_case");
  c.normalization =
      json_as_string(json_require(j, "normalization", place, ""), place, "normalization");

  const json& special =
      json_as_object(json_require(j, "special_tokens", place, ""), place, "special_tokens");
  for (const SpecialField& f : kSpecialFields) {
    const std::string path = json_child_path("special_tokens", f.key);
    const std::int64_t id =
        json_as_int(json_require(special, f.key, place, "special_tokens"), place, path);
    if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
      throw DataError(file, "", path, "id " + std::to_string(id) + " is out of range");
    }
    c.special.*f.id = static_cast<std::int32_t>(id);
  }
  for (const auto& [key, value] : special.items()) {
    bool known = false;
    for (const SpecialField& f : kSpecialFields) known = known || key == f.key;
    if (!known) {
      throw DataError(file, "", json_child_path("special_tokens", key), "unknown special token");
    }
  }
  return c;
}

TokenizerConfig read_tokenizer_config(const std::string& dir) {
  const std::string path = config_path(dir);
  if (!fs::exists(path)) {
    throw DataError(path, "", "",
                    "missing tokenizer settings: a model bundle must carry tokenizer.json "
                    "(casing, normalisation and special ids are never defaulted)");
  }
  return tokenizer_config_from_json(json_parse_file(path), path);
}

void write_tokenizer_config(const std::string& dir, const TokenizerConfig& config) {
  write_file_atomic(config_path(dir), tokenizer_config_to_json(config).dump(2) + "\n");
}

void check_tokenizer_config(const TokenizerConfig& config, const Tokenizer& tokenizer,
                            const std::string& config_file) {
  if (config.type != tokenizer.type()) {
    throw DataError(config_file, "", "type",
                    "\"" + config.type + "\" but the tokenizer is \"" + tokenizer.type() + "\"");
  }
  const bool wordpiece = config.type == "wordpiece";
  const std::int32_t vocab = tokenizer.vocab_size();
  std::set<std::int32_t> seen;
  for (const SpecialField& f : kSpecialFields) {
    const std::string field = json_child_path("special_tokens", f.key);
    const std::int32_t id = config.special.*f.id;
    if (id < 0 || id >= vocab) {
      throw DataError(config_file, "", field,
                      "id " + std::to_string(id) + " is outside the vocabulary [0, " +
                          std::to_string(vocab) + ")");
    }
    const std::string token = tokenizer.id_to_token(id);
    const std::string expected =
        wordpiece && std::string_view(f.key) == "unk" ? config.unk_token : f.piece;
    const bool ok = token == expected || (wordpiece && f.role_marker && is_unused_alias(token));
    if (!ok) {
      throw DataError(config_file, "", field,
                      "id " + std::to_string(id) + " is " + quote_for_message(token) +
                          " in the vocabulary, expected " + quote_for_message(expected) +
                          (wordpiece && f.role_marker ? " or an [unusedK] alias" : ""));
    }
    if (!seen.insert(id).second) {
      throw DataError(config_file, "", field,
                      "id " + std::to_string(id) + " is used by another special token");
    }
    if (tokenizer.special().*f.id != id) {
      throw DataError(config_file, "", field,
                      "id " + std::to_string(id) + " but the tokenizer uses " +
                          std::to_string(tokenizer.special().*f.id));
    }
  }

  if (const auto* sp = dynamic_cast<const SentencePieceTokenizer*>(&tokenizer)) {
    if (config.normalization != sp->normalization()) {
      throw DataError(config_file, "", "normalization",
                      quote_for_message(config.normalization) + " but the model was trained with " +
                          quote_for_message(sp->normalization()));
    }
    if (config.lower_case != sp->lower_case()) {
      throw DataError(config_file, "", "lower_case",
                      std::string(config.lower_case ? "true" : "false") +
                          " but the model's normalisation \"" + sp->normalization() + "\" " +
                          (sp->lower_case() ? "lower-cases" : "keeps case"));
    }
  } else if (const auto* wp = dynamic_cast<const WordPieceTokenizer*>(&tokenizer)) {
    if (config.normalization != kWordPieceNormalization) {
      throw DataError(config_file, "", "normalization",
                      "must be \"" + std::string(kWordPieceNormalization) +
                          "\" for a wordpiece tokenizer, got " +
                          quote_for_message(config.normalization));
    }
    if (config.lower_case != wp->options().lower_case) {
      throw DataError(config_file, "", "lower_case",
                      std::string(config.lower_case ? "true" : "false") +
                          " but the tokenizer was built with lower_case=" +
                          (wp->options().lower_case ? "true" : "false"));
    }
    check_wordpiece_casing(config, *wp, config_file);
  }
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const std::string file = config_path(dir);
  const TokenizerConfig config = read_tokenizer_config(dir);
  std::unique_ptr<Tokenizer> tok;
  if (config.type == "sentencepiece") {
    tok = std::make_unique<SentencePieceTokenizer>((fs::path(dir) / config.model_file).string());
  } else {
    WordPieceOptions options;
    options.lower_case = config.lower_case;
    options.max_input_chars_per_word = config.max_input_chars_per_word;
    options.unk_token = config.unk_token;
    options.special = config.special;
    tok =
        std::make_unique<WordPieceTokenizer>((fs::path(dir) / config.vocab_file).string(), options);
  }
  check_tokenizer_config(config, *tok, file);
  return tok;
}

void save_wordpiece_tokenizer_config(const std::string& dir, const std::string& vocab_source,
                                     const WordPieceOptions& options) {
  const WordPieceTokenizer tok(vocab_source, options);
  TokenizerConfig config;
  config.type = "wordpiece";
  config.vocab_file = "vocab.txt";
  config.lower_case = options.lower_case;
  config.normalization = kWordPieceNormalization;
  config.special = options.special;
  config.unk_token = options.unk_token;
  config.max_input_chars_per_word = options.max_input_chars_per_word;
  check_tokenizer_config(config, tok, config_path(dir));

  fs::create_directories(dir);
  const fs::path target = fs::path(dir) / config.vocab_file;
  std::error_code ec;
  if (!fs::exists(target) || !fs::equivalent(vocab_source, target, ec)) {
    write_file_atomic(target, read_file_bytes(vocab_source));
  }
  write_tokenizer_config(dir, config);
}

}  // namespace dialtree::data
