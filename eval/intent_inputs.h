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
#include "data/word_input.h"
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

/// The tagger's input (data/word_input.h), shared with the server's parse route.
using data::encode_words;
using data::TaggedInput;

}  // namespace dialtree::eval
