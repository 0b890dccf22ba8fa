// DialoGLUE's gold-label rules for the slot tasks (Restaurant8k, DSTC8) and TOP, quirks
// included (docs/dialoglue.md §4 steps 1-6 and §5). Applied to the test splits these rules
// regenerate gt_test.json exactly; eval reuses the span extraction for predictions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "data/tokenizer.h"
#include "readers/slot_json.h"
#include "readers/top.h"

namespace dialtree::data {

/// Set of the tags a task knows: vocab.txt for slot tasks, top_tag_vocab(train+eval+test) for
/// TOP. Only used to decide whether an `I-` form exists (§4 step 4).
using TagSet = std::unordered_set<std::string>;

/// Python's `str.split()` without arguments: splits valid UTF-8 `text` on runs of Unicode
/// whitespace (category Zs or bidi class WS/B/S, e.g. space, \t, \n, NBSP, U+2028) and drops
/// empty pieces. @throws std::invalid_argument if `text` is not valid UTF-8.
std::vector<std::string> split_python_whitespace(std::string_view text);

/// Word-level sequence: parallel `words` and `tags` (same length).
struct WordTags {
  std::vector<std::string> words;
  std::vector<std::string> tags;  ///< "O", "B-slot" or "I-slot"
};

/// §4 steps 1-3 for one slot example: span words (from `text[start:end]`, code points, split on
/// whitespace) form a dict word -> slot where later labels overwrite earlier ones; the
/// requested slot names are prefixed one by one (so they appear in reverse order); every word
/// of the prefixed text that is exactly a dict key gets `B-slot`, or `I-slot` when the
/// previous word carried the same slot; all others get `O`.
/// @throws std::out_of_range if a span lies outside the text (the reader already rejects it).
WordTags slot_word_tags(const readers::SlotExample& example);

/// §4 step 4, tag of a word's 2nd, 3rd, ... piece: `I-x` for `B-x`/`I-x` when `I-x` is in
/// `vocab`, otherwise `tag` itself (so "O" stays "O").
std::string continuation_tag(const std::string& tag, const TagSet& vocab);

/// Piece-level sequence without [CLS]/[SEP]: parallel token `ids` and `tags`.
struct PieceTags {
  std::vector<std::int32_t> ids;
  std::vector<std::string> tags;
};

/// §4 step 4: tokenises each word on its own with `tok` ([UNK] counts as one piece; a word
/// giving no piece, such as TOP's bare ":" seen as an empty word, disappears); the first piece
/// gets the word's tag, later pieces continuation_tag(). `words` and `tags` must have the
/// same length. @throws std::invalid_argument on a length mismatch; TokenizerError from `tok`.
PieceTags expand_to_pieces(const std::vector<std::string>& words,
                           const std::vector<std::string>& tags, const Tokenizer& tok,
                           const TagSet& vocab);

/// §4 step 5: true if DialoGLUE's evaluation drops position `id`: a special token that
/// decodes to an empty string ([PAD], [UNK], [CLS], [SEP], [MASK] per `tok.special()`) or a
/// token that decodes to the word `user`. @throws TokenizerError for an out-of-range id.
bool eval_drops_token(const Tokenizer& tok, std::int32_t id);

/// §4 step 5 on parallel `ids` / `tags` (gold or predicted, same length): the tags of the
/// positions eval_drops_token() keeps, in order. @throws std::invalid_argument on a length
/// mismatch.
std::vector<std::string> eval_tag_sequence(const std::vector<std::int32_t>& ids,
                                           const std::vector<std::string>& tags,
                                           const Tokenizer& tok);

/// One labelled span of a tag list: tags [start, end) carry slot `label`.
struct TagSpan {
  std::string label;
  std::size_t start = 0;
  std::size_t end = 0;
  bool operator==(const TagSpan& o) const {
    return label == o.label && start == o.start && end == o.end;
  }
};

/// §4 step 6's reading of BIO tags, in order of their start: `O`, `[PAD]` (or any other non
/// B-/I- tag) closes the open span; `B-k` closes it and opens k; `I-k` continues only when k is
/// the open slot and otherwise closes the open span and opens nothing; the end of the list
/// closes the open span. The server's parse route reads a tagger's word tags the same way.
std::vector<TagSpan> tag_spans(const std::vector<std::string>& tags);

/// §4 step 6: tag_spans() of a filtered tag list as "slot:start-end" (indices into `tags`, end
/// exclusive), the form of gt_test.json.
std::vector<std::string> extract_slot_spans(const std::vector<std::string>& tags);

/// Complete slot gold of one example (steps 1-6): what gt_test.json["restaurant8k"|"dstc8"]
/// holds for it.
std::vector<std::string> slot_gold_spans(const readers::SlotExample& example, const Tokenizer& tok,
                                         const TagSet& vocab);

/// TOP gold: root intent and the tag of every word piece between [CLS] and [SEP].
struct TopGold {
  std::string intent;
  std::vector<std::string> tags;
};

/// §5 gold of one TOP example: the words' tags expanded to pieces as in §4 step 4. Words that
/// are a bare ":" (DialoGLUE's loader reads `::TAG` as an empty word) yield nothing.
TopGold top_gold(const readers::TopExample& example, const Tokenizer& tok, const TagSet& vocab);

}  // namespace dialtree::data
