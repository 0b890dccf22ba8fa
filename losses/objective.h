// The per-step pre-training objective of SPACE-2 (docs/method.md §4.3, learning_method=semi): a
// pure combination of already computed loss parts with the config weights.
#pragma once

#include <ATen/core/Tensor.h>

namespace dialtree::losses {

/// Weights of the objective (docs/method.md §4.3 defaults). Each must be finite and >= 0.
struct ObjectiveWeights {
  double contrastive_weight = 1.0;  ///< weight of L_sup (labelled batch)
  double mlm_weight = 0.1;          ///< SPACE-2's mlm_ratio, on both MLM losses
  double self_weight = 1.0;         ///< weight of L_self (unlabelled batch)
  /// weight of the token-level tree term (labelled batch; docs/training.md "A token-level tree
  /// term"); 0 = SPACE-2's objective
  double token_contrastive_weight = 0.0;
};

/// The four loss parts of one step, each a 0-d (or one-element) floating tensor. An undefined
/// tensor means the part is absent (e.g. no unlabelled stream) and contributes 0.
struct ObjectiveParts {
  at::Tensor sup;             ///< L_sup, multi_view_supcon_loss() on the labelled batch
  at::Tensor mlm_labelled;    ///< MLM_l, mlm_loss() on the labelled batch
  at::Tensor self;            ///< L_self, multi_view_supcon_loss() with identity masks
  at::Tensor mlm_unlabelled;  ///< MLM_u, mlm_loss() on the unlabelled batch
  at::Tensor token;           ///< L_token, token_supcon_loss() on the labelled batch's mentions
};

/// The combined objective: the differentiable total plus unweighted and weighted values for
/// logging (absent parts log 0).
struct Objective {
  at::Tensor total;  ///< 0-d, = labelled + unlabelled; call backward() on this
  double total_value = 0.0;
  /// contrastive_weight·L_sup + mlm_weight·MLM_l + token_contrastive_weight·L_token
  double labelled = 0.0;
  double unlabelled = 0.0;  ///< self_weight·L_self + mlm_weight·MLM_u
  double sup = 0.0;         ///< L_sup (unweighted)
  double mlm_labelled = 0.0;
  double self = 0.0;
  double mlm_unlabelled = 0.0;
  double token_contrastive = 0.0;  ///< L_token (unweighted; 0 when absent)
  /// Replaced-token detection only (trainer::forward_backward fills them; 0 otherwise): the
  /// generator's MLM loss and the discriminator's BCE, each the mean over the present streams.
  double generator_mlm = 0.0;
  double replaced_token = 0.0;
  /// With loss.encoder_mlm_weight > 0: the encoder's MLM loss on the corrupted input (else 0).
  double encoder_mlm = 0.0;
};

/// L = [contrastive_weight·L_sup + mlm_weight·MLM_l + token_contrastive_weight·L_token]
///   + [self_weight·L_self + mlm_weight·MLM_u]
/// (docs/method.md §4.3, L_token docs/training.md "A token-level tree term"; there is no weight
/// between the labelled and unlabelled halves). Reading
/// the logged doubles costs one device sync per present part.
/// @throws std::invalid_argument if every part is absent, a present part is not a floating
///   tensor with exactly one element, or a weight is negative or not finite.
Objective combine_objective(const ObjectiveParts& parts, const ObjectiveWeights& weights = {});

}  // namespace dialtree::losses
