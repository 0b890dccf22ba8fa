// From word-level tag predictions to DialoGLUE's scoring scheme (torch-free). DialoGLUE defines
// slot and TOP gold on BERT-uncased word pieces (docs/dialoglue.md §4 steps 4-6, §5); dialtree
// models tag words on their own sub-words, so each predicted word tag is expanded onto the
// word's BERT pieces with the same rules that build the gold. Gold word tags mapped this way
// give gt_test.json exactly (tests/eval/tag_mapping_test.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dialoglue_labels.h"
#include "data/tokenizer.h"
#include "eval/metrics.h"
#include "eval/tasks.h"

namespace dialtree::eval {

/// Maps word tags of one tagging task to DialoGLUE's piece-level predictions.
class TagMapper {
 public:
  /// `data_dir` holds DialoGLUE's bert-base-uncased-vocab.txt; the tags that have an `I-` form
  /// are the task's tag vocabulary (slot vocab.txt; TOP vocab.slot).
  /// @throws DataError if the vocabulary file is missing or malformed.
  TagMapper(const std::string& data_dir, const TaggingTask& task);

  /// Slot tasks (§4 steps 4-6): the "slot:start-end" spans of one example whose words carry
  /// `tags`. @throws std::invalid_argument if the lengths differ.
  SpanList slot_spans(const std::vector<std::string>& words,
                      const std::vector<std::string>& tags) const;

  /// TOP (§5): `intent` and the piece-level tags; words that are a bare ":" are dropped as
  /// DialoGLUE's loader drops them. @throws std::invalid_argument if the lengths differ.
  TopParse top_parse(const std::vector<std::string>& words, const std::vector<std::string>& tags,
                     const std::string& intent) const;

  /// The DialoGLUE submission list of `examples` with predicted word tags (and TOP intents):
  /// span lists for slot tasks, [intent, tags] pairs for TOP. Pass the examples' own tags to get
  /// the gold list. @throws std::invalid_argument if the counts or lengths differ.
  nlohmann::json submission(const std::vector<TaggingExample>& examples,
                            const std::vector<std::vector<std::string>>& word_tags,
                            const std::vector<std::string>& intents) const;

  /// submission() of the examples' own gold tags and intents.
  nlohmann::json gold_submission(const std::vector<TaggingExample>& examples) const;

 private:
  bool top_;
  std::unique_ptr<data::Tokenizer> wordpiece_;
  data::TagSet vocab_;
};

/// The word-level examples of a tagging split as JSON lines, the input of a tagger outside
/// dialtree (bench/reference/classical_baseline.py): one object per example, in file order,
/// {"words": [...], "tags": [...]} plus "intent" for TOP. The words are DialoGLUE's (slot tasks:
/// the requested slot names prefixed, docs/dialoglue.md §4). Written atomically.
/// @throws as write_file_atomic.
void write_word_tags_jsonl(const std::string& path, const std::vector<TaggingExample>& examples,
                           bool with_intent);

/// Predicted word tags of `examples` (a split of `task`) read from JSON lines, one object per
/// example in order: {"tags": [one per word]} plus "intent" (a string) for TOP; other keys (e.g.
/// "words", which write_word_tags_jsonl writes) are ignored. Fills `tags` and `intents`.
/// @throws DataError / SchemaError naming the file, the line and the field: a missing or
///   mistyped field, a tag count that differs from the example's word count, a tag that is not
///   in the task's tag vocabulary (e.g. "B_time", "b-time") or an intent not in vocab.intent
///   (such a prediction could never be right), or a line count that differs from the number of
///   examples.
void read_word_tags_jsonl(const std::string& path, const TaggingTask& task,
                          const std::vector<TaggingExample>& examples,
                          std::vector<std::vector<std::string>>& tags,
                          std::vector<std::string>& intents);

}  // namespace dialtree::eval
