#include "trainer/step.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "losses/contrastive.h"
#include "losses/mlm.h"
#include "losses/replaced_token.h"

namespace dialtree::trainer {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The token-level tree term of the doubled batch's final states `hidden` [2B, L+1, H] ([CLS]
// first) and the slot ids `token_slots` [B, L]: token_supcon_loss() over the mention tokens in
// fp32; undefined when the batch has none.
torch::Tensor token_contrastive_loss(const torch::Tensor& hidden, const torch::Tensor& token_slots,
                                     const losses::ContrastiveOptions& options) {
  const std::int64_t b = token_slots.size(0);
  const torch::Tensor chosen = token_slots.ne(model::kIgnoreLabel);  // [B, L]
  if (!chosen.any().item<bool>()) return {};
  model::AutocastOff fp32_loss(hidden.device().type());
  const torch::Tensor rows = hidden.slice(1, 1).to(torch::kFloat32);  // [2B, L, H]
  return losses::token_supcon_loss(rows.slice(0, 0, b).index({chosen}),
                                   rows.slice(0, b, 2 * b).index({chosen}),
                                   token_slots.index({chosen}), options);
}

}  // namespace

StreamBatch to_device(const StreamBatch& batch, const torch::Device& device, bool non_blocking) {
  StreamBatch out = batch;
  out.inputs = model::to_device(batch.inputs, device, non_blocking);
  out.masked = model::to_device(batch.masked, device, non_blocking);
  out.masks = model::to_device(batch.masks, device, non_blocking);
  if (batch.token_slots.defined()) {
    out.token_slots = batch.token_slots.to(device, /*non_blocking=*/non_blocking);
  }
  return out;
}

model::EncoderInputs doubled(const model::EncoderInputs& in) {
  auto twice = [](const torch::Tensor& t) { return torch::cat({t, t}, 0); };
  return {twice(in.input_ids), twice(in.attention_mask), twice(in.position_ids), twice(in.role_ids),
          twice(in.turn_ids)};
}

torch::Tensor masked_lm_loss(model::SpaceModel& net, const model::CollatedBatch& masked) {
  const torch::Tensor targets = masked.mlm_labels.ne(model::kIgnoreLabel);
  // [N, H]: only the MLM targets; the last block's feed-forward runs for them alone.
  const torch::Tensor rows = net->forward_rows(masked.inputs, targets);
  return losses::mlm_loss(net->mlm_logits(rows), masked.mlm_labels.index({targets}));
}

StreamLosses replaced_token_detection_loss(model::SpaceModel& net,
                                           model::ReplacedTokenDetectionImpl& rtd,
                                           const model::CollatedBatch& masked,
                                           double discriminator_weight,
                                           double encoder_mlm_weight) {
  const torch::Tensor targets = masked.mlm_labels.ne(model::kIgnoreLabel);
  StreamLosses out;
  const torch::Tensor logits = rtd.generator_logits(masked.inputs, targets);  // [N, V]
  out.generator_mlm = losses::mlm_loss(logits, masked.mlm_labels.index({targets}));
  torch::Tensor sampled;
  {
    torch::NoGradGuard no_grad;
    sampled = logits.size(0) == 0
                  ? torch::empty({0}, masked.mlm_labels.options())
                  : torch::multinomial(torch::softmax(logits.detach().to(torch::kFloat32), -1), 1)
                        .squeeze(1);
  }
  const losses::CorruptedInput corrupted =
      losses::corrupt_targets(masked.inputs.input_ids, masked.mlm_labels, sampled,
                              masked.inputs.attention_mask, model::kIgnoreLabel);
  model::EncoderInputs inputs = masked.inputs;
  inputs.input_ids = corrupted.input_ids;
  const torch::Tensor real = masked.inputs.attention_mask.ne(0);
  // [B, L, H]; its real rows [M, H] (padding-free: the blocks see real rows only).
  const torch::Tensor hidden = net->forward(inputs, /*prepend_cls=*/false);
  const torch::Tensor rows = hidden.index({real});
  out.replaced_token =
      losses::replaced_token_loss(rtd.discriminator_logits(rows), corrupted.replaced.index({real}));
  out.mlm = out.generator_mlm + out.replaced_token * discriminator_weight;
  if (encoder_mlm_weight > 0) {
    out.encoder_mlm = losses::mlm_loss(net->mlm_logits(hidden.index({targets})),
                                       masked.mlm_labels.index({targets}));
    out.mlm = out.mlm + out.encoder_mlm * encoder_mlm_weight;
  }
  return out;
}

std::vector<torch::Tensor> trained_parameters(model::SpaceModel& net,
                                              model::ReplacedTokenDetectionImpl* rtd) {
  std::vector<torch::Tensor> out = net->parameters();
  if (rtd != nullptr) {
    for (const auto& p : rtd->parameters()) out.push_back(p);
  }
  return out;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(model::SpaceModel& net, double lr,
                                                double weight_decay, double beta1, double beta2,
                                                double eps) {
  return make_adamw(net->parameters(), lr, weight_decay, beta1, beta2, eps);
}

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params,
                                                double lr, double weight_decay, double beta1,
                                                double beta2, double eps) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto group_options = [&](double wd) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(lr);
    o->betas({beta1, beta2}).eps(eps).weight_decay(wd);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, group_options(weight_decay));
  groups.emplace_back(no_decay, group_options(0.0));
  torch::optim::AdamWOptions defaults(lr);
  defaults.betas({beta1, beta2}).eps(eps).weight_decay(weight_decay);
  return std::make_unique<torch::optim::AdamW>(std::move(groups), defaults);
}

double lr_factor(std::int64_t step, std::int64_t warmup, std::int64_t total) {
  if (step < warmup)
    return static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(1, warmup));
  return std::max(0.0, static_cast<double>(total - step) /
                           static_cast<double>(std::max<std::int64_t>(1, total - warmup)));
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

StreamLosses stream_losses(model::SpaceModel& net, const StreamBatch& batch,
                           const losses::ContrastiveOptions& options, bool contrastive,
                           const LanguageObjective& language) {
  const std::int64_t b = batch.inputs.input_ids.size(0);
  StreamLosses out;
  if (language.rtd != nullptr) {
    out = replaced_token_detection_loss(net, *language.rtd, batch.masked,
                                        language.discriminator_weight,
                                        language.encoder_mlm_weight);
  } else {
    out.mlm = masked_lm_loss(net, batch.masked);
  }
  const bool tokens = batch.token_slots.defined();
  if (!contrastive && !tokens) return out;
  torch::Tensor cls;  // [2B, H]
  if (tokens) {
    // The token-level tree term reads every row of the last block: the full forward.
    const torch::Tensor hidden = net->forward(doubled(batch.inputs), /*prepend_cls=*/true);
    out.token_contrastive = token_contrastive_loss(hidden, batch.token_slots, options);
    cls = hidden.select(1, 0);
  } else {
    // Only the [CLS] row of the last block feeds the loss: forward_cls skips the other rows'
    // queries, output projection and feed-forward there (same values and gradients).
    cls = net->forward_cls(doubled(batch.inputs));
  }
  if (contrastive) {
    model::AutocastOff fp32_head(cls.device().type());
    const torch::Tensor proj = net->project(cls.to(torch::kFloat32));
    torch::Tensor view1 = proj.slice(0, 0, b), view2 = proj.slice(0, b, 2 * b);
    DataParallelGroup* group = batch.gather_group;
    if (group != nullptr) {
      // Both views are gathered in the same rank order, so row i of view1 and view2 stay the
      // same example (the mismatch of sentence-transformers PR #3453 cannot arise).
      auto gather = [&](const torch::Tensor& v) {
        const auto shape = v.sizes().vec();
        std::vector<std::int64_t> gathered_shape = shape;
        gathered_shape[0] = -1;
        return group->all_gather_rows(v.reshape({b, -1}), batch.gather_rows)
            .reshape(gathered_shape);
      };
      view1 = gather(view1), view2 = gather(view2);
    }
    out.contrastive = losses::multi_view_supcon_loss(view1, view2, batch.masks, options);
    if (group != nullptr && group->world_size() > 1) {
      // Same value, gradient scaled by world_size: see the header.
      const double w = group->world_size();
      out.contrastive = out.contrastive * w - out.contrastive.detach() * (w - 1);
    }
  }
  return out;
}

losses::Objective forward_backward(model::SpaceModel& net, const StreamBatch* labelled,
                                   const StreamBatch* unlabelled,
                                   const losses::ObjectiveWeights& weights,
                                   const losses::ContrastiveOptions& options, bool bf16,
                                   double loss_scale, StepPhases* phases,
                                   const LanguageObjective& language) {
  if (labelled == nullptr && unlabelled == nullptr)
    throw std::invalid_argument("forward_backward: no labelled and no unlabelled batch");
  StepPhases local;
  losses::ObjectiveParts parts;
  StreamLosses streams[2];  // labelled, unlabelled
  {
    model::AutocastScope autocast(bf16, model::module_device(*net).type());
    auto t = std::chrono::steady_clock::now();
    if (labelled != nullptr) {
      streams[0] = stream_losses(net, *labelled, options, weights.contrastive_weight > 0,
                                 language);
      parts.sup = streams[0].contrastive, parts.mlm_labelled = streams[0].mlm;
      parts.token = streams[0].token_contrastive;
    }
    local.labelled = seconds_since(t);
    t = std::chrono::steady_clock::now();
    if (unlabelled != nullptr) {
      streams[1] = stream_losses(net, *unlabelled, options, weights.self_weight > 0, language);
      parts.self = streams[1].contrastive, parts.mlm_unlabelled = streams[1].mlm;
    }
    local.unlabelled = seconds_since(t);
  }
  auto t = std::chrono::steady_clock::now();
  losses::Objective obj = losses::combine_objective(parts, weights);
  if (language.rtd != nullptr) {
    const double present = (labelled != nullptr ? 1.0 : 0.0) + (unlabelled != nullptr ? 1.0 : 0.0);
    for (const StreamLosses& s : streams) {
      if (!s.generator_mlm.defined()) continue;
      obj.generator_mlm += s.generator_mlm.item<double>() / present;
      obj.replaced_token += s.replaced_token.item<double>() / present;
      if (s.encoder_mlm.defined()) obj.encoder_mlm += s.encoder_mlm.item<double>() / present;
    }
  }
  local.objective = seconds_since(t);
  t = std::chrono::steady_clock::now();
  (obj.total * loss_scale).backward();
  local.backward = seconds_since(t);
  if (phases != nullptr) *phases = local;
  return obj;
}

}  // namespace dialtree::trainer
