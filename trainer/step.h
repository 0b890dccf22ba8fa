// One SPACE-2 pretraining micro-step on already collated tensors (docs/method.md §4.1-§4.3): the
// contrastive pass of each stream (two dropout views in one 2B forward), its MLM pass on the
// masked copy, the combined objective and its backward. Shared by the trainer
// (trainer/pretrain.cpp) and the training-step benchmark (bench/bench_train_step.cpp), so the
// benchmark times exactly the trainer's code. Data preparation (serialising, masking, tree
// scores) stays with the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "model/torch_api.h"

#include "losses/contrastive.h"
#include "losses/objective.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "model/rtd.h"
#include "trainer/distributed.h"

namespace dialtree::trainer {

/// The tensors of one stream's batch of B examples.
struct StreamBatch {
  model::EncoderInputs inputs;  ///< unmasked int64 [B, L] (the contrastive pass)
  torch::Tensor masks;          ///< soft positives: float [K, B, B] or [B, B]; undefined = identity
                                ///< (unlabelled, docs/method.md §4.1 L_self)
  model::CollatedBatch masked;  ///< the MLM copy: masked input_ids and mlm_labels [B, L]
  /// Labelled batches with loss.token_contrastive_weight > 0 only (else undefined): int64 [B, L]
  /// aligned with inputs, the slot id of each value-mention token (PretrainExample::span_slots),
  /// model::kIgnoreLabel elsewhere (docs/training.md "A token-level tree term").
  torch::Tensor token_slots;
  /// Cross-rank candidates (loss.gather_across_devices): when set, the projected views of
  /// every rank's batch are all-gathered before the contrastive loss, and `masks` must cover
  /// the gathered batch ([K, G, G] or [G, G], G = sum of gather_rows, rank order).
  DataParallelGroup* gather_group = nullptr;
  std::vector<std::int64_t> gather_rows;  ///< batch rows of each rank, in rank order
};

/// `batch` with its inputs, MLM copy and soft masks on `device` (model::to_device: the same
/// tensors when already there; pinned, non-blocking host copies to CUDA with `non_blocking`).
StreamBatch to_device(const StreamBatch& batch, const torch::Device& device,
                      bool non_blocking = false);

/// The language objective of a step (docs/training.md "Replaced-token detection"): masked
/// language modelling when `rtd` is null (the default), else ELECTRA's replaced-token detection
/// with that generator and discriminator head.
struct LanguageObjective {
  model::ReplacedTokenDetectionImpl* rtd = nullptr;
  double discriminator_weight = 50.0;  ///< ELECTRA's λ on the discriminator's loss
  double encoder_mlm_weight = 0.0;     ///< the encoder's own MLM loss beside it (0: ELECTRA's)
};

/// The two losses of one stream's batch (0-d float tensors, differentiable).
struct StreamLosses {
  torch::Tensor contrastive;  ///< multi_view_supcon_loss of the two dropout views
  /// The language term: the token-mean MLM loss over the masked copy's targets, or with
  /// replaced-token detection generator_mlm + discriminator_weight · replaced_token.
  torch::Tensor mlm;
  torch::Tensor generator_mlm;   ///< RTD only: the generator's token-mean MLM loss
  torch::Tensor replaced_token;  ///< RTD only: the discriminator's mean BCE over real tokens
  /// RTD with encoder_mlm_weight > 0 only: the encoder's token-mean MLM loss at the masked
  /// positions of the corrupted input (targets: the original ids).
  torch::Tensor encoder_mlm;
  /// With batch.token_slots defined and at least one mention token: token_supcon_loss() over
  /// the mention tokens' final states in the two dropout views (else undefined).
  torch::Tensor token_contrastive;
};

/// ELECTRA's replaced-token detection on one masked batch (Clark et al., ICLR 2020, §2): the
/// generator's MLM loss on the targets (its last block for the target rows only); an id drawn
/// for each target from the generator's softmax (temperature 1, torch's global RNG, no
/// gradient); the encoder (the discriminator; plain, no [CLS], padding-free) on the corrupted
/// input; its head's per-token BCE over every real token. With `encoder_mlm_weight` > 0 the
/// encoder's own MLM head also predicts the original id at every masked position of the
/// corrupted input (its token-mean cross-entropy, encoder_mlm). Returns the loss parts of
/// StreamLosses (mlm = generator_mlm + discriminator_weight · replaced_token
/// [+ encoder_mlm_weight · encoder_mlm]). Runs under the caller's autocast.
/// @throws std::invalid_argument from the encoder or the losses on inconsistent shapes.
StreamLosses replaced_token_detection_loss(model::SpaceModel& net,
                                           model::ReplacedTokenDetectionImpl& rtd,
                                           const model::CollatedBatch& masked,
                                           double discriminator_weight,
                                           double encoder_mlm_weight = 0.0);

/// The contrastive pass (one forward of the batch doubled to 2B, with [CLS], through
/// forward_cls: the last block computes only the [CLS] rows that the loss reads; projection head
/// and loss in fp32 even under autocast, because at τ = 0.07 a bf16 cosine would quantise the
/// logits in steps of ~0.06) and the MLM pass (plain encoder without [CLS] on `masked`, only
/// the target rows go through the MLM head), docs/method.md §4.1-§4.2.
/// With batch.gather_group set, the loss is over the gathered views of all ranks; its value is
/// that global loss, its gradient is world_size times the gradient through this rank's rows
/// (so that DataParallelGroup::average_gradients() yields the global loss's gradient).
/// With `contrastive` false the contrastive pass is skipped (its loss left undefined, i.e.
/// absent), e.g. for MLM-only pretraining where its weight is 0.
/// With batch.token_slots defined, the contrastive pass runs the whole last block (forward(),
/// not forward_cls()) and also returns token_contrastive, per rank (never gathered), in fp32.
/// @throws std::invalid_argument from the encoder or the losses on inconsistent shapes.
/// The language term is `language`'s (MLM by default).
StreamLosses stream_losses(model::SpaceModel& net, const StreamBatch& batch,
                           const losses::ContrastiveOptions& options, bool contrastive = true,
                           const LanguageObjective& language = {});

/// The batch repeated twice along dim 0: int64 [B, L] -> [2B, L] for every tensor of `in` (the
/// two dropout views of one forward pass: the contrastive pass here, R-Drop in fine-tuning).
model::EncoderInputs doubled(const model::EncoderInputs& in);

/// Token-mean MLM loss of one masked batch (docs/training.md "What a step does"): the
/// plain encoder (no [CLS]) on `masked.inputs`, only the target rows (mlm_labels !=
/// kIgnoreLabel) go through the last block's feed-forward (forward_rows, docs/performance.md
/// "The MLM pass") and the MLM head. 0-d float; exactly 0 with no target. Runs under the
/// caller's autocast. Shared by pretraining and the fine-tuning recipe's auxiliary MLM term.
/// @throws std::invalid_argument from the encoder or the loss on inconsistent shapes.
torch::Tensor masked_lm_loss(model::SpaceModel& net, const model::CollatedBatch& masked);

/// Wall-clock seconds spent in the phases of forward_backward() (for the benchmark).
struct StepPhases {
  double labelled = 0, unlabelled = 0, objective = 0, backward = 0;
};

/// One micro-step: stream_losses() of the labelled and/or unlabelled batch (null = stream
/// absent; a contrastive pass whose weight is 0 is skipped, not computed and multiplied by 0)
/// under bf16 autocast (on the model's device type, model::AutocastScope) when `bf16`,
/// combine_objective(), then backward of total · loss_scale (1 / gradient_accumulation_steps).
/// Gradients accumulate into the parameters' .grad(); the caller zeroes them, clips and steps the
/// optimiser.
/// With replaced-token detection (`language`), the MLM parts of the objective are each
/// stream's language term, and the returned Objective's generator_mlm, replaced_token and
/// encoder_mlm are the means over the present streams.
/// @param phases if not null, receives the phase times of this call
/// @throws std::invalid_argument if both batches are null, or as stream_losses().
losses::Objective forward_backward(model::SpaceModel& net, const StreamBatch* labelled,
                                   const StreamBatch* unlabelled,
                                   const losses::ObjectiveWeights& weights,
                                   const losses::ContrastiveOptions& options, bool bf16,
                                   double loss_scale, StepPhases* phases = nullptr,
                                   const LanguageObjective& language = {});

/// AdamW as HF's Trainer builds it: weight decay on matrices only (no decay on biases and
/// LayerNorm gains, i.e. 1-D parameters), betas (beta1, beta2), epsilon `eps`, learning rate
/// `lr` (the schedule sets it per step).
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, double lr,
                                                double weight_decay, double beta1, double beta2,
                                                double eps);

/// Every parameter a step trains: the model's, then (when not null) the RTD module's, in that
/// order (the optimiser's, the clipping's and the data-parallel averaging's one list).
std::vector<torch::Tensor> trained_parameters(model::SpaceModel& net,
                                              model::ReplacedTokenDetectionImpl* rtd);

/// make_adamw() over the parameters of `net`.
std::unique_ptr<torch::optim::AdamW> make_adamw(model::SpaceModel& net, double lr,
                                                double weight_decay, double beta1, double beta2,
                                                double eps);

/// HF get_linear_schedule_with_warmup: the learning-rate factor of optimiser step `step`
/// (0-based): step/warmup during warm-up, then linear decay to 0 at `total`.
double lr_factor(std::int64_t step, std::int64_t warmup, std::int64_t total);

/// Sets the learning rate of every parameter group of `opt`.
void set_lr(torch::optim::AdamW& opt, double lr);

}  // namespace dialtree::trainer
