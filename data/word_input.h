// A tagger's input: an utterance read as words, each word tokenised on its own, the tagger
// reading each word's first sub-word (docs/evaluation.md "Models per task", DialoGLUE's slot
// protocol). Shared by tagging fine-tuning, the token-level probe (eval/) and the server's parse
// route (serve/), so that a served model reads a text exactly as it was fine-tuned and scored.
// Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/serialize.h"
#include "data/tokenizer.h"

namespace dialtree::data {

/// One whitespace-separated word of a text and where it lies: [start, stop) in Unicode code
/// points, as Python slices a string.
struct WordSpan {
  std::string text;
  std::size_t start = 0;
  std::size_t stop = 0;
};

/// Python's `str.split()` with each word's code-point offsets (the same words as
/// split_python_whitespace(), data/dialoglue_labels.h). @throws std::invalid_argument if `text`
/// is not valid UTF-8.
std::vector<WordSpan> split_words(std::string_view text);

/// The sub-words of a word sequence: each word encoded alone, the pieces concatenated.
struct WordPieces {
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> first;  ///< per word: index into `ids` of its first piece, or -1
                                    ///< when the word encodes to nothing
};

/// Encodes each of `words` alone with `tok` (DialoGLUE's word-by-word rule, §4 step 4).
/// @throws TokenizerError from encode.
WordPieces encode_word_pieces(const std::vector<std::string>& words, const Tokenizer& tok);

/// Keeps the first `keep` pieces (a right cut); words whose first piece is cut get -1.
void keep_first_pieces(WordPieces& pieces, std::size_t keep);

/// Per word, the row of its first sub-word in the hidden states of `ex` with [CLS] prepended
/// (row 0 [CLS]), or -1 when the word has no piece left. `ex` is the serialised example whose
/// current (last) utterance holds `pieces.ids`, possibly cut to its last ids by serialisation
/// (max_utt_len's left cut); earlier turns may precede it.
/// @throws std::invalid_argument if the last utterance of `ex` cannot hold such a cut of
/// `pieces.ids` (the example was not made from them).
std::vector<std::int64_t> first_piece_rows(const SerializedExample& ex, const WordPieces& pieces);

/// A tagging example on the model's sub-words: the serialised input and, per word, the row of
/// its first sub-word in the hidden states with [CLS] prepended (row 0 [CLS], row 1 [sos_u]),
/// or -1 when the word has no sub-word left (an empty encoding, or cut by left truncation).
struct TaggedInput {
  SerializedExample input;
  std::vector<std::int64_t> first_row;  ///< one per word
};

/// The words of one tagging example as one user turn (docs/evaluation.md "Models per task"):
/// encode_word_pieces(), then serialised with `so` (the last max_utt_len sub-words kept).
/// @throws TokenizerError from encode; std::invalid_argument from serialisation.
TaggedInput encode_words(const std::vector<std::string>& words, const Tokenizer& tok,
                         const SerializeOptions& so);

}  // namespace dialtree::data
