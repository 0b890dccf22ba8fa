// A tiny model bundle for the server tests: a 2-layer, 32-wide encoder with random weights, a
// WordPiece tokenizer of a few banking words, and optionally a 3-class intent head.
#pragma once

#include <fstream>
#include <string>

#include "model/torch_api.h"

#include "data/tokenizer_factory.h"
#include "data/wordpiece.h"
#include "model/bundle.h"
#include "test_paths.h"

namespace dialtree::serve::testing {

/// Position table of 16 rows: an utterance keeps at most 14 sub-words.
inline model::EncoderConfig tiny_config(bool with_intent) {
  model::EncoderConfig c;
  c.vocab_size = 24;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 16;
  c.max_turns = 4;
  c.cls_token_id = 2;
  c.projection_views = {"I"};
  c.projection_dim = 8;
  c.num_labels = with_intent ? 3 : 0;
  return c;
}

/// Writes the bundle into `tmp`/`name` and returns its folder. Weights are N(0, 0.02) plus
/// N(0, 0.1) noise from seed `seed`, so vectors differ between inputs.
inline std::string make_tiny_bundle(const dialtree::testing::TempDir& tmp, bool with_intent,
                                    const std::string& name = "bundle", int seed = 7) {
  const std::string vocab = tmp.file(name + "-vocab.txt");
  std::ofstream(vocab) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n[unused0]\n[unused1]\n[unused2]\n"
                          "[unused3]\ni\nlost\nmy\ncard\nthe\nbank\ntransfer\nmoney\nhello\n"
                          "where\nis\n##s\nhow\ncan\nhelp\n";
  data::WordPieceOptions o;
  o.special = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const std::string tok_dir = tmp.file(name + "-tok");
  data::save_wordpiece_tokenizer_config(tok_dir, vocab, o);
  torch::manual_seed(seed);
  model::SpaceModel net(tiny_config(with_intent));
  {
    torch::NoGradGuard g;
    for (auto& p : net->parameters()) p.add_(torch::randn_like(p) * 0.1);
  }
  net->eval();
  model::BundleInfo info;
  if (with_intent) info.intent_labels = {"card_lost", "transfer", "greeting"};
  const std::string dir = tmp.file(name);
  model::save_bundle(dir, *net, tok_dir, info);
  return dir;
}

}  // namespace dialtree::serve::testing
