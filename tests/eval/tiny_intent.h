// A separable three-intent toy task and a tiny bundle for it, shared by the fine-tuning and
// probe tests (tests/eval/finetune_test.cpp, tests/eval/probe_model_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "model/torch_api.h"

#include "data/tokenizer_factory.h"
#include "model/bundle.h"
#include "model/encoder.h"
#include "test_paths.h"

namespace dialtree::eval::testing_tiny {

/// Three intents, each with its own key words, so a tiny encoder separates them in a few epochs.
inline const std::vector<std::string> kLabels = {"card_arrival", "weather", "book_table"};
/// Eight texts per intent, in kLabels order.
inline const std::vector<std::vector<std::string>> kTexts = {
    {"my card has not arrived", "where is my new card", "card still not here",
     "when will the card arrive", "has my card been sent", "i am waiting for my card",
     "my card did not come", "track my card delivery"},
    {"what is the weather today", "will it rain tomorrow", "is it sunny outside",
     "weather forecast please", "how hot is it today", "will it snow this week",
     "is it going to rain", "tell me the weather"},
    {"book a table for two", "reserve a table tonight", "i need a table for four",
     "can i book a table", "table for two at seven", "reserve dinner table",
     "book me a table please", "get a table for six"}};

/// Writes a BERT WordPiece tokenizer folder to `tok_dir` and a 1-layer, 32-wide bundle
/// initialised under torch seed `seed` to `bundle_dir`.
inline void save_tiny_bundle(const std::string& tok_dir, const std::string& bundle_dir,
                             std::uint64_t seed) {
  data::save_wordpiece_tokenizer_config(
      tok_dir, testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  const auto tok = data::load_tokenizer(tok_dir);
  model::EncoderConfig c;
  c.vocab_size = tok->vocab_size();
  c.hidden_size = 32;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  c.projection_dim = 8;
  c.cls_token_id = tok->special().cls;
  c.pad_token_id = tok->special().pad;
  torch::manual_seed(seed);
  model::SpaceModel net(c);
  model::save_bundle(bundle_dir, *net, tok_dir);
}

}  // namespace dialtree::eval::testing_tiny
