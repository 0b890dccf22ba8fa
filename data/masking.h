// SPACE-2 MLM masking (docs/method.md §4.2), torch-free: value-span masking for utterances with
// labelled value mentions, standard BERT 80/10/10 masking for the others. Also the helpers that
// turn labelled character spans into per-token flags aligned with serialize_dialog()'s ids.
//
// Randomness comes only from the std::mt19937_64 passed in, through dialtree's own draws (not
// the implementation-defined std::*_distribution), so a seed gives the same masks with every
// standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/serialize.h"
#include "data/tokenizer.h"
#include "sts/tree.h"

namespace dialtree::data {

/// Label of a position that is not an MLM target (PyTorch's cross-entropy ignore_index).
/// SPACE-2 itself writes 0 there and masks by token != 0; dialtree uses -100 so that [PAD]=0
/// could never be confused with a target.
inline constexpr std::int32_t kMlmIgnoreLabel = -100;

/// A character span [start, end) in Unicode code points into an utterance's text.
using CharSpan = std::pair<std::size_t, std::size_t>;

/// BERT masking parameters (docs/method.md §4.2 defaults). Span masking has no parameters: it
/// always replaces 100 % of the span tokens by [MASK].
struct MlmMaskingOptions {
  double mask_prob = 0.15;    ///< probability that an eligible sub-word (or word) becomes a target
  double mask_token = 0.8;    ///< share of the targets replaced by [MASK]
  double random_token = 0.1;  ///< share replaced by a random id; the rest stays unchanged
  /// Whole-word masking (docs/training.md "Whole-word masking") when set: one flag per vocabulary
  /// id, 1 where the id continues the word of the sub-word before it (word_continuation_flags());
  /// the masking decision is drawn once per word and every sub-word of a chosen word is a target.
  /// Null: every sub-word is drawn on its own (BERT's original masking).
  std::shared_ptr<const std::vector<std::uint8_t>> continues_word;
};

/// The whole-word table of MlmMaskingOptions::continues_word, one flag per id of `tokenizer`:
/// 1 for a WordPiece "##" piece, and for a SentencePiece piece without the word-start mark
/// U+2581 whose first character is an ASCII letter, digit or '_', or any non-ASCII code point
/// (so an ASCII "," or "'" after a word starts a word of its own). Special tokens and byte
/// pieces (<0xNN>) are 0 (docs/training.md "Whole-word masking").
std::vector<std::uint8_t> word_continuation_flags(const Tokenizer& tokenizer);

/// Output of mask_for_mlm(): both vectors have the example's length L.
struct MaskedTokens {
  std::vector<std::int32_t> input_ids;  ///< the masked copy of the example's input_ids
  std::vector<std::int32_t> labels;     ///< original id at targets, kMlmIgnoreLabel elsewhere
};

/// Masks one serialised example for the MLM pass (docs/method.md §4.2), utterance by utterance.
/// Utterances are the runs that start where position_ids == 0 (plus index 0, whose utterance
/// may have been cut by the left max_len truncation).
///  - An utterance with at least one flagged token (span_flags[i] != 0 on a non-marker,
///    non-padding position) gets exactly its flagged tokens replaced by special.mask, 100 %,
///    labels = the original ids; it gets no random masking.
///  - Every other utterance gets BERT masking: each eligible token is chosen independently with
///    p = options.mask_prob (with options.continues_word: each word, its first eligible sub-word
///    drawing for all; a continuation after a marker or at the utterance's start begins a word);
///    a chosen token becomes special.mask with share mask_token, a random
///    id drawn uniformly from [1, vocab_size - 1] with share random_token, or stays unchanged.
///    The random id excludes nothing else: it can be a role marker, [MASK], [CLS], [UNK] or the
///    original id itself (as in SPACE-2 and BERT); only 0 ([PAD] in both vocabularies) is out.
/// The role markers special.sos_u/eos_u/sos_r/eos_r and special.pad are never targets.
/// RNG use: one draw per eligible token (per word, whole-word) of a BERT utterance, one more per
/// chosen token, and
/// one or (rarely, rejection sampling) more per random replacement; span utterances draw nothing.
/// @param span_flags empty (no spans), or one flag per token of `example` (see
///   context_span_flags()).
/// @throws std::invalid_argument if span_flags is non-empty with a size other than
///   input_ids.size(), if position_ids has another size than input_ids, if vocab_size < 2, or
///   if the options are not probabilities with mask_token + random_token <= 1, or if
///   options.continues_word has another size than vocab_size.
MaskedTokens mask_for_mlm(const SerializedExample& example,
                          const std::vector<std::uint8_t>& span_flags, const SpecialTokens& special,
                          std::int32_t vocab_size, std::mt19937_64& rng,
                          const MlmMaskingOptions& options = {});

/// Per-token flags (1 = inside one of `spans`) aligned with `tokenizer.encode(text)`, i.e. with
/// the ids that serialize_dialog() stores for the utterance.
///
/// The whole text is tokenised once, so ids are never changed by the spans. A span [s, e) is
/// located by encoding the prefixes text[0, s) and text[0, e): when a prefix's ids are a prefix
/// of the full ids (always so for WordPiece at word or punctuation boundaries, and for
/// SentencePiece at whitespace boundaries), the boundary falls exactly between two tokens.
/// Otherwise the boundary is inside a token (e.g. the span "town" of "downtown"), and that
/// straddling token is flagged too; the span is never under-covered but may gain one token at
/// each end. Empty spans flag nothing.
/// @throws std::out_of_range if a span has start > end or end > the code point length of text;
///   TokenizerError from encode() on invalid UTF-8.
std::vector<std::uint8_t> value_span_flags(const Tokenizer& tokenizer, std::string_view text,
                                           const std::vector<CharSpan>& spans);

/// The character spans of the value mentions in one labelled turn, as SPACE-2 finds them
/// (docs/method.md §4.2 step 1): the mention of a value is text[span] when the value has a span,
/// else the value string itself; then every occurrence of every mention in `text` is returned,
/// matched case-insensitively (ASCII letters only) and only at token boundaries (a match may
/// not start or end in the middle of a run of word characters; non-ASCII code points count as
/// word characters). A value's own span is always included. Sorted, duplicates removed.
/// Differences from SPACE-2, which compares lists of regex tokens: whitespace inside a mention
/// must match exactly, and case folding is ASCII only.
/// @throws std::out_of_range if a value's span lies outside text (sts/1 readers already reject
///   such spans).
std::vector<CharSpan> label_mention_spans(std::string_view text, const sts::Tree& label);

/// label_mention_spans() per slot name: for each slot of `label` (merged over domains and
/// intents, in byte order of the names) the sorted, de-duplicated spans of its values' mentions,
/// found by the same rules. Slots with no mention in `text` are left out. The union of the
/// lists is label_mention_spans(text, label). Used for the token-level tree term (docs/training.md
/// "A token-level tree term"). @throws as label_mention_spans().
std::vector<std::pair<std::string, std::vector<CharSpan>>> label_mention_spans_by_slot(
    std::string_view text, const sts::Tree& label);

/// Flags of a serialised context, aligned with serialize_context(history, ...).input_ids:
/// `utterance_flags[j]` are the flags of history[j]'s ids (value_span_flags()), and the same
/// steps 1-6 of docs/method.md §1.5 are applied (last max_ctx_turn utterances, last max_utt_len
/// tokens of each, 0 for the two role markers, last max_len entries).
/// @throws std::invalid_argument if utterance_flags is empty or a limit in `options` is 0.
std::vector<std::uint8_t> context_span_flags(
    const std::vector<std::vector<std::uint8_t>>& utterance_flags,
    const SerializeOptions& options = {});

/// context_span_flags() for int32 per-token labels (e.g. slot ids): `utterance_labels[j]` aligned
/// with history[j]'s ids, the same utterances and truncations kept, `marker_label` at the role
/// markers. @throws std::invalid_argument as context_span_flags().
std::vector<std::int32_t> context_token_labels(
    const std::vector<std::vector<std::int32_t>>& utterance_labels, const SerializeOptions& options,
    std::int32_t marker_label);

}  // namespace dialtree::data
