// The discriminator side of ELECTRA's replaced-token detection (Clark et al., ICLR 2020, §2;
// docs/training.md "Replaced-token detection"): the corrupted input built from the generator's
// samples, and the per-token binary cross-entropy over every real token.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace dialtree::losses {

/// The discriminator's input and targets.
struct CorruptedInput {
  at::Tensor input_ids;  ///< int64 [B, L]: the original ids with the targets' samples in place
  at::Tensor replaced;   ///< bool [B, L]: true where the id differs from the original; false on
                         ///< padding and wherever a sample equals the original (ELECTRA §2)
};

/// Builds the corrupted input: the original sequence is `masked_ids` with each target position
/// restored to its label (`mlm_labels` != ignore_index marks the targets; the label is the
/// original id), then the targets get `sampled` in row-major order.
/// @param masked_ids int64 [B, L]: the generator's (masked) input ids
/// @param mlm_labels int64 [B, L]: original id at targets, ignore_index elsewhere
/// @param sampled int64 [N]: one id per target, N = number of targets
/// @param attention_mask [B, L]: 1 real, 0 padding
/// @throws std::invalid_argument if shapes or dtypes differ from the above.
CorruptedInput corrupt_targets(const at::Tensor& masked_ids, const at::Tensor& mlm_labels,
                               const at::Tensor& sampled, const at::Tensor& attention_mask,
                               std::int64_t ignore_index = -100);

/// Mean binary cross-entropy with logits over M tokens (ELECTRA's L_Disc up to the 1/M of its
/// mean): −[y·log σ(x) + (1−y)·log(1−σ(x))], computed in float32. Exactly 0 (gradient 0) when
/// M = 0.
/// @param logits float [M]: the discriminator's scores, positive = "replaced"
/// @param replaced bool or float [M]: 1 where the token was replaced
/// @throws std::invalid_argument if the shapes differ or logits are not floating point.
at::Tensor replaced_token_loss(const at::Tensor& logits, const at::Tensor& replaced);

}  // namespace dialtree::losses
