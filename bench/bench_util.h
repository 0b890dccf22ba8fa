// Small helpers shared by the LibTorch benchmarks (bench_train_step, bench_finetune).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/clock.h"
#include "model/config.h"

namespace dialtree::bench {

using Clock = std::chrono::steady_clock;

using dialtree::seconds_since;  // common/clock.h

/// CPU seconds used by the whole process so far (all threads, user + system).
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Median of `v` (0 for an empty vector).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

/// configs/pretrain-small.yaml `model:` with the tokenizer's 8000 pieces and special ids, every
/// dropout probability set to `dropout` (the config's is 0.1).
inline model::EncoderConfig small_config(double dropout) {
  model::EncoderConfig c;
  c.vocab_size = 8000;
  c.hidden_size = 256;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.intermediate_size = 1024;
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  c.embedding_dropout_prob = dropout;
  c.ffn_dropout_prob = dropout;
  c.max_position_embeddings = 64;
  c.layer_norm_eps = 1e-12;
  c.type_vocab_size = 2;
  c.initializer_range = 0.02;
  c.max_turns = 16;
  c.projection_views = sts::view_name_list();
  c.projection_dim = 256;
  c.pad_token_id = 0;
  c.cls_token_id = 101;
  c.validate();
  return c;
}

}  // namespace dialtree::bench
