// ELECTRA's replaced-token detection heads (Clark et al., ICLR 2020) for the language stage
// (docs/training.md "Replaced-token detection"): a small generator that fills masked positions,
// and the discriminator head that reads the encoder's token states and tells, for every token,
// whether it is the original or a replacement. A training-time module beside the SpaceModel:
// the bundle keeps the encoder only; checkpoints keep this module in its own file for resume.
//
// Parameter names follow Hugging Face ELECTRA where the part exists there:
//   generator.embeddings.{position,token_type,turn}_embeddings.weight, generator.embeddings
//     .LayerNorm.*, generator.encoder.layer.N.*   (the generator's own encoder body; its word
//     embeddings are the discriminator's, bert.embeddings.word_embeddings.weight)
//   generator_predictions.dense.{weight,bias}, generator_predictions.LayerNorm.{weight,bias}
//   generator_lm_head.bias          (the decoder weight is the shared word-embedding table)
//   discriminator_predictions.dense.{weight,bias}, discriminator_predictions.dense_prediction
//     .{weight,bias}
#pragma once

#include <cstdint>

#include "model/torch_api.h"

#include "model/batch.h"
#include "model/config.h"
#include "model/encoder.h"

namespace dialtree::model {

/// The generator layers of a generator of `size` (a fraction of the encoder's depth, (0, 1]):
/// round(size · num_hidden_layers), at least 1. The generator keeps the encoder's width, heads
/// and feed-forward size, so that the token embeddings are shared without a projection (the
/// same-width, shallower generator of DeBERTa-v3, He et al., ICLR 2023).
/// @throws std::invalid_argument if size is not in (0, 1] or num_hidden_layers < 1.
std::int64_t generator_layers(double size, std::int64_t num_hidden_layers);

/// The generator and the discriminator head. Built after the SpaceModel whose word-embedding
/// table it shares; initialised as HF BERT (init_bert_style), from torch's global RNG.
class ReplacedTokenDetectionImpl : public torch::nn::Module {
 public:
  /// `encoder`: the discriminator's config; `word_embeddings`: its table [V, H]
  /// (SpaceModel::encoder()->word_embeddings()); `layers`: the generator's depth (>= 1).
  /// @throws std::invalid_argument if layers < 1 or the table does not fit the config.
  ReplacedTokenDetectionImpl(const EncoderConfig& encoder, torch::Tensor word_embeddings,
                             std::int64_t layers);

  /// The generator's MLM logits of the target rows, float [N, V] (N = targets' true count,
  /// row-major), from the masked inputs `masked` (int64 [B, L]) and `targets` (bool [B, L]):
  /// the generator body's forward_rows, then dense -> GELU -> LayerNorm -> h·E_tokᵀ + bias.
  /// Runs under the caller's autocast. @throws as DialogEncoder::forward_rows().
  torch::Tensor generator_logits(const EncoderInputs& masked, const torch::Tensor& targets);

  /// The discriminator's logits, float32 [M], from token states `hidden` [M, H] (any float
  /// dtype): dense -> GELU -> dense_prediction (ELECTRA's ElectraDiscriminatorPredictions).
  /// Positive means "replaced". @throws std::invalid_argument if hidden is not [M, H].
  torch::Tensor discriminator_logits(const torch::Tensor& hidden);

  DialogEncoder& generator() { return generator_; }

 private:
  DialogEncoder generator_{nullptr};
  torch::Tensor word_;  // the discriminator's table, shared (not registered here)
  torch::Tensor gen_dense_w_, gen_dense_b_, gen_ln_w_, gen_ln_b_, gen_bias_;
  torch::Tensor disc_dense_w_, disc_dense_b_, disc_out_w_, disc_out_b_;
  double layer_norm_eps_ = 1e-12;
};
TORCH_MODULE(ReplacedTokenDetection);

}  // namespace dialtree::model
