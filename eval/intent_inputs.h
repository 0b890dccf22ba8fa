// The model input of one utterance, shared by fine-tuning (eval/finetune.cpp) and the
// representation probe (eval/probe_model.cpp), so that the probe embeds exactly what the
// classifier or tagger is fine-tuned on: an intent utterance's text, or a tagging example's
// words. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/serialize.h"
#include "data/tokenizer.h"
#include "model/config.h"

namespace dialtree::eval {

/// One user utterance per example (docs/evaluation.md, "Models per task": the utterance as one
/// user turn): positions restart per utterance and reach max_utt_len + 1 (the markers), so
/// max_utt_len is capped by the position table (max_position_embeddings - 2); max_len =
/// max_utt_len + 2, one context turn.
data::SerializeOptions single_turn(const model::EncoderConfig& cfg, int max_utt_len);

/// Each text as one user turn: `[sos_u] ids [eos_u]` with the last max_utt_len sub-words of
/// `tok.encode(text)` (single_turn()), in input order.
/// @throws TokenizerError from encode; std::invalid_argument from serialisation.
std::vector<data::SerializedExample> serialize_texts(const std::vector<std::string>& texts,
                                                     const data::Tokenizer& tok,
                                                     const model::EncoderConfig& cfg,
                                                     int max_utt_len);

/// A tagging example on the model's sub-words: the serialised input and, per word, the row of
/// its first sub-word in the hidden states with [CLS] prepended (row 0 [CLS], row 1 [sos_u]),
/// or -1 when the word has no sub-word left (an empty encoding, or cut by left truncation).
struct TaggedInput {
  data::SerializedExample input;
  std::vector<std::int64_t> first_row;  ///< one per word
};

/// The words of one tagging example as one user turn (docs/method.md §6.2, DialoGLUE's slot
/// protocol): each word encoded alone, the pieces concatenated, then serialised with `so`
/// (single_turn(): the last max_utt_len sub-words kept). The tagger reads each word's first
/// sub-word. @throws TokenizerError from encode; std::invalid_argument from serialisation.
TaggedInput encode_words(const std::vector<std::string>& words, const data::Tokenizer& tok,
                         const data::SerializeOptions& so);

}  // namespace dialtree::eval
