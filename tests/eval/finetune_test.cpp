// eval/finetune, eval/dialoglue: intent fine-tuning of a tiny bundle on a separable toy task and
// the whole `eval dialoglue` run on a DialoGLUE-shaped folder (the recipe reader:
// eval_config_test.cpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include "model/torch_api.h"

#include "common/error.h"
#include "data/serialize.h"
#include "data/tokenizer_factory.h"
#include "eval/dialoglue.h"
#include "eval/results_file.h"
#include "eval/finetune.h"
#include "eval/submission.h"
#include "eval/finetune_step.h"
#include "eval/probe.h"
#include "eval/probe_model.h"
#include "expect_error.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "model/device.h"
#include "model/encoder.h"
#include "sts/format.h"
#include "sts/tree.h"
#include "test_paths.h"
#include "tiny_intent.h"
#include "trainer/step.h"

namespace dialtree::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Three intents, each with its own key words, so a tiny encoder separates them in a few epochs.
using testing_tiny::kLabels;
using testing_tiny::kTexts;

class TinyIntent : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_tiny::save_tiny_bundle(tmp_.file("tok"), tmp_.file("bundle"), 3);
    // Train: texts 0-5 of each class; val: 6; test: 7 (class order interleaved).
    task_.name = "banking";
    task_.labels = kLabels;
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 3; ++k) {
        IntentSplit& s = i < 6 ? task_.train : (i == 6 ? task_.val : task_.test);
        s.texts.push_back(kTexts[k][i]);
        s.labels.push_back(k);
      }
    }
    options_.num_train_epochs = 25;
    options_.per_device_train_batch_size = 6;
    options_.learning_rate = 3e-3;
    options_.warmup_ratio = 0.1;
    options_.dropout = 0.0;
    options_.bf16 = false;
  }

  testing::TempDir tmp_;
  IntentTask task_;
  FinetuneOptions options_;
};

TEST_F(TinyIntent, LearnsASeparableTaskAndIsDeterministicPerSeed) {
  std::vector<EpochInfo> epochs;
  const IntentRunResult a = finetune_intent(tmp_.file("bundle"), task_, options_, 1,
                                            [&](const EpochInfo& e) { epochs.push_back(e); });
  ASSERT_EQ(epochs.size(), 25u);
  EXPECT_EQ(epochs.front().epoch, 1);
  EXPECT_EQ(epochs.back().epochs, 25);
  // Loss falls from about ln 3 = 1.10 and val reaches 100%.
  EXPECT_NEAR(epochs.front().train_loss, std::log(3.0), 0.3);
  EXPECT_LT(epochs.back().train_loss, 0.2);
  EXPECT_DOUBLE_EQ(a.best_val_accuracy, 1.0);
  EXPECT_GE(a.best_epoch, 1);
  EXPECT_LE(a.best_epoch, 25);
  // The selected epoch is the first one that reached the best val accuracy.
  for (int e = 0; e + 1 < a.best_epoch; ++e) EXPECT_LT(epochs[e].val_accuracy, 1.0);
  EXPECT_EQ(a.test_predictions, kLabels);  // test holds one example per class, in label order
  EXPECT_GT(a.train_examples_per_second, 0);
  EXPECT_GT(a.predict_examples_per_second, 0);

  // The same run again, saving the selected model: same outcome, and the saved bundle carries
  // the intent head and label names and predicts the test split as the run did.
  const IntentRunResult b =
      finetune_intent(tmp_.file("bundle"), task_, options_, 1, {}, tmp_.file("saved/model"));
  EXPECT_EQ(b.best_epoch, a.best_epoch);
  EXPECT_EQ(b.test_predictions, a.test_predictions);
  model::LoadedBundle saved = model::load_bundle(tmp_.file("saved/model"));
  EXPECT_EQ(saved.info.intent_labels, kLabels);
  EXPECT_EQ(saved.info.recipe["finetuned_from"], tmp_.file("bundle"));
  EXPECT_EQ(saved.info.recipe["best_epoch"], b.best_epoch);
  ASSERT_TRUE(saved.model->has_intent_head());
  std::vector<data::SerializedExample> test;
  for (const auto& t : task_.test.texts) {
    test.push_back(data::serialize_context({{"user", saved.tokenizer->encode(t)}},
                                           saved.tokenizer->special()));
  }
  torch::InferenceMode guard;
  EXPECT_EQ(predict_intent_batch(saved.model, model::collate(test), false),
            (std::vector<std::int64_t>{0, 1, 2}));
}

TEST_F(TinyIntent, StartsFromTheBundleUnlessFromScratch) {
  // The bundle was initialised under torch seed 3. A fine-tuning run with seed 3 draws the same
  // sequence for the encoder (its parameters come first) and then the new intent head, so with
  // seed 3 "from scratch" rebuilds exactly the bundle's weights and both runs give the same
  // first-epoch loss; with seed 4 the from-scratch encoder differs, the copied one does not.
  options_.num_train_epochs = 1;
  auto first_loss = [&](std::uint64_t seed, bool scratch) {
    FinetuneOptions o = options_;
    o.from_scratch = scratch;
    double loss = -1;
    finetune_intent(tmp_.file("bundle"), task_, o, seed,
                    [&](const EpochInfo& e) { loss = e.train_loss; });
    return loss;
  };
  EXPECT_EQ(first_loss(3, false), first_loss(3, true));
  EXPECT_NE(first_loss(4, false), first_loss(4, true));
}

TEST_F(TinyIntent, RejectsBadOptions) {
  FinetuneOptions o = options_;
  o.num_train_epochs = 0;
  EXPECT_THROW(finetune_intent(tmp_.file("bundle"), task_, o, 1), std::invalid_argument);
  o = options_;
  o.dropout = 1.0;
  EXPECT_THROW(finetune_intent(tmp_.file("bundle"), task_, o, 1), std::invalid_argument);
  EXPECT_THROW(finetune_intent(tmp_.file("missing"), task_, options_, 1), DataError);
}

// The saved bundle's intent head as [K, H] and [K] double matrices.
std::pair<Eigen::MatrixXd, Eigen::VectorXd> intent_head_of(const model::LoadedBundle& b) {
  torch::Tensor w, bias;
  for (const auto& [name, t] : model::model_tensors(*b.model)) {
    if (name == "intent_classifier.weight") w = t.to(torch::kFloat64).contiguous();
    if (name == "intent_classifier.bias") bias = t.to(torch::kFloat64).contiguous();
  }
  Eigen::MatrixXd wm(w.size(0), w.size(1));
  Eigen::VectorXd bv(bias.size(0));
  for (Eigen::Index r = 0; r < wm.rows(); ++r) {
    bv(r) = bias[r].item<double>();
    for (Eigen::Index c = 0; c < wm.cols(); ++c) wm(r, c) = w[r][c].item<double>();
  }
  return {wm, bv};
}

TEST_F(TinyIntent, LinearProbeInitStartsFromTheFittedLogisticRegression) {
  // One epoch at a learning rate of 1e-12 leaves every weight as it started (AdamW moves each
  // by about lr), and with dropout 0 the epoch's loss is the start's cross-entropy on train.
  FinetuneOptions o = options_;
  o.num_train_epochs = 1;
  o.learning_rate = 1e-12;
  o.classifier_init = "linear_probe";
  // The tiny encoder's vectors are short (norm ~1): at C = 1 the fit stays near ln 3.
  o.linear_probe_c = 100.0;
  double lp_loss = -1;
  finetune_intent(
      tmp_.file("bundle"), task_, o, 1, [&](const EpochInfo& e) { lp_loss = e.train_loss; },
      tmp_.file("lp"));
  // The reference: the probe's logistic regression on the frozen [CLS] vectors of train.
  model::LoadedBundle saved = model::load_bundle(tmp_.file("lp"));
  const ProbeMatrix x =
      embed_texts(*saved.model, *saved.tokenizer, task_.train.texts, 128, o.max_utt_len, false);
  const LogisticModel fit = fit_logistic(x, task_.train.labels, {100.0, 100, 1e-4, false});
  ASSERT_EQ(fit.classes, (std::vector<int>{0, 1, 2}));
  const auto [w, b] = intent_head_of(saved);
  EXPECT_LT((w - fit.coef).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LT((b - fit.intercept).cwiseAbs().maxCoeff(), 1e-5);
  // Its mean cross-entropy on train is the epoch's loss.
  const Eigen::MatrixXd z = decision_function(fit, x);
  double ce = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double m = z.row(i).maxCoeff();
    ce += m + std::log((z.row(i).array() - m).exp().sum()) - z(i, task_.train.labels[i]);
  }
  ce /= static_cast<double>(z.rows());
  EXPECT_NEAR(lp_loss, ce, 1e-4);
  EXPECT_LT(ce, std::log(3.0) - 0.01);  // the fit learnt something on these vectors

  // Two classes: the binary model w·x + b becomes the softmax pair (−w/2, −b/2), (w/2, b/2).
  IntentTask two = task_;
  for (IntentSplit* s : {&two.train, &two.val, &two.test}) {
    IntentSplit kept;
    for (std::size_t i = 0; i < s->labels.size(); ++i) {
      if (s->labels[i] == 2) continue;
      kept.texts.push_back(s->texts[i]);
      kept.labels.push_back(s->labels[i]);
    }
    *s = kept;
  }
  two.labels.pop_back();
  o.classifier_init = "linear_probe";
  finetune_intent(tmp_.file("bundle"), two, o, 1, {}, tmp_.file("lp2"));
  model::LoadedBundle saved2 = model::load_bundle(tmp_.file("lp2"));
  const ProbeMatrix x2 =
      embed_texts(*saved2.model, *saved2.tokenizer, two.train.texts, 128, o.max_utt_len, false);
  const LogisticModel fit2 = fit_logistic(x2, two.train.labels, {100.0, 100, 1e-4, false});
  ASSERT_EQ(fit2.coef.rows(), 1);
  const auto [w2, b2] = intent_head_of(saved2);
  ASSERT_EQ(w2.rows(), 2);
  EXPECT_LT((w2.row(1) - w2.row(0) - fit2.coef.row(0)).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LT((w2.row(1) + w2.row(0)).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_NEAR(b2(1) - b2(0), fit2.intercept(0), 1e-5);
}

TEST_F(TinyIntent, EarlyStoppingDoesNotCountTheWarmUpEpochs) {
  // At a learning rate of 1e-12 val never improves on epoch 1. With warm-up over the first 10 of
  // 40 epochs and patience 3, the run stops at epoch 13; without warm-up, at epoch 4 (HF's rule).
  FinetuneOptions o = options_;
  o.num_train_epochs = 40;
  o.learning_rate = 1e-12;
  o.early_stopping_patience = 3;
  o.warmup_ratio = 0.25;
  const IntentRunResult r = finetune_intent(tmp_.file("bundle"), task_, o, 1);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_EQ(r.epochs_run, 13);
  o.warmup_ratio = 0.0;
  EXPECT_EQ(finetune_intent(tmp_.file("bundle"), task_, o, 1).epochs_run, 4);
}

TEST_F(TinyIntent, LinearProbeInitIsForIntentTasksOnly) {
  FinetuneOptions o = options_;
  o.classifier_init = "linear_probe";
  TaggingTask tagging;
  EXPECT_THAT(testing::error_of<std::invalid_argument>([&] {
                finetune_tagging(tmp_.file("bundle"), tagging, o, 1,
                                 [](const auto&, const auto&) { return 0.0; });
              }),
              HasSubstr("classifier_init linear_probe applies to intent tasks only"));
}

TEST(IntentLoss, SymmetricKlKnownAnswer) {
  // p = softmax(0, ln 3) = (1/4, 3/4), q = (1/2, 1/2):
  // KL(p‖q) = 1/4 ln(1/2) + 3/4 ln(3/2) = 0.130812, KL(q‖p) = 1/2 ln 2 + 1/2 ln(2/3) = 0.143841.
  const torch::Tensor p = torch::tensor({0.0, std::log(3.0)}, torch::kFloat64).reshape({1, 2});
  const torch::Tensor q = torch::zeros({1, 2}, torch::kFloat64);
  const double kl = 0.5 * (0.25 * std::log(0.5) + 0.75 * std::log(1.5) + 0.5 * std::log(2.0) +
                           0.5 * std::log(2.0 / 3.0));
  EXPECT_NEAR(symmetric_kl(p, q).item<double>(), kl, 1e-12);
  EXPECT_NEAR(kl, 0.1373265, 1e-6);
  // Symmetric, zero for equal rows, averaged over rows.
  EXPECT_NEAR(symmetric_kl(q, p).item<double>(), kl, 1e-12);
  EXPECT_NEAR(symmetric_kl(torch::cat({p, p}), torch::cat({q, p})).item<double>(), kl / 2, 1e-12);
  EXPECT_THROW(symmetric_kl(p, torch::zeros({1, 3})), std::invalid_argument);
}

TEST_F(TinyIntent, RDropAndMlmTermsAddWhatTheRecipeSays) {
  // Dropout 0: R-Drop's two passes are equal, so KL = 0 and CE over 2B equals CE over B; the MLM
  // term adds exactly mlm_weight x the MLM loss of the masked copy.
  model::LoadedBundle b = model::load_bundle(tmp_.file("bundle"));
  model::EncoderConfig c = b.model->config();
  c.num_labels = 3;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = c.embedding_dropout_prob =
      c.ffn_dropout_prob = 0;
  torch::manual_seed(5);
  model::SpaceModel net(c);
  net->train();
  std::vector<data::SerializedExample> xs, masked_xs;
  std::vector<std::vector<std::int32_t>> targets;
  for (int k = 0; k < 3; ++k) {
    xs.push_back(data::serialize_context({{"user", b.tokenizer->encode(kTexts[k][0])}},
                                         b.tokenizer->special()));
    data::SerializedExample m = xs.back();
    std::vector<std::int32_t> t(m.input_ids.size(), model::kIgnoreLabel);
    t[1] = m.input_ids[1];  // the first word is the target, replaced by [MASK]
    m.input_ids[1] = b.tokenizer->special().mask;
    masked_xs.push_back(m);
    targets.push_back(t);
  }
  const model::EncoderInputs in = model::collate(xs);
  const model::CollatedBatch masked = model::collate(masked_xs, targets);
  const torch::Tensor labels = torch::tensor({0, 1, 2}, torch::kInt64);
  const double ce = intent_batch_loss(net, in, labels, false).item<double>();
  EXPECT_NEAR(intent_batch_loss(net, in, labels, false, {5.0, 0, nullptr}).item<double>(), ce,
              1e-6);
  const double mlm = trainer::masked_lm_loss(net, masked).item<double>();
  EXPECT_GT(mlm, 1.0);  // an untrained model over a 30k vocabulary
  EXPECT_NEAR(intent_batch_loss(net, in, labels, false, {5.0, 0.1, &masked}).item<double>(),
              ce + 0.1 * mlm, 1e-5);
  EXPECT_THROW(intent_batch_loss(net, in, labels, false, {0, 0.1, nullptr}), std::invalid_argument);
}

TEST_F(TinyIntent, RecipeRunsConvergeAndStopEarlyKeepingTheValCurve) {
  FinetuneOptions o = options_;
  o.rdrop_weight = 5.0;
  o.mlm_weight = 0.1;
  o.dropout = 0.1;
  o.num_train_epochs = 80;
  o.early_stopping_patience = 10;
  std::vector<EpochInfo> seen;
  const IntentRunResult r = finetune_intent(tmp_.file("bundle"), task_, o, 1,
                                            [&](const EpochInfo& e) { seen.push_back(e); });
  EXPECT_DOUBLE_EQ(r.best_val_accuracy, 1.0);
  // It stopped 10 epochs after its best epoch (the first to reach 100 %), or after the warm-up's
  // 8 epochs (10 % of 80) if that came first, long before 80.
  EXPECT_EQ(r.epochs_run, std::max(r.best_epoch, 8) + 10);
  EXPECT_LT(r.epochs_run, 80);
  ASSERT_EQ(r.curve.size(), static_cast<std::size_t>(r.epochs_run));
  ASSERT_EQ(seen.size(), r.curve.size());
  for (std::size_t i = 0; i < r.curve.size(); ++i) {
    EXPECT_EQ(r.curve[i].epoch, static_cast<int>(i) + 1);
    EXPECT_DOUBLE_EQ(r.curve[i].val_accuracy, seen[i].val_accuracy);
    EXPECT_GT(r.curve[i].learning_rate, 0);
  }
  EXPECT_DOUBLE_EQ(r.curve[static_cast<std::size_t>(r.best_epoch - 1)].val_accuracy, 1.0);
  EXPECT_EQ(r.test_predictions.size(), 3u);
  // Deterministic per seed, MLM masks included.
  const IntentRunResult again = finetune_intent(tmp_.file("bundle"), task_, o, 1);
  EXPECT_EQ(again.epochs_run, r.epochs_run);
  EXPECT_DOUBLE_EQ(again.curve.back().train_loss, r.curve.back().train_loss);
  o.early_stopping_patience = -1;
  EXPECT_THROW(finetune_intent(tmp_.file("bundle"), task_, o, 1), std::invalid_argument);
  o.early_stopping_patience = 0;
  o.mlm_probability = 1.0;
  EXPECT_THROW(finetune_intent(tmp_.file("bundle"), task_, o, 1), std::invalid_argument);
}

TEST_F(TinyIntent, TaggingLearnsWordTagsAndTopIntents) {
  // Toy TOP-like task: the word after "to" is a location, the intent follows the first word.
  TaggingTask t;
  t.name = "top";
  t.tag_labels = {"O", "B-SL_LOCATION", "I-SL_LOCATION"};
  t.intent_labels = {"IN_GET_DIRECTIONS", "IN_GET_DISTANCE"};
  const std::vector<std::string> places = {"paris",  "london", "berlin", "rome",   "madrid",
                                           "vienna", "oslo",   "dublin", "athens", "prague"};
  for (std::size_t i = 0; i < places.size(); ++i) {
    const bool dir = i % 2 == 0;
    TaggingExample ex{{dir ? "directions" : "distance", "to", places[i], "please"},
                      {"O", "O", "B-SL_LOCATION", "O"},
                      dir ? "IN_GET_DIRECTIONS" : "IN_GET_DISTANCE"};
    (i < 6 ? t.train : (i < 8 ? t.val : t.test)).push_back(ex);
    if (i < 6) t.train.push_back(ex);  // twice: a small task needs a few more steps per epoch
  }
  int scorer_calls = 0;
  // Exact match over the val examples (both intents present, so a constant guess scores 0.5).
  const auto scorer = [&](const std::vector<std::vector<std::string>>& tags,
                          const std::vector<std::string>& intents) {
    ++scorer_calls;
    EXPECT_EQ(tags.size(), 2u);
    EXPECT_EQ(intents.size(), 2u);
    double right = 0;
    for (std::size_t i = 0; i < 2; ++i) {
      right += tags[i] == t.val[i].tags && intents[i] == t.val[i].intent ? 1 : 0;
    }
    return right / 2;
  };
  // The intent plateaus near ln 2 for ~40 epochs on this toy before it separates: 80 epochs.
  options_.num_train_epochs = 80;
  const TaggingRunResult r = finetune_tagging(tmp_.file("bundle"), t, options_, 1, scorer);
  EXPECT_EQ(scorer_calls, 80);
  EXPECT_DOUBLE_EQ(r.best_val_score, 1.0);
  ASSERT_EQ(r.test_tags.size(), 2u);
  EXPECT_EQ(r.test_tags[0], t.test[0].tags);
  EXPECT_EQ(r.test_tags[1], t.test[1].tags);
  EXPECT_EQ(r.test_intents, (std::vector<std::string>{t.test[0].intent, t.test[1].intent}));
  // Words beyond max_utt_len (left truncation keeps the end) are predicted "O".
  FinetuneOptions o = options_;
  o.max_utt_len = 2;
  o.num_train_epochs = 1;
  const TaggingRunResult cut = finetune_tagging(tmp_.file("bundle"), t, o, 1, scorer);
  EXPECT_EQ(cut.test_tags[0][0], "O");
  EXPECT_EQ(cut.test_tags[0][1], "O");
}

void write_csv(const std::string& path, const std::vector<std::pair<std::string, int>>& rows) {
  std::ofstream out(path);
  out << "text,category\n";
  for (const auto& [text, label] : rows) out << text << "," << kLabels[label] << "\n";
}

TEST_F(TinyIntent, DialoglueRunWritesSubmissionsResultsAndTable) {
  // A DialoGLUE-shaped folder with one intent task and no gt_test.json (scored from test.csv).
  const fs::path data = tmp_.path() / "dialoglue";
  fs::create_directories(data / "hwu");
  std::ofstream(data / "hwu" / "categories.json") << nlohmann::json(kLabels).dump();
  std::vector<std::pair<std::string, int>> train, val, test;
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 6; ++i) train.emplace_back(kTexts[k][i], k);
    val.emplace_back(kTexts[k][6], k);
    test.emplace_back(kTexts[k][7], k);
  }
  test.emplace_back(kTexts[0][0], 2);  // a deliberately wrong gold label: 3/4 at best
  write_csv((data / "hwu" / "train_10.csv").string(), train);
  write_csv((data / "hwu" / "val.csv").string(), val);
  write_csv((data / "hwu" / "test.csv").string(), test);

  DialoglueRun run;
  run.model_dir = tmp_.file("bundle");
  run.tasks = {"hwu"};
  run.setting = Setting::Few;
  run.seeds = {1, 2};
  run.out_dir = tmp_.file("out");
  run.data_dir = resolve_data_dir(data.string());
  run.recipe.options = options_;
  std::size_t calls = 0;
  const nlohmann::json r = run_dialoglue(run, [&](const RunProgress& p) {
    EXPECT_EQ(p.runs, 2u);
    ++calls;
  });
  EXPECT_EQ(calls, 50u);  // 2 seeds x 25 epochs
  // What the throughput figures depend on, as `train`'s env.json records it.
  EXPECT_EQ(r.at("env"), model::host_environment());
  EXPECT_EQ(r.at("env").at("intra_op_threads"), at::get_num_threads());
  EXPECT_EQ(r.at("env").at("malloc"), "glibc");  // this test executable; dialtree: jemalloc
  const auto& t = r.at("tasks").at("hwu");
  EXPECT_EQ(t.at("metric"), "accuracy");
  ASSERT_EQ(t.at("runs").size(), 2u);
  // Each seed's test score is the accuracy of its written predictions against test.csv (the
  // folder has no gt_test.json), and the 4th gold label is wrong on purpose: at most 75%.
  std::vector<double> scores;
  for (int seed : {1, 2}) {
    const fs::path dir = tmp_.path() / "out" / "hwu" / ("seed-" + std::to_string(seed));
    const nlohmann::json sub = nlohmann::json::parse(std::ifstream(dir / "test_predictions.json"));
    ASSERT_EQ(sub.size(), test.size());
    double right = 0;
    for (std::size_t i = 0; i < test.size(); ++i) right += sub[i] == kLabels[test[i].second];
    const nlohmann::json rec = nlohmann::json::parse(std::ifstream(dir / "run.json"));
    EXPECT_DOUBLE_EQ(rec.at("test").get<double>(), 100 * right / 4);
    EXPECT_EQ(rec, t.at("runs")[static_cast<std::size_t>(seed - 1)]);
    ASSERT_EQ(rec.at("curve").size(), 25u);  // the val curve, one entry per epoch
    EXPECT_EQ(rec.at("epochs_run"), 25);
    EXPECT_EQ(rec.at("curve")[0].at("epoch"), 1);
    EXPECT_DOUBLE_EQ(
        rec.at("curve")[static_cast<std::size_t>(rec.at("best_epoch").get<int>() - 1)].at("val"),
        rec.at("val").get<double>());
    EXPECT_LE(rec.at("test").get<double>(), 75.0);
    scores.push_back(rec.at("test").get<double>());
  }
  const double mean = (scores[0] + scores[1]) / 2;
  EXPECT_DOUBLE_EQ(t.at("mean").get<double>(), mean);
  EXPECT_NEAR(t.at("std").get<double>(), std::abs(scores[0] - scores[1]) / std::sqrt(2.0), 1e-9);
  EXPECT_TRUE(fs::exists(tmp_.path() / "out" / "results.json"));
  // DialoGLUE's few-shot submission file: the task's runs, one per seed, scored back to the
  // same figures (the folder has no gt_test.json: the gold is the test file's labels).
  const nlohmann::json file =
      nlohmann::json::parse(std::ifstream(tmp_.path() / "out" / "submission.json"));
  ASSERT_EQ(file.at("hwu").size(), 2u);
  std::vector<std::string> gold_labels;
  for (const auto& [text, label] : test) gold_labels.push_back(kLabels[label]);
  const auto back = score_task_runs(Task::Hwu, file, intent_submission_json(gold_labels));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_DOUBLE_EQ(back[0].value * 100, scores[0]);
  EXPECT_DOUBLE_EQ(back[1].value * 100, scores[1]);
  std::ifstream md(tmp_.path() / "out" / "results.md");
  const std::string table((std::istreambuf_iterator<char>(md)), {});
  EXPECT_THAT(table,
              HasSubstr(fmt::format("| hwu | accuracy | {:.2f} ± {:.2f} | 1: {:.2f}, 2: {:.2f} |",
                                    mean, t.at("std").get<double>(), scores[0], scores[1])));

  // One seed has no sample std: the table says so instead of "± 0.00" (README walk-through).
  nlohmann::json one = r;
  one["tasks"]["hwu"]["runs"] = nlohmann::json::array({t.at("runs")[0]});
  one["tasks"]["hwu"]["std"] = 0.0;
  EXPECT_THAT(
      results_table(one),
      HasSubstr(fmt::format("| hwu | accuracy | {:.2f} (one seed) | 1: {:.2f} |", mean, scores[0])));

  // A second call of the same run into the same folder adds to it (docs/evaluation.md "Adding to
  // an output folder"): seed 3 joins seeds 1 and 2; mean, std and submission.json cover all three.
  std::vector<std::string> notices;
  const auto note = [&](const std::string& n) { notices.push_back(n); };
  run.seeds = {3};
  const nlohmann::json added = run_dialoglue(run, {}, note);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("adding to the results there: hwu (2 seeds)"));
  const auto& t3 = added.at("tasks").at("hwu");
  ASSERT_EQ(t3.at("runs").size(), 3u);
  EXPECT_EQ(t3.at("runs")[0], t.at("runs")[0]);
  EXPECT_EQ(t3.at("runs")[1], t.at("runs")[1]);
  EXPECT_EQ(t3.at("runs")[2].at("seed"), 3);
  EXPECT_EQ(added.at("seeds"), nlohmann::json::array({1, 2, 3}));
  scores.push_back(t3.at("runs")[2].at("test").get<double>());
  EXPECT_DOUBLE_EQ(t3.at("mean").get<double>(), (scores[0] + scores[1] + scores[2]) / 3);
  EXPECT_DOUBLE_EQ(t3.at("std").get<double>(), mean_std(scores).std);
  const nlohmann::json file3 =
      nlohmann::json::parse(std::ifstream(tmp_.path() / "out" / "submission.json"));
  const auto back3 = score_task_runs(Task::Hwu, file3, intent_submission_json(gold_labels));
  ASSERT_EQ(back3.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(back3[i].value * 100, scores[i]);
  // Another recipe into the same folder: the earlier results are set aside, not mixed in.
  notices.clear();
  run.seeds = {1};
  run.recipe.options.num_train_epochs = 2;
  const nlohmann::json other = run_dialoglue(run, {}, note);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("described another run (options.num_train_epochs was 25, "
                                     "is 2): renamed to "));
  EXPECT_THAT(notices[0], HasSubstr("results.previous.json"));
  EXPECT_EQ(other.at("tasks").at("hwu").at("runs").size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(tmp_.path() / "out" / "results.previous.json")),
            added);
  // A task's section (docs/evaluation.md "Per-task options"): hwu runs 3 epochs, results.json
  // says so, and the folder's hwu runs of 2 epochs are another run's.
  notices.clear();
  run.recipe.task_options["hwu"] = run.recipe.options;
  run.recipe.task_options["hwu"].num_train_epochs = 3;
  const nlohmann::json per_task = run_dialoglue(run, {}, note);
  EXPECT_EQ(per_task.at("task_options"), nlohmann::json::parse(R"({"hwu": {"num_train_epochs": 3}})"));
  EXPECT_EQ(per_task.at("options").at("num_train_epochs"), 2);
  EXPECT_EQ(per_task.at("tasks").at("hwu").at("runs")[0].at("epochs_run"), 3);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("described another run (options.num_train_epochs was 2, is 3)"));
  run.recipe.task_options.clear();
  run.recipe.options.num_train_epochs = options_.num_train_epochs;

  // Self-training: train_10 plus the pseudo-labelled records of <dir>/hwu.pseudo.jsonl.
  fs::create_directories(tmp_.path() / "pseudo");
  std::vector<sts::Dialog> records;
  for (int k = 0; k < 3; ++k) {
    sts::Tree tree;
    tree.add_intent(sts::kDefaultDomain, kLabels[k]);
    records.push_back(
        {"hwu/pseudo/" + std::to_string(k), "hwu", {sts::Turn{"user", kTexts[k][7], tree, {}}}});
  }
  sts::write_jsonl((tmp_.path() / "pseudo" / "hwu.pseudo.jsonl").string(), records);
  run.seeds = {1};
  run.recipe.options.num_train_epochs = 2;
  run.pseudo_label_dir = (tmp_.path() / "pseudo").string();
  run.out_dir = tmp_.file("out-st");
  const nlohmann::json st = run_dialoglue(run);
  EXPECT_EQ(st.at("pseudo_label_dir"), run.pseudo_label_dir);
  EXPECT_EQ(st.at("tasks").at("hwu").at("pseudo_labelled"), 3);
  EXPECT_EQ(st.at("tasks").at("hwu").at("train_examples"), 21);  // 18 of train_10 + 3
  // A missing file or a tagging task is refused before anything is written.
  run.out_dir = tmp_.file("out-missing");
  run.pseudo_label_dir = tmp_.file("nowhere");
  EXPECT_THAT(testing::error_of<DataError>([&] { run_dialoglue(run); }),
              HasSubstr("hwu.pseudo.jsonl"));
  run.tasks = {"restaurant8k"};
  EXPECT_THROW(run_dialoglue(run), std::invalid_argument);
  EXPECT_FALSE(fs::exists(tmp_.path() / "out-missing"));
  run.pseudo_label_dir.clear();

  run.tasks = {"multiwoz"};
  EXPECT_THROW(run_dialoglue(run), std::invalid_argument);
  run.tasks = {"nope"};
  // The list names what this command fine-tunes: multiwoz (scored by eval score only) is not in it.
  const std::string unknown = testing::error_of<std::invalid_argument>([&] { run_dialoglue(run); });
  EXPECT_THAT(unknown, HasSubstr("unknown task 'nope'; it fine-tunes banking, clinc, hwu, "
                                 "restaurant8k, dstc8, dstc8_sgd, top (dstc8 and dstc8_sgd are one"));
  EXPECT_THAT(unknown, ::testing::Not(HasSubstr("multiwoz")));
  EXPECT_THROW(resolve_data_dir(tmp_.file("nowhere")), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::eval
