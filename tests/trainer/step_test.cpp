// trainer/step.h: the pretraining micro-step, padded and padding-free (docs/performance.md
// "Padding-free batches").
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "model/torch_api.h"

#include "losses/mlm.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "serve/tiny_bundle.h"
#include "trainer/step.h"

namespace dialtree::trainer {
namespace {

/// The server tests' tiny encoder (2 layers, 32 wide, 24 ids, one projection view "I") with
/// three views and every dropout 0.
model::EncoderConfig tiny_config() {
  model::EncoderConfig c = serve::testing::tiny_config(/*with_intent=*/false);
  c.projection_views = {"D", "I", "S"};
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.0;
  c.embedding_dropout_prob = c.ffn_dropout_prob = 0.0;
  return c;
}

/// An example of `len` tokens with positions restarting every 6 tokens (utterances), roles and
/// turns per utterance, ids from `seed`.
data::SerializedExample example(int len, int seed) {
  data::SerializedExample ex;
  for (int i = 0; i < len; ++i) {
    ex.input_ids.push_back(5 + (seed * 13 + i * 7) % 19);
    ex.position_ids.push_back(i % 6);
    ex.role_ids.push_back((i / 6) % 2);
    ex.turn_ids.push_back(1 + (i / 6) % 4);
  }
  return ex;
}

/// A stream batch of mixed lengths (as real pretraining batches: single utterances beside
/// contexts of up to 30 tokens): soft masks [3, B, B] and ~20% MLM targets.
StreamBatch mixed_batch(const std::vector<int>& lengths, int seed) {
  std::vector<data::SerializedExample> xs;
  std::vector<std::vector<std::int32_t>> labels;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    xs.push_back(example(lengths[i], seed + static_cast<int>(i)));
    std::vector<std::int32_t> lab(static_cast<std::size_t>(lengths[i]),
                                  static_cast<std::int32_t>(model::kIgnoreLabel));
    for (std::size_t t = i % 5; t < lab.size(); t += 5) lab[t] = xs.back().input_ids[t];
    labels.push_back(std::move(lab));
  }
  StreamBatch b;
  b.inputs = model::collate(xs);
  std::vector<data::SerializedExample> masked = xs;
  for (std::size_t i = 0; i < masked.size(); ++i) {
    for (std::size_t t = i % 5; t < masked[i].input_ids.size(); t += 5) masked[i].input_ids[t] = 3;
  }
  b.masked = model::collate(masked, labels);
  const auto B = static_cast<std::int64_t>(lengths.size());
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  torch::Tensor m = torch::rand({3, B, B});
  m = (m + m.transpose(1, 2)) / 2;
  b.masks = m.masked_fill(torch::eye(B).to(torch::kBool).unsqueeze(0), 1.0);
  return b;
}

/// Every parameter's gradient (zeros where none), cloned.
std::vector<torch::Tensor> grads_of(model::SpaceModel& net) {
  std::vector<torch::Tensor> out;
  for (const auto& p : net->parameters()) {
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return out;
}

/// Every parameter's gradient in `got` within `tolerance` of `ref`'s, relative to the largest
/// entry of `ref`'s (at least 1e-3); failures name the parameter and the path.
void expect_grads_close(model::SpaceModel& net, const std::vector<torch::Tensor>& got,
                        const std::vector<torch::Tensor>& ref, double tolerance,
                        bool padding_free) {
  const auto params = net->named_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double scale = std::max(1e-3, ref[i].abs().max().item<double>());
    EXPECT_LT((got[i] - ref[i]).abs().max().item<double>() / scale, tolerance)
        << params[i].key() << (padding_free ? " padding-free" : " padded");
  }
}

struct StepResult {
  losses::Objective objective;
  std::vector<torch::Tensor> grads;
};

StepResult run_step(model::SpaceModel& net, bool padding_free, const StreamBatch& lab,
                    const StreamBatch& unl) {
  net->encoder()->set_padding_free(padding_free);
  net->zero_grad();
  losses::ContrastiveOptions copt;
  copt.shard_size = 4;  // shards of 4 over batches of 7: per-example semantics must hold
  StepResult r;
  r.objective = forward_backward(net, &lab, &unl, losses::ObjectiveWeights{1.0, 0.1, 1.0}, copt,
                                 /*bf16=*/false, /*loss_scale=*/1.0);
  r.grads = grads_of(net);
  return r;
}

TEST(PaddingFree, SameLossesAndGradientsAsPaddedBatchesWithDropoutZero) {
  torch::manual_seed(7);
  model::SpaceModel net(tiny_config());
  net->train();  // training mode; every dropout is 0, so both paths are deterministic
  const StreamBatch lab = mixed_batch({3, 30, 5, 12, 4, 27, 8}, 1);
  const StreamBatch unl = mixed_batch({9, 2, 2, 31, 6, 6, 18}, 50);
  // The batches really carry padding (what the padding-free path removes).
  const double real = lab.inputs.attention_mask.sum().item<double>();
  ASSERT_LT(real / static_cast<double>(lab.inputs.attention_mask.numel()), 0.6);

  const StepResult padded = run_step(net, false, lab, unl);
  const StepResult packed = run_step(net, true, lab, unl);
  EXPECT_NEAR(packed.objective.total_value, padded.objective.total_value, 1e-5);
  EXPECT_NEAR(packed.objective.sup, padded.objective.sup, 1e-5);
  EXPECT_NEAR(packed.objective.self, padded.objective.self, 1e-5);
  EXPECT_NEAR(packed.objective.mlm_labelled, padded.objective.mlm_labelled, 1e-5);
  EXPECT_NEAR(packed.objective.mlm_unlabelled, padded.objective.mlm_unlabelled, 1e-5);
  // Non-trivial losses (not a degenerate 0 = 0).
  EXPECT_GT(padded.objective.sup, 0.1);
  EXPECT_GT(padded.objective.mlm_labelled, 1.0);

  const auto params = net->named_parameters();
  ASSERT_EQ(padded.grads.size(), params.size());
  double largest = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& a = padded.grads[i];
    const torch::Tensor& b = packed.grads[i];
    const double scale = std::max(1e-3, a.abs().max().item<double>());
    largest = std::max(largest, a.abs().max().item<double>());
    // 5e-4: the BLAS kernel set changes fp32 summation order (1.5e-4 seen with OpenBLAS's
    // Haswell kernels on a Zen 4 CPU); unmasked padding gives errors of order 1.
    EXPECT_LT((a - b).abs().max().item<double>() / scale, 5e-4) << params[i].key();
  }
  EXPECT_GT(largest, 1e-3);  // gradients are really there
}

TEST(Cuda, StepZeroLossesAndGradientsMatchTheCpuWithDropoutZero) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU visible to LibTorch";
  const torch::Device cuda = model::resolve_device("cuda", "test");
  torch::manual_seed(11);
  model::SpaceModel cpu(tiny_config());
  model::SpaceModel gpu(tiny_config());
  {
    torch::NoGradGuard no_grad;
    const auto a = cpu->parameters();
    const auto b = gpu->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  gpu->to(cuda);
  cpu->train();
  gpu->train();
  const StreamBatch lab = mixed_batch({3, 30, 5, 12, 4, 27, 8}, 1);
  const StreamBatch unl = mixed_batch({9, 2, 2, 31, 6, 6, 18}, 50);
  for (const bool padding_free : {false, true}) {
    const StepResult want = run_step(cpu, padding_free, lab, unl);
    const StepResult got = run_step(gpu, padding_free, to_device(lab, cuda), to_device(unl, cuda));
    EXPECT_NEAR(got.objective.total_value, want.objective.total_value, 1e-4) << padding_free;
    EXPECT_NEAR(got.objective.sup, want.objective.sup, 1e-4);
    EXPECT_NEAR(got.objective.mlm_labelled, want.objective.mlm_labelled, 1e-4);
    const auto params = cpu->named_parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double scale = std::max(1e-3, want.grads[i].abs().max().item<double>());
      EXPECT_LT((got.grads[i].to(torch::kCPU) - want.grads[i]).abs().max().item<double>() / scale,
                1e-3)
          << params[i].key() << (padding_free ? " padding-free" : " padded");
    }
  }
}

TEST(ContrastivePass, ClsOnlyLastBlockGivesTheFullForwardsLossAndGradients) {
  // stream_losses() runs the contrastive pass through forward_cls (the last block for [CLS]
  // only); the reference is the full forward's row 0, padded and padding-free.
  torch::manual_seed(5);
  model::SpaceModel net(tiny_config());
  net->train();
  const StreamBatch b = mixed_batch({3, 30, 5, 12, 4, 27, 8}, 2);
  const std::int64_t B = 7;
  losses::ContrastiveOptions copt;
  copt.shard_size = 4;
  for (const bool padding_free : {false, true}) {
    net->encoder()->set_padding_free(padding_free);
    net->zero_grad();
    const torch::Tensor got = stream_losses(net, b, copt).contrastive;
    got.backward();
    const std::vector<torch::Tensor> got_grads = grads_of(net);
    net->zero_grad();
    const torch::Tensor hidden = net->forward(doubled(b.inputs), /*prepend_cls=*/true);
    const torch::Tensor proj = net->project(model::SpaceModelImpl::cls_vector(hidden));
    const torch::Tensor ref =
        losses::multi_view_supcon_loss(proj.slice(0, 0, B), proj.slice(0, B, 2 * B), b.masks, copt);
    ref.backward();
    const std::vector<torch::Tensor> ref_grads = grads_of(net);
    EXPECT_GT(ref.item<double>(), 0.1);
    EXPECT_NEAR(got.item<double>(), ref.item<double>(), 1e-5) << padding_free;
    // fp32 rounding of differently shaped products, amplified by 1/τ = 14 (seen: 1.1e-4).
    expect_grads_close(net, got_grads, ref_grads, 1e-3, padding_free);
  }
}

TEST(TokenTerm, MentionTokensOfTheFullForwardGiveTheTokenLossWithFiniteGradients) {
  // docs/training.md "A token-level tree term": with token_slots, stream_losses() runs the full
  // forward of the doubled batch and returns token_supcon_loss() over the chosen tokens' rows
  // (gathered here by a loop, example by example, position by position); the [CLS] loss stays
  // what forward_cls gives. Padded and padding-free; dropout 0, so the two views are equal.
  torch::manual_seed(5);
  model::SpaceModel net(tiny_config());
  net->train();
  const std::vector<int> lengths{3, 30, 5, 12, 4, 27, 8};
  StreamBatch b = mixed_batch(lengths, 2);
  const std::int64_t B = 7, L = b.inputs.input_ids.size(1);
  b.token_slots = torch::full({B, L}, model::kIgnoreLabel, torch::kLong);
  std::vector<std::pair<std::int64_t, std::int64_t>> chosen;  // (example, position)
  std::vector<std::int64_t> slot_of;
  for (std::int64_t i = 0; i < B; ++i) {
    for (std::int64_t t = 1; t < lengths[static_cast<std::size_t>(i)]; t += 4) {
      b.token_slots[i][t] = (t / 4 + i) % 3;
      chosen.emplace_back(i, t);
      slot_of.push_back((t / 4 + i) % 3);
    }
  }
  losses::ContrastiveOptions copt;
  copt.shard_size = 4;
  StreamBatch plain = b;
  plain.token_slots = torch::Tensor();
  for (const bool padding_free : {false, true}) {
    net->encoder()->set_padding_free(padding_free);
    const torch::Tensor cls_only = stream_losses(net, plain, copt).contrastive.detach();
    EXPECT_FALSE(stream_losses(net, plain, copt).token_contrastive.defined());
    net->zero_grad();
    const StreamLosses got = stream_losses(net, b, copt);
    ASSERT_TRUE(got.token_contrastive.defined());
    EXPECT_NEAR(got.contrastive.item<double>(), cls_only.item<double>(), 1e-5) << padding_free;
    got.token_contrastive.backward();
    const std::vector<torch::Tensor> got_grads = grads_of(net);
    double norm = 0;
    for (const auto& g : got_grads) {
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>());
      norm += g.pow(2).sum().item<double>();
    }
    EXPECT_GT(norm, 0.0);

    const torch::Tensor hidden = net->forward(doubled(b.inputs), /*prepend_cls=*/true).detach();
    std::vector<torch::Tensor> z1, z2;
    for (const auto& [i, t] : chosen) {
      z1.push_back(hidden[i][t + 1]);
      z2.push_back(hidden[B + i][t + 1]);
    }
    const torch::Tensor ref = losses::token_supcon_loss(torch::stack(z1), torch::stack(z2),
                                                        torch::tensor(slot_of, torch::kLong), copt);
    EXPECT_GT(ref.item<double>(), 0.1);
    EXPECT_NEAR(got.token_contrastive.item<double>(), ref.item<double>(), 1e-5) << padding_free;
  }
  // No mention token in the batch: the term is absent.
  StreamBatch none = b;
  none.token_slots = torch::full({B, L}, model::kIgnoreLabel, torch::kLong);
  EXPECT_FALSE(stream_losses(net, none, copt).token_contrastive.defined());
  // forward_backward weighs it into the labelled half.
  net->zero_grad();
  losses::ObjectiveWeights w{1.0, 0.1, 1.0, 0.5};
  const losses::Objective o = forward_backward(net, &b, nullptr, w, copt, false, 1.0);
  EXPECT_GT(o.token_contrastive, 0.1);
  EXPECT_NEAR(o.labelled, o.sup + 0.1 * o.mlm_labelled + 0.5 * o.token_contrastive, 1e-9);
}

TEST(MlmPass, TargetRowsOnlyLastBlockGivesTheFullForwardsLossAndGradients) {
  // masked_lm_loss() runs the MLM pass through forward_rows (the last block's feed-forward for
  // the target rows only); the reference is the full plain forward's target rows, padded and
  // padding-free. Targets: every 5th token from a per-example offset (mixed_batch), 18 rows.
  torch::manual_seed(6);
  model::SpaceModel net(tiny_config());
  net->train();
  const StreamBatch b = mixed_batch({3, 30, 5, 12, 4, 27, 8}, 3);
  const torch::Tensor targets = b.masked.mlm_labels.ne(model::kIgnoreLabel);
  ASSERT_EQ(targets.sum().item<std::int64_t>(), 18);
  for (const bool padding_free : {false, true}) {
    net->encoder()->set_padding_free(padding_free);
    net->zero_grad();
    const torch::Tensor got = masked_lm_loss(net, b.masked);
    got.backward();
    const std::vector<torch::Tensor> got_grads = grads_of(net);
    net->zero_grad();
    const torch::Tensor rows = net->forward(b.masked.inputs, /*prepend_cls=*/false).index({targets});
    const torch::Tensor ref =
        losses::mlm_loss(net->mlm_logits(rows), b.masked.mlm_labels.index({targets}));
    ref.backward();
    const std::vector<torch::Tensor> ref_grads = grads_of(net);
    EXPECT_NEAR(ref.item<double>(), std::log(24.0), 0.5);  // about ln(vocab) at initialisation
    EXPECT_NEAR(got.item<double>(), ref.item<double>(), 1e-5) << padding_free;
    EXPECT_LT((net->forward_rows(b.masked.inputs, targets) - rows).abs().max().item<double>(), 1e-5)
        << padding_free;
    expect_grads_close(net, got_grads, ref_grads, 1e-4, padding_free);
  }
}

TEST(MlmPass, ForwardRowsRejectsBadTargets) {
  model::SpaceModel net(tiny_config());
  const StreamBatch b = mixed_batch({3, 8}, 1);  // example 0 has 5 padding positions
  const torch::Tensor targets = b.masked.mlm_labels.ne(model::kIgnoreLabel);
  EXPECT_THROW(
      {
        try {
          net->forward_rows(b.masked.inputs, targets.to(torch::kLong));
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("targets must be bool"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  torch::Tensor on_padding = targets.clone();
  on_padding.index_put_({0, 6}, true);
  EXPECT_THROW(
      {
        try {
          net->forward_rows(b.masked.inputs, on_padding);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("padding position"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  // No target at all: an empty [0, H], no error.
  EXPECT_EQ(net->forward_rows(b.masked.inputs, torch::zeros_like(targets)).size(0), 0);
}

TEST(PaddingFree, PaddingRowsAreZeroAndRealRowsMatchThePaddedForward) {
  torch::manual_seed(3);
  model::SpaceModel net(tiny_config());
  net->eval();
  torch::NoGradGuard no_grad;
  const StreamBatch b = mixed_batch({4, 1, 22, 9}, 9);
  for (const bool cls : {true, false}) {
    net->encoder()->set_padding_free(false);
    const torch::Tensor padded = net->forward(b.inputs, cls);
    net->encoder()->set_padding_free(true);
    const torch::Tensor packed = net->forward(b.inputs, cls);
    ASSERT_EQ(packed.sizes(), padded.sizes());
    torch::Tensor visible = b.inputs.attention_mask.ne(0);
    if (cls) visible = torch::cat({visible.slice(1, 0, 1), visible}, 1);
    const torch::Tensor real = visible.unsqueeze(-1).expand_as(packed);
    EXPECT_LT((packed - padded).masked_select(real).abs().max().item<float>(), 1e-5f) << cls;
    EXPECT_EQ(packed.masked_select(real.logical_not()).abs().max().item<float>(), 0.0f) << cls;
  }
}

}  // namespace
}  // namespace dialtree::trainer

namespace dialtree::trainer {
namespace {

// Replaced-token detection (docs/training.md "Replaced-token detection") at step 0 against a
// plain-LibTorch reference: the generator's full padded forward and its head written out, its
// cross-entropy, the same multinomial draw (same seed, dropout 0), the corrupted input built
// from the unmasked originals, the discriminator's padded forward and head written out, and
// the mean BCE; with loss.encoder_mlm_weight 2, also the encoder's MLM head at the masked
// positions of the corrupted input against the original ids. Padded and padding-free paths both
// match; every gradient is finite, and every part the objective uses (the shared word
// embeddings, the generator, both heads, the encoder's MLM head only with its weight) is trained.
TEST(ReplacedTokenDetection, StepZeroLossesMatchAPlainLibTorchReferenceWithFiniteGradients) {
  torch::manual_seed(3);
  model::SpaceModel net(tiny_config());
  model::ReplacedTokenDetection rtd(net->config(), net->encoder()->word_embeddings(), 1);
  EXPECT_EQ(rtd->generator()->config().num_hidden_layers, 1);
  for (const auto& item : rtd->named_parameters()) {
    EXPECT_EQ(item.key().find("word_embeddings"), std::string::npos) << item.key();
  }
  const StreamBatch b = mixed_batch({9, 4, 17, 6, 12}, 5);
  const torch::Tensor targets = b.masked.mlm_labels.ne(model::kIgnoreLabel);
  const torch::Tensor real = b.inputs.attention_mask.ne(0);
  for (const double encoder_mlm_weight : {0.0, 2.0})
  for (const bool padding_free : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "encoder_mlm_weight " << encoder_mlm_weight);
    net->encoder()->set_padding_free(padding_free);
    rtd->generator()->set_padding_free(padding_free);
    net->zero_grad();
    rtd->zero_grad();
    torch::manual_seed(99);
    const StreamLosses got =
        replaced_token_detection_loss(net, *rtd, b.masked, 50.0, encoder_mlm_weight);

    // The reference.
    torch::NoGradGuard no_grad;
    net->encoder()->set_padding_free(false);
    rtd->generator()->set_padding_free(false);
    torch::manual_seed(99);
    auto p = rtd->named_parameters();
    const torch::Tensor h = rtd->generator()->forward(b.masked.inputs, false).index({targets});
    torch::Tensor t = torch::gelu(torch::linear(h, p["generator_predictions.dense.weight"],
                                                p["generator_predictions.dense.bias"]));
    t = torch::layer_norm(t, {t.size(1)}, p["generator_predictions.LayerNorm.weight"],
                          p["generator_predictions.LayerNorm.bias"], 1e-12);
    const torch::Tensor logits =
        torch::linear(t, net->encoder()->word_embeddings(), p["generator_lm_head.bias"]);
    const double generator_ref =
        at::cross_entropy_loss(logits, b.masked.mlm_labels.index({targets})).item<double>();
    const torch::Tensor sampled = torch::multinomial(torch::softmax(logits, -1), 1).squeeze(1);
    const torch::Tensor original = b.inputs.input_ids;  // the unmasked batch
    torch::Tensor corrupted = original.clone();
    corrupted.index_put_({targets}, sampled);
    const torch::Tensor replaced = corrupted.ne(original).index({real}).to(torch::kFloat32);
    ASSERT_GT(replaced.sum().item<double>(), 0);
    ASSERT_LT(replaced.sum().item<double>(), replaced.numel());
    model::EncoderInputs in = b.inputs;
    in.input_ids = corrupted;
    const torch::Tensor hidden = net->forward(in, false);
    const torch::Tensor rows = hidden.index({real});
    const double encoder_mlm_ref =
        at::cross_entropy_loss(net->mlm_logits(hidden.index({targets})),
                               b.masked.mlm_labels.index({targets}))
            .item<double>();
    const torch::Tensor x =
        torch::linear(torch::gelu(torch::linear(rows, p["discriminator_predictions.dense.weight"],
                                                p["discriminator_predictions.dense.bias"])),
                      p["discriminator_predictions.dense_prediction.weight"],
                      p["discriminator_predictions.dense_prediction.bias"])
            .squeeze(1);
    const double bce_ref = at::binary_cross_entropy_with_logits(x, replaced).item<double>();

    EXPECT_NEAR(got.generator_mlm.item<double>(), generator_ref, 1e-5) << padding_free;
    EXPECT_NEAR(got.replaced_token.item<double>(), bce_ref, 1e-5) << padding_free;
    EXPECT_NEAR(got.mlm.item<double>(),
                generator_ref + 50.0 * bce_ref + encoder_mlm_weight * encoder_mlm_ref, 1e-3)
        << padding_free;
    ASSERT_EQ(got.encoder_mlm.defined(), encoder_mlm_weight > 0);
    if (encoder_mlm_weight > 0) {
      EXPECT_NEAR(got.encoder_mlm.item<double>(), encoder_mlm_ref, 1e-5) << padding_free;
    }
    EXPECT_FALSE(got.contrastive.defined());
    {
      torch::AutoGradMode grad_on(true);
      got.mlm.backward();
    }
    // Finite everywhere; the shared table, the generator and both heads are trained; the
    // encoder's own MLM head only with its weight.
    for (const auto& item : net->named_parameters()) {
      const torch::Tensor& g = item.value().grad();
      const bool mlm_head =
          item.key().rfind("cls.predictions", 0) == 0 && encoder_mlm_weight == 0;
      if (item.key().rfind("projection", 0) == 0) continue;  // the contrastive head: unused
      ASSERT_EQ(g.defined() && g.abs().sum().item<double>() > 0, !mlm_head) << item.key();
      if (g.defined()) EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << item.key();
    }
    for (const auto& item : rtd->named_parameters()) {
      const torch::Tensor& g = item.value().grad();
      ASSERT_TRUE(g.defined()) << item.key();
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << item.key();
    }
  }
}

}  // namespace
}  // namespace dialtree::trainer
