// The token-level probe (docs/evaluation.md "Token-level probe"), torch-free: given frozen
// vectors of each word of a DialoGLUE tagging task, a linear BIO tagger (scikit-learn's
// logistic regression on standardized vectors, eval/probe.h) is fitted on train_10's words and
// scores the val or test split with DialoGLUE's own metric: slot F1 for restaurant8k and dstc8,
// exact match for TOP (whose root intent comes from a second linear classifier on [CLS]). It
// asks of a token state what the intent probe asks of [CLS]: how much of the task a linear map
// reads off the frozen encoder. The vectors come from eval/probe_model.h embed_words().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/probe.h"
#include "eval/tag_mapping.h"
#include "eval/tasks.h"

namespace dialtree::eval {

/// Frozen vectors of the examples of one tagging split.
struct WordVectors {
  /// [number of words that kept a sub-word, d]: the final state of each such word's first
  /// sub-word (the row the fine-tuned tagger reads, data/word_input.h encode_words).
  ProbeMatrix words;
  /// Per example, per word: its row in `words`, or -1 when the word has no sub-word left (such
  /// a word is predicted "O", as fine-tuning predicts it).
  std::vector<std::vector<std::int64_t>> rows;
  ProbeMatrix cls;  ///< [examples, d]: the [CLS] state of each example (TOP's intent)
};

/// Fits the token probe on `train` (task.train's words and tags; TOP: also task.train's intents
/// on the [CLS] rows) and scores `scored` (the examples of the split `split`, vectors
/// `scored_x`) with DialoGLUE's metric against `gold` (a task list or a gt_test.json object,
/// eval/submission.h task_list), through `mapper`'s word-to-piece rules. Fits: LR on
/// standardized vectors, C and max_iter of `options`; the tag and intent fits run side by side
/// when options.threads > 1. Timings: fit_seconds only.
/// @throws std::invalid_argument if the vectors do not match the examples (rows per example,
///   widths) or the training words hold fewer than two tags; as fit_logistic() and score_task().
TagProbeRow probe_tagging(const TaggingTask& task, const WordVectors& train,
                          const std::vector<TaggingExample>& scored, const WordVectors& scored_x,
                          const std::string& split, const TagMapper& mapper,
                          const nlohmann::json& gold, const ProbeOptions& options);

}  // namespace dialtree::eval
