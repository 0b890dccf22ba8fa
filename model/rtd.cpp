#include "model/rtd.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dialtree::model {
namespace {

/// Registers an uninitialised float parameter `name` in a new empty child `group` of `root`
/// (reproducing HF's dotted names) and returns it.
torch::Tensor rtd_param(torch::nn::Module& group, const std::string& name,
                        std::vector<std::int64_t> shape) {
  return group.register_parameter(name, torch::empty(shape, torch::kFloat32));
}

std::shared_ptr<torch::nn::Module> rtd_group(torch::nn::Module& root, const std::string& name) {
  return root.register_module(name, std::make_shared<torch::nn::Module>());
}

}  // namespace

std::int64_t generator_layers(double size, std::int64_t num_hidden_layers) {
  if (!(size > 0.0 && size <= 1.0)) {
    throw std::invalid_argument("generator size must be in (0, 1], got " + std::to_string(size));
  }
  if (num_hidden_layers < 1) {
    throw std::invalid_argument("generator_layers: the encoder has no layer");
  }
  return std::max<std::int64_t>(
      1, std::llround(size * static_cast<double>(num_hidden_layers)));
}

ReplacedTokenDetectionImpl::ReplacedTokenDetectionImpl(const EncoderConfig& encoder,
                                                       torch::Tensor word_embeddings,
                                                       std::int64_t layers) {
  if (layers < 1) {
    throw std::invalid_argument("ReplacedTokenDetection: the generator needs at least 1 layer, "
                                "got " + std::to_string(layers));
  }
  EncoderConfig g = encoder;
  g.num_hidden_layers = layers;
  g.num_labels = 0;
  g.num_tags = 0;
  const std::int64_t H = g.hidden_size, V = g.vocab_size;
  layer_norm_eps_ = g.layer_norm_eps;
  word_ = word_embeddings;
  generator_ =
      register_module("generator", DialogEncoder(std::move(g), std::move(word_embeddings)));
  auto pred = rtd_group(*this, "generator_predictions");
  auto gen_dense = rtd_group(*pred, "dense");
  gen_dense_w_ = rtd_param(*gen_dense, "weight", {H, H});
  gen_dense_b_ = rtd_param(*gen_dense, "bias", {H});
  auto ln = rtd_group(*pred, "LayerNorm");
  gen_ln_w_ = rtd_param(*ln, "weight", {H});
  gen_ln_b_ = rtd_param(*ln, "bias", {H});
  gen_bias_ = rtd_param(*rtd_group(*this, "generator_lm_head"), "bias", {V});
  auto disc = rtd_group(*this, "discriminator_predictions");
  auto dense = rtd_group(*disc, "dense");
  disc_dense_w_ = rtd_param(*dense, "weight", {H, H});
  disc_dense_b_ = rtd_param(*dense, "bias", {H});
  auto out = rtd_group(*disc, "dense_prediction");
  disc_out_w_ = rtd_param(*out, "weight", {1, H});
  disc_out_b_ = rtd_param(*out, "bias", {1});
  // The generator body initialised itself; the heads get the same HF BERT rule.
  init_bert_style(*this, encoder.initializer_range);
}

torch::Tensor ReplacedTokenDetectionImpl::generator_logits(const EncoderInputs& masked,
                                                           const torch::Tensor& targets) {
  const torch::Tensor rows = generator_->forward_rows(masked, targets);
  torch::Tensor t = torch::gelu(torch::linear(rows, gen_dense_w_, gen_dense_b_));
  // LayerNorm in fp32 (autocast leaves a bf16 input here; see model/encoder.cpp).
  t = torch::layer_norm(t.to(gen_ln_w_.scalar_type()), {t.size(-1)}, gen_ln_w_, gen_ln_b_,
                        layer_norm_eps_);
  return torch::linear(t, word_, gen_bias_);
}

torch::Tensor ReplacedTokenDetectionImpl::discriminator_logits(const torch::Tensor& hidden) {
  if (hidden.dim() != 2 || hidden.size(1) != disc_dense_w_.size(1)) {
    std::ostringstream msg;
    msg << "discriminator_logits: expected token states [M, " << disc_dense_w_.size(1)
        << "], got " << hidden.sizes();
    throw std::invalid_argument(msg.str());
  }
  const torch::Tensor t = torch::gelu(torch::linear(hidden, disc_dense_w_, disc_dense_b_));
  return torch::linear(t, disc_out_w_, disc_out_b_).squeeze(1).to(torch::kFloat32);
}

}  // namespace dialtree::model
