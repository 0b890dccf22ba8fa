// BERT WordPiece tokenizer: BasicTokenizer (clean, CJK split, lower-case + strip accents,
// punctuation split) followed by greedy longest-match WordPiece over `vocab.txt`
// (docs/dialoglue.md §8). Needed for DialoGLUE's piece-level gold labels and BERT checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/tokenizer.h"

namespace dialtree::data {

struct WordPieceOptions {
  bool lower_case = true;                      ///< uncased vocab: lower-case and strip accents
  std::size_t max_input_chars_per_word = 100;  ///< longer words become [UNK]
  std::string unk_token = "[UNK]";
  /// Special ids; defaults are BERT-uncased ids with SPACE-2's [unusedK] role-marker aliases.
  SpecialTokens special{};
};

class WordPieceTokenizer : public Tokenizer {
 public:
  /// Loads `vocab.txt` (one token per line, id = 0-based line number).
  /// @throws TokenizerError if the file cannot be read, is empty, has a duplicate token, or
  ///   lacks the unk token.
  explicit WordPieceTokenizer(const std::string& vocab_path, WordPieceOptions options = {});

  /// BasicTokenizer only: the whitespace/punctuation-split, normalised words of `text`.
  std::vector<std::string> basic_tokenize(std::string_view text) const;
  /// WordPiece of one already-normalised word: "##"-continued pieces, or {unk} if no match.
  std::vector<std::string> wordpiece(std::string_view word) const;

  std::vector<std::int32_t> encode(std::string_view text) const override;
  /// Each piece covers the input characters of the normalised characters it was made of (an
  /// accented letter covers its whole UTF-8 sequence; [UNK] covers its whole word).
  std::vector<TokenSpan> encode_with_offsets(std::string_view text) const override;
  std::vector<std::string> tokenize(std::string_view text) const override;
  /// Joins tokens with spaces and removes " ##" (HF `convert_tokens_to_string`).
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  std::int32_t vocab_size() const override { return static_cast<std::int32_t>(vocab_.size()); }
  std::int32_t token_to_id(std::string_view token) const override;
  std::string id_to_token(std::int32_t id) const override;
  const SpecialTokens& special() const override { return options_.special; }
  std::string type() const override { return "wordpiece"; }
  const WordPieceOptions& options() const { return options_; }
  const std::string& vocab_path() const { return vocab_path_; }

 private:
  /// wordpiece(), also giving each piece's range [first, last) of the word's characters.
  std::vector<std::string> wordpiece_ranges(
      std::string_view word, std::vector<std::pair<std::size_t, std::size_t>>* ranges) const;

  std::string vocab_path_;
  WordPieceOptions options_;
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, std::int32_t> ids_;
};

}  // namespace dialtree::data
