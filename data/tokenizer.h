// The tokenizer interface shared by WordPiece (BERT vocab.txt) and SentencePiece models, and
// the special tokens that dialog serialisation needs (docs/method.md §1.4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dialtree::data {

/// Ids of the special tokens. For BERT's uncased vocabulary SPACE-2 aliases its role markers
/// onto [unusedK] slots (docs/method.md §1.4): sos_u=13, eos_u=7, sos_r=14, eos_r=8.
struct SpecialTokens {
  std::int32_t pad = 0;
  std::int32_t unk = 100;
  std::int32_t cls = 101;
  std::int32_t sep = 102;
  std::int32_t mask = 103;
  std::int32_t sos_u = 13;  ///< opens a user utterance
  std::int32_t eos_u = 7;   ///< closes a user utterance
  std::int32_t sos_r = 14;  ///< opens a system ("response") utterance
  std::int32_t eos_r = 8;   ///< closes a system utterance
};

/// True when `id` is one of `special`'s nine ids (padding, [UNK], [CLS], [SEP], [MASK] and the
/// four role markers), as HF's `all_special_ids` counts them.
bool is_special_id(const SpecialTokens& special, std::int32_t id);

/// One sub-word of Tokenizer::encode_with_offsets(): its id and the bytes [begin, end) of the
/// input it was made from (UTF-8 byte offsets into the original text, before any lower-casing
/// or accent stripping). A WordPiece [UNK] covers its whole word; a SentencePiece word-start
/// piece starts at its word, not at the whitespace before it (a piece of whitespace alone has
/// begin == end).
struct TokenSpan {
  std::int32_t id = 0;
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// A text <-> id mapping. Implementations are immutable after construction and safe to use
/// from several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Sub-word ids of `text`, without any special token. `text` must be valid UTF-8.
  /// @throws TokenizerError on invalid UTF-8.
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  /// encode() with the input bytes each id covers (the offsets of `/tokenize`). The ids are
  /// those of encode(text). @throws TokenizerError on invalid UTF-8.
  virtual std::vector<TokenSpan> encode_with_offsets(std::string_view text) const = 0;
  /// Sub-word strings of `text` (same segmentation as encode()).
  virtual std::vector<std::string> tokenize(std::string_view text) const = 0;
  /// Text of `ids`. @throws TokenizerError naming the id if any is outside [0, vocab_size()).
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  /// decode() per row. @throws TokenizerError naming the row and the id (docs/failure-cases.md
  /// C14); the single and batch paths reject the same ids.
  std::vector<std::string> decode_batch(const std::vector<std::vector<std::int32_t>>& rows) const;

  virtual std::int32_t vocab_size() const = 0;
  /// Id of a vocabulary entry, or -1 if absent.
  virtual std::int32_t token_to_id(std::string_view token) const = 0;
  /// Vocabulary entry of `id`. @throws TokenizerError if out of range.
  virtual std::string id_to_token(std::int32_t id) const = 0;
  virtual const SpecialTokens& special() const = 0;
  /// "wordpiece" or "sentencepiece".
  virtual std::string type() const = 0;
};

}  // namespace dialtree::data
