// Collation of serialised dialog examples (data/serialize.h, docs/method.md §1.5 step 7) into the
// padded int64 tensors of one encoder forward pass (model/batch.h).
#pragma once

#include <cstdint>
#include <vector>

#include "model/torch_api.h"

#include "data/serialize.h"
#include "model/batch.h"

namespace dialtree::model {

/// Label value of a position that is not an MLM target (PyTorch's cross-entropy ignore_index).
inline constexpr std::int64_t kIgnoreLabel = -100;

/// An encoder batch plus its MLM targets.
struct CollatedBatch {
  EncoderInputs inputs;
  torch::Tensor mlm_labels;  ///< int64 [B, L]; kIgnoreLabel on non-targets and padding;
                             ///< undefined when collate() was given no labels
};

/// Right-pads `examples` with 0 to the longest one (L = max length, 0 for an empty batch or
/// all-empty examples) into int64 [B, L] CPU tensors; attention_mask is 1 on real tokens.
/// B = examples.size() (B = 1 stays [1, L]).
/// @throws std::invalid_argument naming the example (index and dialog id) if its four id
///   arrays differ in length.
EncoderInputs collate(const std::vector<data::SerializedExample>& examples);

/// Per-token labels padded as collate() pads `examples`: `labels[b]` has one entry per token of
/// example b (a target id, or kIgnoreLabel); padding gets kIgnoreLabel. -> int64 [B, L] on the
/// CPU, L as collate()'s (MLM targets, or the token-level tree term's slot ids).
/// @throws std::invalid_argument naming the example if labels.size() != examples.size() or a
///   label vector's length differs from its example's.
torch::Tensor collate_labels(const std::vector<data::SerializedExample>& examples,
                             const std::vector<std::vector<std::int32_t>>& labels);

/// collate() plus MLM labels (collate_labels()).
/// @throws std::invalid_argument as collate() and collate_labels().
CollatedBatch collate(const std::vector<data::SerializedExample>& examples,
                      const std::vector<std::vector<std::int32_t>>& labels);

}  // namespace dialtree::model
