// The per-batch computations of intent fine-tuning (eval/finetune.cpp), exposed for the
// fine-tuning benchmark (bench/bench_finetune.cpp) so that it times exactly this code.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "model/batch.h"
#include "model/encoder.h"

namespace dialtree::eval {

/// Cross-entropy of the intent classifier on the [CLS] head vector for one training batch:
/// `inputs` int64 [B, L], `labels` int64 [B] class ids; forward under bf16 autocast when
/// `bf16`, the loss in fp32 (0-d). The caller runs backward and the optimiser step.
/// @throws std::logic_error if the model has no intent head; std::invalid_argument on shapes.
torch::Tensor intent_batch_loss(model::SpaceModel& net, const model::EncoderInputs& inputs,
                                const torch::Tensor& labels, bool bf16);

/// Arg-max intent class of every row of `inputs` (int64 [B, L]) -> B ids, in row order. Runs
/// under the caller's mode (call net->eval() and hold a torch::InferenceMode for prediction).
/// @throws as intent_batch_loss().
std::vector<std::int64_t> predict_intent_batch(model::SpaceModel& net,
                                               const model::EncoderInputs& inputs, bool bf16);

}  // namespace dialtree::eval
