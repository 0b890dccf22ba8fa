// Masked-language-model loss with SPACE-2's token-level mean (docs/method.md §4.2,
// token_loss=true).
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace dialtree::losses {

/// The label of a position that is not an MLM target (data::kMlmIgnoreLabel).
inline constexpr std::int64_t kIgnoreIndex = -100;

/// The MLM loss and the two numbers it is made of. Keeping the sum and the count lets callers
/// recombine the token mean over several shards or batches (Σ nll_sum / Σ num_targets), as
/// SPACE-2's DataParallel run did (docs/method.md §4.5).
struct MlmLossParts {
  at::Tensor loss;         ///< 0-d: nll_sum / max(num_targets, 1); differentiable
  at::Tensor nll_sum;      ///< 0-d: Σ over target tokens of −log p(label); differentiable
  at::Tensor num_targets;  ///< 0-d int64: number of labels != ignore_index
};

/// Token-level MLM loss (docs/method.md §4.2): total NLL over the target tokens divided by their
/// number. With no target at all the loss is exactly 0 (not NaN) and its gradient is all zeros.
/// Log-probabilities are log_softmax in float32 (float64 for double logits), so half/bfloat16
/// logits are fine. SPACE-2 takes log(softmax + 1e-12) instead, which caps a token's NLL at
/// ~27.6; the two agree to ~1e-12 relative otherwise.
/// @param logits float [B, L, V] or [N, V]: scores over the vocabulary (logits for every
///   position, or only for gathered positions)
/// @param labels integer [B, L] or [N] (any integer dtype, same device): target ids in [0, V),
///   or ignore_index for positions that are not targets
/// @throws std::invalid_argument if the shapes do not match ([B, L] with [B, L, V], or [N] with
///   [N, V]), logits are not floating point, labels are not integers, or a label that is not
///   ignore_index lies outside [0, V) (checked up front: one device sync, so that a bad label
///   cannot trigger a CUDA device-side assert).
MlmLossParts mlm_loss_parts(const at::Tensor& logits, const at::Tensor& labels,
                            std::int64_t ignore_index = kIgnoreIndex);

/// mlm_loss_parts(logits, labels, ignore_index).loss: 0-d float tensor.
/// @throws as mlm_loss_parts().
at::Tensor mlm_loss(const at::Tensor& logits, const at::Tensor& labels,
                    std::int64_t ignore_index = kIgnoreIndex);

}  // namespace dialtree::losses
