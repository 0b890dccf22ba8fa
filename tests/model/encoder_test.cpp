// model/: config, collation, the SPACE-2 encoder (docs/method.md §1.2) and its heads (§1.6).
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "model/collate.h"
#include "model/config.h"
#include "model/encoder.h"

namespace dialtree::model {
namespace {

using ::testing::HasSubstr;

EncoderConfig tiny_config(std::int64_t layers = 2) {
  EncoderConfig c;
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 4;
  c.intermediate_size = 64;
  c.max_position_embeddings = 16;
  c.max_turns = 4;
  c.cls_token_id = 2;
  c.projection_dim = 8;
  c.num_labels = 3;
  c.num_tags = 5;
  return c;
}

data::SerializedExample example(std::vector<std::int32_t> ids, std::string id = "") {
  data::SerializedExample ex;
  const std::size_t n = ids.size();
  ex.input_ids = std::move(ids);
  for (std::size_t i = 0; i < n; ++i) {
    ex.position_ids.push_back(static_cast<std::int32_t>(i % 5));
    ex.role_ids.push_back(static_cast<std::int32_t>((i / 5) % 2));
    ex.turn_ids.push_back(static_cast<std::int32_t>(1 + (i / 5) % 4));
  }
  ex.dialog_id = std::move(id);
  return ex;
}

/// Overwrites every parameter with random values (LayerNorm gains around 1), so that a wrong
/// bias or LayerNorm wiring shows up in the comparisons.
void randomize(torch::nn::Module& m, std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard g;
  for (auto& p : m.named_parameters()) {
    const bool gain = p.key().find("LayerNorm.weight") != std::string::npos;
    p.value().copy_(torch::randn_like(p.value()) * 0.3 + (gain ? 1.0 : 0.0));
  }
}

/// RAII CPU bf16 autocast region, like Python's torch.autocast("cpu").
struct CpuBf16Autocast {
  CpuBf16Autocast() {
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~CpuBf16Autocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(false);
  }
};

TEST(EncoderConfig, JsonRoundTripDefaultsAndErrorsNamingTheKey) {
  const EncoderConfig c = tiny_config();
  const EncoderConfig back =
      encoder_config_from_json(nlohmann::json::parse(encoder_config_to_json(c).dump()), "c.json");
  EXPECT_EQ(encoder_config_to_json(back), encoder_config_to_json(c));
  EXPECT_EQ(back.projection_views.size(), 10u);

  // Absent keys: SPACE-2 dropouts follow hidden_dropout_prob, projection_dim follows hidden.
  const EncoderConfig d = encoder_config_from_json(
      {{"hidden_size", 64}, {"num_attention_heads", 4}, {"hidden_dropout_prob", 0.2}}, "c.json");
  EXPECT_EQ(d.projection_dim, 64);
  EXPECT_DOUBLE_EQ(d.embedding_dropout_prob, 0.2);
  EXPECT_DOUBLE_EQ(d.ffn_dropout_prob, 0.2);
  EXPECT_EQ(d.projection_views, sts::view_name_list());
  EXPECT_EQ(d.max_turns, 16);

  auto error_of = [](const nlohmann::json& j) -> std::string {
    try {
      encoder_config_from_json(j, "dir/config.json");
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(error_of({{"hiden_size", 8}}),
              AllOf(HasSubstr("dir/config.json"), HasSubstr("hiden_size"),
                    HasSubstr("did you mean 'hidden_size'")));
  EXPECT_THAT(error_of({{"num_hidden_layers", "4"}}),
              AllOf(HasSubstr("num_hidden_layers"), HasSubstr("integer"), HasSubstr("string")));
  EXPECT_THAT(error_of({{"num_hidden_layers", 4.5}}), HasSubstr("num_hidden_layers"));
  EXPECT_THAT(error_of({{"layer_norm_eps", true}}), HasSubstr("layer_norm_eps"));
  EXPECT_THAT(error_of({{"hidden_size", 30}, {"num_attention_heads", 4}}),
              AllOf(HasSubstr("hidden_size"), HasSubstr("divisible")));
  EXPECT_THAT(error_of({{"projection_views", {"I", "XX"}}}),
              AllOf(HasSubstr("projection_views"), HasSubstr("XX")));
  EXPECT_THAT(error_of({{"projection_views", {"I", "I"}}}), HasSubstr("listed twice"));
  EXPECT_THAT(error_of({{"projection_views", {"I", 3}}}), HasSubstr("projection_views[1]"));
  EXPECT_THAT(error_of({{"hidden_dropout_prob", 1.0}}), HasSubstr("hidden_dropout_prob"));
  EXPECT_THAT(error_of({{"cls_token_id", 30522}}), HasSubstr("cls_token_id"));
  EXPECT_THAT(error_of({{"hidden_act", "relu"}}), HasSubstr("hidden_act"));
  EXPECT_THAT(error_of(nlohmann::json::array()), HasSubstr("object"));

  EncoderConfig bad = tiny_config();
  bad.max_turns = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  EXPECT_THROW(SpaceModel{bad}, std::invalid_argument);
}

TEST(Collate, PadsRightBuildsMaskAndLabelsKeepsBatchOfOne) {
  const std::vector<data::SerializedExample> batch = {example({5, 6, 7}),
                                                      example({8, 9, 10, 11, 12, 13})};
  const EncoderInputs in = collate(batch);
  ASSERT_EQ(in.input_ids.sizes(), (std::vector<std::int64_t>{2, 6}));
  for (const auto* t :
       {&in.input_ids, &in.attention_mask, &in.position_ids, &in.role_ids, &in.turn_ids}) {
    EXPECT_EQ(t->scalar_type(), torch::kInt64);
    EXPECT_EQ(t->sizes(), in.input_ids.sizes());
  }
  EXPECT_TRUE(torch::equal(
      in.input_ids,
      torch::tensor({5, 6, 7, 0, 0, 0, 8, 9, 10, 11, 12, 13}, torch::kInt64).view({2, 6})));
  EXPECT_TRUE(torch::equal(
      in.attention_mask,
      torch::tensor({1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1}, torch::kInt64).view({2, 6})));
  EXPECT_TRUE(torch::equal(in.turn_ids[1], torch::tensor({1, 1, 1, 1, 1, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(in.position_ids[1], torch::tensor({0, 1, 2, 3, 4, 0}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(in.role_ids[1], torch::tensor({0, 0, 0, 0, 0, 1}, torch::kInt64)));
  EXPECT_EQ(in.turn_ids[0][3].item<std::int64_t>(), 0);  // padding turn id

  const CollatedBatch lb = collate(batch, {{-100, 3, -100}, {-100, -100, -100, 4, -100, -100}});
  EXPECT_TRUE(torch::equal(lb.mlm_labels, torch::tensor({-100, 3, -100, -100, -100, -100, -100,
                                                         -100, -100, 4, -100, -100},
                                                        torch::kInt64)
                                              .view({2, 6})));
  EXPECT_TRUE(torch::equal(lb.inputs.input_ids, in.input_ids));
  // The labels alone, padded the same way (the token-level tree term's slot ids).
  EXPECT_TRUE(torch::equal(collate_labels(batch, {{-100, 3, -100}, {-100, -100, -100, 4, -100, -100}}),
                           lb.mlm_labels));
  EXPECT_EQ(collate_labels({}, {}).sizes(), (std::vector<std::int64_t>{0, 0}));

  const EncoderInputs one = collate({example({5, 6})});
  EXPECT_EQ(one.input_ids.sizes(), (std::vector<std::int64_t>{1, 2}));
  const EncoderInputs none = collate({});
  EXPECT_EQ(none.input_ids.sizes(), (std::vector<std::int64_t>{0, 0}));

  data::SerializedExample broken = example({5, 6, 7}, "sgd/1");
  broken.turn_ids.pop_back();
  try {
    collate({example({1}), broken});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("example 1"), HasSubstr("sgd/1")));
  }
  EXPECT_THROW(collate(batch, {{1, 2, 3}}), std::invalid_argument);
  try {
    collate(batch, {{1, 2, 3}, {1}});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("example 1"));
  }
}

TEST(SpaceModel, ParameterNamesAreTheHfBertListPlusOurs) {
  SpaceModel model(tiny_config(2));
  std::set<std::string> names;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  std::set<std::string> expected = {"bert.embeddings.word_embeddings.weight",
                                    "bert.embeddings.position_embeddings.weight",
                                    "bert.embeddings.token_type_embeddings.weight",
                                    "bert.embeddings.turn_embeddings.weight",
                                    "bert.embeddings.LayerNorm.weight",
                                    "bert.embeddings.LayerNorm.bias",
                                    "cls.predictions.transform.dense.weight",
                                    "cls.predictions.transform.dense.bias",
                                    "cls.predictions.transform.LayerNorm.weight",
                                    "cls.predictions.transform.LayerNorm.bias",
                                    "cls.predictions.bias",
                                    "projection.dense.weight",
                                    "projection.dense.bias",
                                    "intent_classifier.weight",
                                    "intent_classifier.bias",
                                    "token_classifier.weight",
                                    "token_classifier.bias"};
  for (int n = 0; n < 2; ++n) {
    const std::string p = "bert.encoder.layer." + std::to_string(n) + ".";
    for (const char* part : {"attention.self.query", "attention.self.key", "attention.self.value",
                             "attention.output.dense", "attention.output.LayerNorm",
                             "intermediate.dense", "output.dense", "output.LayerNorm"}) {
      expected.insert(p + part + ".weight");
      expected.insert(p + part + ".bias");
    }
  }
  EXPECT_EQ(names, expected);

  auto params = model->named_parameters();
  EXPECT_EQ(params["bert.embeddings.turn_embeddings.weight"].sizes(),
            (std::vector<std::int64_t>{5, 32}));
  EXPECT_EQ(params["bert.embeddings.token_type_embeddings.weight"].sizes(),
            (std::vector<std::int64_t>{2, 32}));
  EXPECT_EQ(params["bert.encoder.layer.1.intermediate.dense.weight"].sizes(),
            (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(params["projection.dense.weight"].sizes(), (std::vector<std::int64_t>{80, 32}));
  EXPECT_EQ(params["cls.predictions.bias"].sizes(), (std::vector<std::int64_t>{40}));
  // HF initialisation: LayerNorm 1/0, biases 0, weights with std ~ initializer_range.
  EXPECT_TRUE(torch::equal(params["bert.embeddings.LayerNorm.weight"], torch::ones({32})));
  EXPECT_TRUE(torch::equal(params["bert.encoder.layer.0.output.dense.bias"], torch::zeros({32})));
  EXPECT_NEAR(params["bert.embeddings.word_embeddings.weight"].std().item<double>(), 0.02, 0.004);

  // Optional heads are absent at 0 labels; the projection follows projection_views.
  EncoderConfig c = tiny_config(1);
  c.num_labels = 0;
  c.num_tags = 0;
  c.projection_views = {"I", "DISV"};
  SpaceModel bare(c);
  names.clear();
  for (const auto& p : bare->named_parameters()) names.insert(p.key());
  EXPECT_EQ(names.count("intent_classifier.weight"), 0u);
  EXPECT_EQ(names.count("token_classifier.weight"), 0u);
  EXPECT_EQ(names.size(), 13u + 16u);
  EXPECT_FALSE(bare->has_intent_head());
  EXPECT_THROW(bare->intent_logits(torch::zeros({1, 32})), std::logic_error);
  EXPECT_THROW(bare->tag_logits(torch::zeros({1, 3, 32})), std::logic_error);
  EXPECT_EQ(bare->project(torch::zeros({3, 32})).sizes(), (std::vector<std::int64_t>{3, 2, 8}));
}

float ln_eps() {
  return 1e-12f;
}

torch::Tensor ref_layer_norm(const torch::Tensor& x, const torch::Tensor& w,
                             const torch::Tensor& b) {
  const torch::Tensor mean = x.mean(-1, true);
  const torch::Tensor var = (x - mean).pow(2).mean(-1, true);
  return (x - mean) / torch::sqrt(var + ln_eps()) * w + b;
}

torch::Tensor ref_gelu(const torch::Tensor& x) {
  return 0.5 * x * (1.0 + torch::erf(x / std::sqrt(2.0)));
}

TEST(DialogEncoder, MatchesAHandWrittenOneLayerForwardWithTheBareClsRow) {
  SpaceModel model(tiny_config(1));
  randomize(*model, 7);
  model->eval();
  torch::NoGradGuard g;
  const std::vector<data::SerializedExample> batch = {example({5, 6, 7, 8, 9, 10, 11}),
                                                      example({12, 13, 14})};
  const EncoderInputs in = collate(batch);
  const torch::Tensor out = model->forward(in);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 8, 32}));

  auto P = model->named_parameters();
  auto w = [&](const std::string& n) { return P[n]; };
  const std::string l = "bert.encoder.layer.0.";
  for (std::int64_t b = 0; b < 2; ++b) {
    const auto& ex = batch[static_cast<std::size_t>(b)];
    const auto n = static_cast<std::int64_t>(ex.input_ids.size());
    auto ids = [&](const std::vector<std::int32_t>& v) {
      return torch::tensor(std::vector<std::int64_t>(v.begin(), v.end()), torch::kInt64);
    };
    torch::Tensor e =
        w("bert.embeddings.word_embeddings.weight").index_select(0, ids(ex.input_ids)) +
        w("bert.embeddings.position_embeddings.weight").index_select(0, ids(ex.position_ids)) +
        w("bert.embeddings.token_type_embeddings.weight").index_select(0, ids(ex.role_ids)) +
        w("bert.embeddings.turn_embeddings.weight").index_select(0, ids(ex.turn_ids));
    // The head: the raw [CLS] row (id 2), nothing added.
    const torch::Tensor head = w("bert.embeddings.word_embeddings.weight")[2].unsqueeze(0);
    torch::Tensor x =
        ref_layer_norm(torch::cat({head, e}, 0), w("bert.embeddings.LayerNorm.weight"),
                       w("bert.embeddings.LayerNorm.bias"));
    EXPECT_TRUE(torch::allclose(model->encoder()->embed(in)[b].slice(0, 0, n + 1), x, 1e-5, 1e-5));
    auto lin = [&](const torch::Tensor& t, const std::string& name) {
      return t.matmul(w(name + ".weight").t()) + w(name + ".bias");
    };
    const torch::Tensor q = lin(x, l + "attention.self.query"),
                        k = lin(x, l + "attention.self.key"),
                        v = lin(x, l + "attention.self.value");
    std::vector<torch::Tensor> ctx;
    for (int h = 0; h < 4; ++h) {
      const auto qs = q.slice(1, 8 * h, 8 * h + 8), ks = k.slice(1, 8 * h, 8 * h + 8),
                 vs = v.slice(1, 8 * h, 8 * h + 8);
      ctx.push_back(torch::softmax(qs.matmul(ks.t()) / std::sqrt(8.0), 1).matmul(vs));
    }
    const torch::Tensor a = lin(torch::cat(ctx, 1), l + "attention.output.dense");
    x = ref_layer_norm(x + a, w(l + "attention.output.LayerNorm.weight"),
                       w(l + "attention.output.LayerNorm.bias"));
    const torch::Tensor f = lin(ref_gelu(lin(x, l + "intermediate.dense")), l + "output.dense");
    x = ref_layer_norm(x + f, w(l + "output.LayerNorm.weight"), w(l + "output.LayerNorm.bias"));
    EXPECT_TRUE(torch::allclose(out[b].slice(0, 0, n + 1), x, 1e-5, 1e-5))
        << "example " << b << " max diff " << (out[b].slice(0, 0, n + 1) - x).abs().max();
    EXPECT_TRUE(torch::equal(SpaceModelImpl::cls_vector(out)[b], out[b][0]));
  }

  // Heads against their formulas: MLM decoder tied to the word table.
  const torch::Tensor h = out.select(1, 3);
  const torch::Tensor t =
      ref_layer_norm(ref_gelu(h.matmul(w("cls.predictions.transform.dense.weight").t()) +
                              w("cls.predictions.transform.dense.bias")),
                     w("cls.predictions.transform.LayerNorm.weight"),
                     w("cls.predictions.transform.LayerNorm.bias"));
  const torch::Tensor logits =
      t.matmul(w("bert.embeddings.word_embeddings.weight").t()) + w("cls.predictions.bias");
  EXPECT_TRUE(torch::allclose(model->mlm_logits(h), logits, 1e-4, 1e-4));
  const torch::Tensor cls = SpaceModelImpl::cls_vector(out);
  const torch::Tensor proj = model->project(cls);
  ASSERT_EQ(proj.sizes(), (std::vector<std::int64_t>{2, 10, 8}));
  const torch::Tensor flat =
      torch::tanh(cls.matmul(w("projection.dense.weight").t()) + w("projection.dense.bias"));
  EXPECT_TRUE(torch::allclose(proj[1][3], flat[1].slice(0, 24, 32), 1e-6, 1e-6));  // view "V"
  EXPECT_TRUE(torch::allclose(
      model->intent_logits(cls),
      cls.matmul(w("intent_classifier.weight").t()) + w("intent_classifier.bias"), 1e-6, 1e-6));
}

TEST(DialogEncoder, PaddingInvarianceBatchOfOneAndFiniteGradients) {
  SpaceModel model(tiny_config(2));
  randomize(*model, 11);
  model->eval();
  const data::SerializedExample a = example({5, 6, 7, 8, 9}),
                                b = example({10, 11, 12, 13, 14, 15, 16, 17, 18});
  torch::Tensor alone, batched, extra;
  {
    torch::NoGradGuard g;
    alone = model->forward(collate({a}));       // [1, 6, 32]
    batched = model->forward(collate({b, a}));  // a padded to 9
    EncoderInputs in = collate({b, a});
    for (torch::Tensor* t :
         {&in.input_ids, &in.attention_mask, &in.position_ids, &in.role_ids, &in.turn_ids}) {
      *t = torch::cat({*t, torch::zeros({2, 4}, torch::kInt64)}, 1);  // 4 more pad columns
    }
    extra = model->forward(in);
  }
  ASSERT_EQ(alone.sizes(), (std::vector<std::int64_t>{1, 6, 32}));
  ASSERT_EQ(batched.sizes(), (std::vector<std::int64_t>{2, 10, 32}));
  ASSERT_EQ(extra.sizes(), (std::vector<std::int64_t>{2, 14, 32}));
  EXPECT_LT((batched[1].slice(0, 0, 6) - alone[0]).abs().max().item<float>(), 1e-5f);
  EXPECT_LT((extra[1].slice(0, 0, 6) - alone[0]).abs().max().item<float>(), 1e-5f);
  EXPECT_LT((extra[0].slice(0, 0, 10) - batched[0]).abs().max().item<float>(), 1e-5f);
  EXPECT_TRUE(torch::isfinite(extra).all().item<bool>());

  // Without the head: [B, L, H]; batch of one keeps its batch axis through every head.
  const EncoderInputs one = collate({a});
  EXPECT_EQ(model->forward(one, false).sizes(), (std::vector<std::int64_t>{1, 5, 32}));
  torch::NoGradGuard g;
  const torch::Tensor cls = SpaceModelImpl::cls_vector(alone);
  EXPECT_EQ(cls.sizes(), (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(model->project(cls).sizes(), (std::vector<std::int64_t>{1, 10, 8}));
  EXPECT_EQ(model->intent_logits(cls).sizes(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(model->tag_logits(alone.slice(1, 1)).sizes(), (std::vector<std::int64_t>{1, 5, 5}));
  EXPECT_EQ(model->mlm_logits(alone).sizes(), (std::vector<std::int64_t>{1, 6, 40}));
  EXPECT_THROW(SpaceModelImpl::cls_vector(cls), std::invalid_argument);
}

TEST(DialogEncoder, ForwardClsIsRowZeroOfTheFullForwardForAnyDepthAndPadding) {
  for (const std::int64_t layers : {1, 3}) {
    SpaceModel model(tiny_config(layers));
    randomize(*model, 21 + static_cast<std::uint64_t>(layers));
    model->eval();
    const std::vector<data::SerializedExample> xs = {
        example({5, 6, 7}), example({10, 11, 12, 13, 14, 15, 16, 17, 18}), example({}),
        example({20, 21, 22, 23, 24, 25})};
    torch::NoGradGuard g;
    const EncoderInputs in = collate(xs);
    const torch::Tensor full = SpaceModelImpl::cls_vector(model->forward(in, true));
    const torch::Tensor cls = model->forward_cls(in);
    ASSERT_EQ(cls.sizes(), (std::vector<std::int64_t>{4, 32})) << layers << " layers";
    EXPECT_TRUE(torch::isfinite(cls).all().item<bool>());
    EXPECT_LT((cls - full).abs().max().item<float>(), 1e-5f) << layers << " layers";
    // The last block is really applied: its input row 0 differs from the output.
    EXPECT_GT((cls - model->encoder()->embed(in, true).select(1, 0)).abs().max().item<float>(),
              0.1f);
    // Batch of one, and the same row inside the padded batch.
    const torch::Tensor one = model->forward_cls(collate({xs[0]}));
    ASSERT_EQ(one.sizes(), (std::vector<std::int64_t>{1, 32}));
    EXPECT_LT((one[0] - cls[0]).abs().max().item<float>(), 1e-5f) << layers << " layers";
  }
}

TEST(DialogEncoder, PackedForwardClsMatchesThePaddedForwardAcrossLengthBuckets) {
  // Right-padded inputs of very mixed lengths, not sorted: forward_cls packs the real rows and
  // attends per length bucket (plan_length_buckets puts the 29- and 31-token inputs apart from
  // the short ones), then restores the input order.
  std::vector<data::SerializedExample> xs;
  for (const int len : {3, 29, 4, 3, 7, 31, 5, 3, 6}) {
    std::vector<std::int32_t> ids;
    for (int i = 0; i < len; ++i) ids.push_back(3 + (len * 7 + i * 5) % 37);
    xs.push_back(example(ids));
  }
  for (const std::int64_t layers : {1, 2, 3}) {
    SpaceModel model(tiny_config(layers));
    randomize(*model, 40 + static_cast<std::uint64_t>(layers));
    model->eval();
    torch::NoGradGuard g;
    const EncoderInputs in = collate(xs);
    const torch::Tensor full = SpaceModelImpl::cls_vector(model->forward(in, true));
    const torch::Tensor cls = model->forward_cls(in);
    ASSERT_EQ(cls.sizes(), (std::vector<std::int64_t>{9, 32})) << layers << " layers";
    EXPECT_LT((cls - full).abs().max().item<float>(), 1e-5f) << layers << " layers";
    // Each input alone (no padding, one bucket) gives its row of the batch.
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const torch::Tensor one = model->forward_cls(collate({xs[i]}));
      EXPECT_LT((one[0] - cls[static_cast<std::int64_t>(i)]).abs().max().item<float>(), 1e-5f)
          << layers << " layers, input " << i;
    }
    // Under CPU bf16 autocast (fine-tuning's evaluation) it stays close to fp32.
    CpuBf16Autocast autocast;
    const torch::Tensor bf16 = model->forward_cls(in);
    EXPECT_LT((bf16.to(torch::kFloat) - full).abs().max().item<float>(), 0.1f);
  }
}

TEST(DialogEncoder, FullyPaddedRowsGiveNoNanForwardOrBackward) {
  SpaceModel model(tiny_config(2));
  model->train();
  // Example 1 is empty: every row of it (even its [CLS]) is masked.
  const EncoderInputs in = collate({example({5, 6, 7}), example({})});
  const torch::Tensor out = model->forward(in);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 4, 32}));
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  const torch::Tensor cls = SpaceModelImpl::cls_vector(out);
  const torch::Tensor loss = model->project(cls).sum() +
                             model->mlm_logits(out).logsumexp(-1).sum() +
                             model->intent_logits(cls).sum() + model->tag_logits(out).sum();
  loss.backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
  // The [CLS] row gradient reaches the word table's [CLS] row (the head is trainable).
  auto P = model->named_parameters();
  EXPECT_GT(P["bert.embeddings.word_embeddings.weight"].grad()[2].abs().sum().item<float>(), 0.0f);

  // Dropout: two training passes differ, eval passes are equal.
  torch::NoGradGuard g;
  EXPECT_FALSE(torch::equal(model->forward(in), model->forward(in)));
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(in), model->forward(in)));

  // An empty batch gives [0, 1, H].
  EXPECT_EQ(model->forward(collate({})).sizes(), (std::vector<std::int64_t>{0, 1, 32}));
}

TEST(DialogEncoder, RejectsBadInputsNamingTheTensor) {
  SpaceModel model(tiny_config(1));
  torch::NoGradGuard g;
  auto error_of = [&](const EncoderInputs& in) -> std::string {
    try {
      model->forward(in);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  const EncoderInputs good = collate({example({5, 6, 7, 8, 9, 10, 11})});
  EncoderInputs in = good;
  in.turn_ids = in.turn_ids.clone();
  in.turn_ids[0][1] = 5;  // max_turns = 4
  EXPECT_THAT(error_of(in), AllOf(HasSubstr("turn_ids"), HasSubstr("[0, 5)")));
  in = good;
  in.position_ids = in.position_ids + 16;
  EXPECT_THAT(error_of(in), HasSubstr("position_ids"));
  in = good;
  in.input_ids = in.input_ids + 40;
  EXPECT_THAT(error_of(in), HasSubstr("input_ids"));
  in = good;
  in.role_ids = in.role_ids.to(torch::kInt32);
  EXPECT_THAT(error_of(in), AllOf(HasSubstr("role_ids"), HasSubstr("int64")));
  in = good;
  in.attention_mask = in.attention_mask.slice(1, 0, 3);
  EXPECT_THAT(error_of(in), HasSubstr("attention_mask"));
}

TEST(DialogEncoder, RunsAndTrainsUnderCpuBf16AutocastCloseToFp32) {
  SpaceModel model(tiny_config(2));
  randomize(*model, 3);
  model->eval();
  const EncoderInputs in = collate({example({5, 6, 7, 8, 9, 10, 11, 12}), example({13, 14, 15})});
  torch::NoGradGuard g;
  const torch::Tensor ref = model->forward(in);
  const torch::Tensor ref_logits = model->mlm_logits(ref);
  torch::Tensor out, logits, proj;
  {
    CpuBf16Autocast autocast;
    out = model->forward(in);
    logits = model->mlm_logits(out);
    proj = model->project(SpaceModelImpl::cls_vector(out));
    EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);  // autocast really was on
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled());
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  EXPECT_TRUE(torch::isfinite(proj).all().item<bool>());
  const torch::Tensor mask =
      torch::cat({torch::ones({2, 1}), in.attention_mask.to(torch::kFloat)}, 1).unsqueeze(-1);
  const float max_diff = ((out.to(torch::kFloat) - ref).abs() * mask).max().item<float>();
  const float mean_diff = ((out.to(torch::kFloat) - ref).abs() * mask).mean().item<float>();
  EXPECT_LT(max_diff, 0.08f);
  EXPECT_LT(mean_diff, 0.01f);
  EXPECT_LT((logits.to(torch::kFloat) - ref_logits).abs().max().item<float>() /
                ref_logits.abs().max().item<float>(),
            0.05f);

  // Training step under autocast: backward gives finite fp32 gradients.
  model->train();
  torch::AutoGradMode enable_grad(true);
  torch::Tensor loss;
  {
    CpuBf16Autocast autocast;
    const torch::Tensor out = model->forward(in);
    const torch::Tensor cls = SpaceModelImpl::cls_vector(out);
    const torch::Tensor plain = model->forward(in, /*prepend_cls=*/false);
    loss = model->project(cls).to(torch::kFloat).pow(2).sum() +
           model->mlm_logits(plain).to(torch::kFloat).logsumexp(-1).sum() +
           model->intent_logits(cls).to(torch::kFloat).sum();
  }
  loss.backward();
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("token_classifier", 0) == 0) continue;  // unused here
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_EQ(p.value().grad().scalar_type(), torch::kFloat32) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
}

}  // namespace
}  // namespace dialtree::model
