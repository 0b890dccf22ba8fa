// The per-batch computations of intent fine-tuning (eval/finetune.cpp), exposed for the
// fine-tuning benchmark (bench/bench_finetune.cpp) so that it times exactly this code.
#pragma once

#include <cstdint>
#include <vector>

#include "model/torch_api.h"

#include "model/batch.h"
#include "model/collate.h"
#include "model/encoder.h"

namespace dialtree::eval {

/// The terms of SPACE-2's intent fine-tuning loss beyond cross-entropy (docs/evaluation.md
/// "Fine-tuning recipe"): L = CE + rdrop_weight·KL + mlm_weight·MLM.
struct IntentLossTerms {
  double rdrop_weight = 0;  ///< R-Drop: 0 = one forward pass, no KL term
  double mlm_weight = 0;    ///< auxiliary MLM on `masked`; 0 = none (masked is then ignored)
  const model::CollatedBatch* masked = nullptr;  ///< the masked copy of the batch (MLM targets)
};

/// R-Drop's symmetric KL between the class distributions of two passes: `logits_p`,
/// `logits_q` float [B, C] -> 0-d, ½[KL(p‖q) + KL(q‖p)] summed over classes and averaged over
/// rows (p, q = softmax of each). @throws std::invalid_argument if the shapes differ.
torch::Tensor symmetric_kl(const torch::Tensor& logits_p, const torch::Tensor& logits_q);

/// Loss of the intent classifier on the [CLS] head vector for one training batch: `inputs`
/// int64 [B, L], `labels` int64 [B] class ids. Cross-entropy; with terms.rdrop_weight > 0 the
/// batch runs twice in one [2B, L] forward (two dropout masks), CE is the mean over the 2B rows
/// and ½[KL(p‖q) + KL(q‖p)] (summed over classes, mean over rows) is added with that weight;
/// with terms.mlm_weight > 0 the token-mean MLM loss of terms.masked is added. Forward under
/// bf16 autocast when `bf16`, the losses in fp32 (0-d). The caller runs backward and the
/// optimiser step.
/// @throws std::logic_error if the model has no intent head; std::invalid_argument on shapes
///   or if mlm_weight > 0 without a masked batch.
torch::Tensor intent_batch_loss(model::SpaceModel& net, const model::EncoderInputs& inputs,
                                const torch::Tensor& labels, bool bf16,
                                const IntentLossTerms& terms = {});

/// Arg-max intent class of every row of `inputs` (int64 [B, L]) -> B ids, in row order. Runs
/// under the caller's mode (call net->eval() and hold a torch::InferenceMode for prediction).
/// @throws as intent_batch_loss().
std::vector<std::int64_t> predict_intent_batch(model::SpaceModel& net,
                                               const model::EncoderInputs& inputs, bool bf16);

}  // namespace dialtree::eval
