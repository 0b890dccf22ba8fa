// A loaded model bundle ready for inference: turns requests' inputs into serialised dialog
// examples (data/serialize.h, docs/method.md §1.5, the tokenizer read from the bundle:
// docs/failure-cases.md C17) and runs batched forward passes to the pooled [CLS] dialog vector
// (docs/method.md §1.2) and, when the bundle has an intent head, class probabilities. Shared by
// `dialtree serve` and the offline `dialtree embed`, so both give the same vectors. The header is
// torch-free (pimpl).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/batching.h"
#include "data/serialize.h"
#include "data/tokenizer.h"
#include "data/word_input.h"
#include "serve/api.h"

namespace dialtree::serve {

/// Results of one forward pass, one row per input, float32.
struct ForwardOutputs {
  std::vector<std::vector<float>> pooled;  ///< [B][hidden_size]: the [CLS] head vector's
                                           ///< final hidden state, not normalised
  std::vector<std::vector<float>> probs;   ///< [B][num_labels] softmax of the intent logits;
                                           ///< empty unless requested and the head exists
  /// With tags: per input and hidden-state row (row 0 [CLS], row j + 1 input token j, padding
  /// rows left out), the tagger's argmax tag id and its softmax probability.
  std::vector<std::vector<std::int32_t>> tag_ids;
  std::vector<std::vector<float>> tag_scores;
};

/// One input as a tagger reads it (the parse route, docs/serving.md "Parsing"): its current
/// turn's whitespace words with their code-point offsets, each word tokenised on its own, the
/// earlier turns as prepare() serialises them.
struct WordInput {
  data::SerializedExample example;
  std::vector<std::int64_t> first_row;  ///< per word, its first sub-word's hidden-state row
                                        ///< ([CLS] = row 0), -1 when truncation cut it
  std::string text;                     ///< the current turn's text
  std::vector<data::WordSpan> words;    ///< its words, [start, stop) code points of `text`
};

/// How inputs are serialised: the cut of one utterance and of the whole dialog context.
struct InputLimits {
  std::size_t max_input_length = 256;    ///< tokens of a serialised input (role markers included)
  std::size_t max_utterance_length = 0;  ///< sub-words kept per utterance; derived (see load)
  std::size_t max_turns = 0;             ///< utterances kept; derived (the turn table's size)
};

/// A bundle on one device in eval mode. prepare() and forward() are thread-safe: forward() only
/// reads the weights, under inference mode, so the server's inference workers run it
/// concurrently (docs/serving.md "Inference workers").
class Embedder {
 public:
  /// Loads the bundle at `model_dir` (model/bundle.h) and derives the limits: utterances keep
  /// min(max_input_length, max_position_embeddings) - 2 sub-words (the markers take two
  /// positions), dialogs keep the last max_turns utterances.
  /// `device` (auto, cpu, cuda, cuda:N: common/device_spec.h) is where the weights and every
  /// forward pass live; results come back to the host. `bf16` runs the forward passes under
  /// bf16 autocast where the device has native bf16 (model::effective_bf16; else float32).
  /// @throws DataError naming the bundle file at fault, or `device` when it is not a device or
  ///   not on this machine; std::invalid_argument if max_input_length < 3 (one sub-word and two
  ///   markers).
  Embedder(const std::string& model_dir, std::size_t max_input_length,
           const std::string& device = "cpu", bool bf16 = false);
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  /// Serialises one input as training does: each turn's text tokenised and wrapped in its role
  /// markers, the last turn current (docs/method.md §1.5). Token-id inputs are one user utterance.
  /// With `truncate`, an over-long utterance keeps its first (kRight) or last (kLeft)
  /// max_utterance_length sub-words and a long dialog keeps its newest turns and last
  /// max_input_length tokens (SPACE-2's left cut). Without it such an input is refused.
  /// `param` is the input's JSON path, used in errors.
  /// @throws ApiError kInputTooLong (truncate false and something would be cut), kValidation
  ///   (a token id outside the vocabulary).
  data::SerializedExample prepare(const Input& input, bool truncate, TruncationDirection direction,
                                  const std::string& param) const;

  /// prepare() for a tagger (docs/serving.md "Parsing"): the current turn is split into
  /// whitespace words (Python's str.split()) and each word encoded alone, as tagging
  /// fine-tuning reads DialoGLUE's words (data/word_input.h); earlier turns are serialised as
  /// prepare() does. The same limits and truncation apply: a right cut keeps the first words,
  /// a left cut the last ones, and a word cut off gets no row.
  /// @throws ApiError as prepare(), and kValidation for a token-id input.
  WordInput prepare_words(const Input& input, bool truncate, TruncationDirection direction,
                          const std::string& param) const;

  /// One batched forward pass under inference mode (no autograd state is kept:
  /// docs/failure-cases.md C26). Examples are right-padded to the longest; padding never changes a
  /// row's result beyond float rounding (the attention mask removes padded keys). An empty batch
  /// gives empty outputs. `with_probs` adds the intent probabilities when has_classifier().
  /// `with_tags` (a model with a tagger) runs the full encoder, as tagging fine-tuning predicts:
  /// the tags of every row, and the pooled vector and intent probabilities from its [CLS] row
  /// (equal to the packed [CLS] pass's up to float rounding).
  /// @throws std::invalid_argument on malformed examples (ids outside the tables);
  ///   std::logic_error for `with_tags` on a model without a tagger.
  ForwardOutputs forward(const std::vector<const data::SerializedExample*>& batch,
                         bool with_probs, bool with_tags = false) const;

  const data::Tokenizer& tokenizer() const;
  const InputLimits& limits() const { return limits_; }
  std::size_t hidden_size() const;
  /// True when the bundle has an intent head (num_labels > 0).
  bool has_classifier() const;
  /// Makes each later forward() run its LibTorch operations on `threads` threads of the thread
  /// that calls it (at::set_num_threads on that thread, once), as the server's inference workers
  /// do; 0, the default, leaves every calling thread's setting as it is (the offline path).
  /// Call it before forward() runs concurrently. @throws std::invalid_argument if < 0.
  void set_threads_per_forward(int threads);
  /// LibTorch's intra-op thread count on the calling thread (at::get_num_threads()).
  static int intra_op_threads();
  /// Intent names by class id (size num_labels).
  const std::vector<std::string>& intent_labels() const;
  /// True when the bundle has a tagger (num_tags > 0), e.g. from `eval dialoglue --save-models`
  /// on restaurant8k, dstc8 or TOP.
  bool has_tagger() const;
  /// Tag names by tag id (size num_tags), "O", "B-x", "I-x".
  const std::vector<std::string>& tag_labels() const;
  /// The forward passes' compute dtype: "bfloat16" under bf16 autocast, else "float32" (the
  /// weights and every result are float32 either way).
  std::string dtype() const;
  /// Where the model runs: "cpu" or "cuda:N".
  std::string device() const;
  const std::string& model_dir() const { return model_dir_; }

 private:
  // The first `turns` turns of `input` (or its token ids) tokenised, refusing empty turns.
  std::vector<data::Utterance> tokenize(const Input& input, std::size_t turns,
                                        const std::string& param) const;
  // The limits check (or cut) and serialisation of prepare().
  data::SerializedExample fit(std::vector<data::Utterance>& history, bool truncate,
                              TruncationDirection direction, const std::string& param) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string model_dir_;
  InputLimits limits_;
  int threads_per_forward_ = 0;
};

/// The pooled vectors of `examples`, in their order, from forward() over the batches that
/// plan_batches(lengths, limits) chooses (the offline path of `dialtree embed` and
/// bench_embed). `padded_tokens`, when given, receives Σ batch size × its longest input.
/// @throws what forward() throws.
std::vector<std::vector<float>> embed_batched(const Embedder& embedder,
                                              const std::vector<data::SerializedExample>& examples,
                                              const BatchPlanLimits& limits,
                                              std::size_t* padded_tokens = nullptr);

}  // namespace dialtree::serve
