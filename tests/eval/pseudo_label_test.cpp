// eval/pseudo_label: the confident-subset rule on known probabilities, the softmax / binary
// probabilities of the fitted probe, the unlabelled pool, the records, and pseudo_label_task on a
// DialoGLUE-shaped folder with a tiny bundle (train.csv's labels never change the output).
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "eval/finetune.h"
#include "eval/pseudo_label.h"
#include "model/bundle.h"
#include "model/encoder.h"
#include "expect_error.h"
#include "test_paths.h"
#include "tiny_intent.h"

namespace dialtree::eval {
namespace {

namespace fs = std::filesystem;

TEST(PseudoLabel, SelectsTheMostConfidentRowsPerPredictedLabelInRowOrder) {
  // Rows 0-4 predicted column 0 with 0.9, 0.6, 0.8, 0.6, 0.7; rows 5-6 column 1; row 7 ties
  // columns 0 and 1 at 0.5 and goes to column 0 (the lowest), with the lowest confidence there.
  Eigen::MatrixXd p(8, 2);
  p << 0.9, 0.1, 0.6, 0.4, 0.8, 0.2, 0.6, 0.4, 0.7, 0.3, 0.2, 0.8, 0.45, 0.55, 0.5, 0.5;
  const std::vector<int> classes = {3, 7};  // column k is label classes[k]
  const auto picks = select_confident(p, classes, 3);
  ASSERT_EQ(picks.size(), 5u);  // 3 of column 0 (rows 0, 2, 4), both of column 1 (rows 5, 6)
  const std::vector<std::size_t> rows = {0, 2, 4, 5, 6};
  const std::vector<int> labels = {3, 3, 3, 7, 7};
  for (std::size_t i = 0; i < picks.size(); ++i) {
    EXPECT_EQ(picks[i].row, rows[i]);
    EXPECT_EQ(picks[i].label, labels[i]);
  }
  EXPECT_DOUBLE_EQ(picks[1].confidence, 0.8);
  EXPECT_DOUBLE_EQ(picks[4].confidence, 0.55);
  // Equal confidences: the lower row wins the last place (rows 1 and 3 at 0.6).
  const auto four = select_confident(p, classes, 4);
  ASSERT_EQ(four.size(), 6u);
  EXPECT_EQ(four[1].row, 1u);
  EXPECT_EQ(four[2].row, 2u);
  EXPECT_THROW(select_confident(p, classes, 0), std::invalid_argument);
  EXPECT_THROW(select_confident(p, {1, 2, 3}, 1), std::invalid_argument);
  EXPECT_DOUBLE_EQ(pick_precision(picks, {3, 0, 3, 0, 7, 7, 7, 3}), 0.8);  // row 4 is wrong
  EXPECT_DOUBLE_EQ(pick_precision({}, {}), 0.0);
}

TEST(PseudoLabel, ProbabilitiesAreTheSoftmaxOfTheLogitsAndTheSigmoidForTwoClasses) {
  LogisticModel m;
  m.classes = {0, 1, 2};
  m.coef = Eigen::MatrixXd::Identity(3, 2).eval();
  m.coef(2, 0) = m.coef(2, 1) = 0;
  m.intercept = Eigen::Vector3d(0, 0, std::log(2.0));
  ProbeMatrix x(1, 2);
  x << std::log(3.0), 0;  // logits ln 3, 0, ln 2: probabilities 3/6, 1/6, 2/6
  const Eigen::MatrixXd p = predict_proba(m, x);
  EXPECT_NEAR(p(0, 0), 0.5, 1e-12);
  EXPECT_NEAR(p(0, 1), 1.0 / 6, 1e-12);
  EXPECT_NEAR(p(0, 2), 1.0 / 3, 1e-12);
  LogisticModel b;
  b.classes = {4, 9};
  b.coef = Eigen::MatrixXd::Ones(1, 2);
  b.intercept = Eigen::VectorXd::Zero(1);
  ProbeMatrix xb(1, 2);
  xb << std::log(3.0), 0;  // z = ln 3: P(9) = 3/4
  const Eigen::MatrixXd pb = predict_proba(b, xb);
  EXPECT_NEAR(pb(0, 0), 0.25, 1e-12);
  EXPECT_NEAR(pb(0, 1), 0.75, 1e-12);
}

TEST(PseudoLabel, PoolDropsLabelledTextsAndRepeatsKeepingOrder) {
  EXPECT_EQ(unlabelled_pool({"a", "b", "c", "b", "d", "a", "e"}, {"c", "x"}),
            (std::vector<std::string>{"a", "b", "d", "e"}));
}

TEST(PseudoLabel, RecordsAreIntentRowsAsStsConvertWritesThem) {
  const auto d = pseudo_dialogs("hwu", {"wake me up at 7", "play jazz"},
                                {{1, 0, 0.9}}, {"play_music", "alarm_set"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(sts::to_json(d[0]).dump(),
            R"({"format":"sts/1","id":"hwu/pseudo/1","source":"hwu","turns":[{"role":"user",)"
            R"("text":"play jazz","label":{"DEFAULT_DOMAIN":{"play_music":{}}},)"
            R"("extra":{"pseudo_label_confidence":0.9}}]})");
  EXPECT_THROW(pseudo_dialogs("hwu", {"a"}, {{1, 0, 0.9}}, {"x"}), std::out_of_range);
}

TEST(PseudoLabel, VectorsOfTwoClustersLabelThePoolAndScoreVal) {
  // Labelled: two points per class around (+-2, 0); val: one right, one near the boundary and
  // wrong; pool: 3 clear class-0 rows, 1 clear class-1 row, one ambiguous row.
  ProbeMatrix lx(4, 2), vx(2, 2), px(5, 2);
  lx << -2, 0.1, -2.2, -0.1, 2, 0.1, 2.2, -0.1;
  vx << -2, 0, -0.1, 0;
  px << -3, 0, -2.5, 0, -1, 0, 2.8, 0, 0.05, 0;
  PseudoLabelOptions o;
  o.per_label = 2;
  const auto r = pseudo_label_vectors("banking", lx, {0, 0, 1, 1}, vx, {0, 1}, px,
                                      {"p0", "p1", "p2", "p3", "p4"}, {"lost_card", "top_up"}, o);
  EXPECT_EQ(r.labelled, 4u);
  EXPECT_EQ(r.pool, 5u);
  EXPECT_DOUBLE_EQ(r.val_accuracy, 0.5);
  // Kept: the two most confident class-0 rows (p0, p1) and both class-1 rows (p3, p4).
  ASSERT_EQ(r.kept, 4u);
  std::vector<std::string> ids;
  for (const auto& d : r.records) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"banking/pseudo/0", "banking/pseudo/1",
                                           "banking/pseudo/3", "banking/pseudo/4"}));
  EXPECT_EQ(sts::to_json(r.records[2])["turns"][0]["label"].dump(),
            R"({"DEFAULT_DOMAIN":{"top_up":{}}})");
  // Val share: per_label 2 of a 5-row pool, times 2 val rows -> 1 per label. Both val rows are
  // predicted class 0, so only the more confident one is kept, and it is right.
  EXPECT_EQ(r.val_kept, 1u);
  EXPECT_DOUBLE_EQ(r.val_precision, 1.0);
  EXPECT_GT(r.mean_confidence, 0.5);
  EXPECT_LE(r.mean_confidence, 1.0);
  o.per_label = 0;
  EXPECT_THROW(pseudo_label_vectors("banking", lx, {0, 0, 1, 1}, vx, {0, 1}, px,
                                    {"p0", "p1", "p2", "p3", "p4"}, {"a", "b"}, o),
               std::invalid_argument);
  o.per_label = 1;
  EXPECT_THROW(pseudo_label_vectors("banking", lx, {0, 0, 1, 1}, vx, {0, 1}, px, {"p0"},
                                    {"a", "b"}, o),
               std::invalid_argument);  // 5 vectors for 1 text
}

TEST(PseudoLabel, ProbabilitiesOfAnyClassifierMapColumnsThroughClasses) {
  // Column 0 is label 2 ("c"), column 1 label 0 ("a"), column 2 label 1 ("b").
  const std::vector<int> classes = {2, 0, 1};
  Eigen::MatrixXd val(4, 3), pool(5, 3);
  val << 0.8, 0.1, 0.1,  // -> c, right
      0.2, 0.7, 0.1,     // -> a, right
      0.3, 0.3, 0.4,     // -> b, wrong (truth c)
      0.5, 0.5, 0.0;     // tie -> column 0 = c, wrong (truth a)
  pool << 0.9, 0.05, 0.05, 0.1, 0.8, 0.1, 0.6, 0.2, 0.2, 0.1, 0.1, 0.8, 0.7, 0.2, 0.1;
  const auto r = pseudo_label_probabilities("hwu", val, {2, 0, 2, 0}, pool, classes,
                                            {"p0", "p1", "p2", "p3", "p4"}, {"a", "b", "c"}, 2);
  EXPECT_DOUBLE_EQ(r.val_accuracy, 0.5);
  EXPECT_EQ(r.pool, 5u);
  EXPECT_EQ(r.labelled, 0u);  // the caller's to fill
  // Column 0 (c) holds p0 0.9, p4 0.7, p2 0.6: p0 and p4 kept; a: p1; b: p3.
  ASSERT_EQ(r.kept, 4u);
  std::vector<std::string> got;
  for (const auto& d : r.records)
    got.push_back(d.id + " " + sts::to_json(d)["turns"][0]["label"]["DEFAULT_DOMAIN"].begin().key());
  EXPECT_EQ(got, (std::vector<std::string>{"hwu/pseudo/0 c", "hwu/pseudo/1 a", "hwu/pseudo/3 b",
                                           "hwu/pseudo/4 c"}));
  EXPECT_DOUBLE_EQ(r.mean_confidence, (0.9 + 0.8 + 0.8 + 0.7) / 4);
  // Val share: 2 of 5 pool rows per label x 4 val rows -> 2 per label: c keeps rows 0 and 3
  // (0.8, 0.5), a row 1, b row 2; right: rows 0 and 1.
  EXPECT_EQ(r.val_kept, 4u);
  EXPECT_DOUBLE_EQ(r.val_precision, 0.5);
  EXPECT_THROW(pseudo_label_probabilities("hwu", val, {2, 0, 2}, pool, classes,
                                          {"p0", "p1", "p2", "p3", "p4"}, {"a", "b", "c"}, 2),
               std::invalid_argument);  // 4 val rows for 3 labels
  EXPECT_THROW(pseudo_label_probabilities("hwu", val, {2, 0, 2, 0}, pool, {2, 0},
                                          {"p0", "p1", "p2", "p3", "p4"}, {"a", "b", "c"}, 2),
               std::invalid_argument);  // 3 columns for 2 classes
}

TEST(PseudoLabel, RecordsReadBackAsTheTrainingSplitOfSelfTraining) {
  testing::TempDir tmp;
  const std::vector<std::string> names = {"a", "b", "c"};
  const std::vector<std::string> pool = {"p0", "p1", "p2"};
  const auto records =
      pseudo_dialogs("hwu", pool, {{0, 2, 0.9}, {1, 0, 0.8}, {2, 2, 0.7}}, names);
  sts::write_jsonl(tmp.file("hwu.pseudo.jsonl"), records);
  const IntentSplit split = read_pseudo_labels(tmp.file("hwu.pseudo.jsonl"), names);
  EXPECT_EQ(split.texts, pool);
  EXPECT_EQ(split.labels, (std::vector<int>{2, 0, 2}));
  // Another task's categories: the record, its id and the intent are named.
  EXPECT_THAT(testing::error_of<DataError>(
                  [&] { read_pseudo_labels(tmp.file("hwu.pseudo.jsonl"), {"a", "b"}); }),
              ::testing::AllOf(::testing::HasSubstr("hwu.pseudo.jsonl"),
                               ::testing::HasSubstr("record 1 (id 'hwu/pseudo/0')"),
                               ::testing::HasSubstr("intent 'c' is not one of")));
  auto two_turns = records;
  two_turns[1].turns.push_back(two_turns[1].turns[0]);
  sts::write_jsonl(tmp.file("two.jsonl"), two_turns);
  EXPECT_THAT(testing::error_of<DataError>([&] { read_pseudo_labels(tmp.file("two.jsonl"), names); }),
              ::testing::HasSubstr("record 2 (id 'hwu/pseudo/1')"));
  auto unlabelled = records;
  unlabelled[2].turns[0].label.reset();
  sts::write_jsonl(tmp.file("none.jsonl"), unlabelled);
  EXPECT_THAT(
      testing::error_of<DataError>([&] { read_pseudo_labels(tmp.file("none.jsonl"), names); }),
      ::testing::HasSubstr("expected one intent under DEFAULT_DOMAIN"));
  EXPECT_THAT(
      testing::error_of<DataError>([&] { read_pseudo_labels(tmp.file("missing.jsonl"), names); }),
      ::testing::HasSubstr("no such file"));
  std::ofstream(tmp.file("empty.jsonl")) << "";
  EXPECT_THAT(
      testing::error_of<DataError>([&] { read_pseudo_labels(tmp.file("empty.jsonl"), names); }),
      ::testing::HasSubstr("no records"));
}

class PseudoLabelTask : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_tiny::save_tiny_bundle(tmp_.file("tok"), tmp_.file("bundle"), 5);
    bundle_ = model::load_bundle(tmp_.file("bundle"));
  }
  // hwu: train_10 = the first 3 texts of each intent, val the 4th and 5th, test the 8th; train.csv
  // = all 8 with the labels given by `train_label` (k: the intent's own index).
  fs::path write_data(const std::string& name, const std::function<int(int)>& train_label) {
    const fs::path dir = tmp_.path() / name;
    fs::create_directories(dir / "hwu");
    std::ofstream(dir / "hwu" / "categories.json") << nlohmann::json(testing_tiny::kLabels).dump();
    auto csv = [&](const std::string& file, int from, int to, bool train) {
      std::ofstream out(dir / "hwu" / file);
      out << "text,category\n";
      for (int k = 0; k < 3; ++k) {
        for (int i = from; i < to; ++i) {
          out << testing_tiny::kTexts[k][i] << ","
              << testing_tiny::kLabels[train ? train_label(k) : k] << "\n";
        }
      }
    };
    csv("train.csv", 0, 8, true);
    csv("train_10.csv", 0, 3, false);
    csv("val.csv", 3, 5, false);
    csv("test.csv", 7, 8, false);
    return dir;
  }
  testing::TempDir tmp_;
  model::LoadedBundle bundle_;
};

TEST_F(PseudoLabelTask, LabelsTheTrainTextsWithoutReadingTheirLabels) {
  PseudoLabelOptions o;
  o.per_label = 2;
  o.bf16 = false;
  const auto right = write_data("right", [](int k) { return k; });
  const auto wrong = write_data("wrong", [](int) { return 0; });  // every train label "card_arrival"
  const PseudoLabelReport a = pseudo_label_task(*bundle_.model, *bundle_.tokenizer,
                                                load_pseudo_label_data(right.string(), "hwu"), o);
  const PseudoLabelReport b = pseudo_label_task(*bundle_.model, *bundle_.tokenizer,
                                                load_pseudo_label_data(wrong.string(), "hwu"), o);
  EXPECT_EQ(a.labelled, 9u);
  EXPECT_EQ(a.pool, 15u);  // 24 train texts less the 9 of train_10
  EXPECT_LE(a.kept, 6u);   // at most 2 per label
  EXPECT_GE(a.kept, 2u);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i)
    EXPECT_EQ(sts::to_json(a.records[i]).dump(), sts::to_json(b.records[i]).dump());
  EXPECT_DOUBLE_EQ(a.val_accuracy, b.val_accuracy);
  for (const auto& d : a.records) {
    EXPECT_EQ(d.source, "hwu");
    ASSERT_EQ(d.turns.size(), 1u);
    EXPECT_TRUE(d.turns[0].label.has_value());
  }
  EXPECT_TRUE(a.converged);
  EXPECT_THROW(load_pseudo_label_data(right.string(), "top"), std::invalid_argument);
}

TEST_F(PseudoLabelTask, AFineTunedTeachersHeadLabelsThePoolThroughItsLabelNames) {
  // The teacher is fine-tuned with its intents in another order than categories.json
  // (head column k = teacher_labels[k]), so only a mapping by name gives the right records.
  const auto dir = write_data("teach", [](int k) { return k; });
  const PseudoLabelData data = load_pseudo_label_data(dir.string(), "hwu");
  const std::vector<std::string> teacher_labels = {testing_tiny::kLabels[2],
                                                   testing_tiny::kLabels[0],
                                                   testing_tiny::kLabels[1]};
  auto teacher_id = [&](int k) {
    return static_cast<int>(std::find(teacher_labels.begin(), teacher_labels.end(),
                                      data.label_names[static_cast<std::size_t>(k)]) -
                            teacher_labels.begin());
  };
  // Trained on texts 0-5 of each intent (as TinyIntent, which separates them), val 6, test 7.
  IntentTask task;
  task.name = "hwu";
  task.labels = teacher_labels;
  for (int i = 0; i < 8; ++i) {
    for (int k = 0; k < 3; ++k) {
      IntentSplit& split = i < 6 ? task.train : (i == 6 ? task.val : task.test);
      split.texts.push_back(testing_tiny::kTexts[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)]);
      split.labels.push_back(teacher_id(k));
    }
  }
  FinetuneOptions ft;
  ft.num_train_epochs = 25;
  ft.per_device_train_batch_size = 6;
  ft.learning_rate = 3e-3;
  ft.dropout = 0.0;
  ft.bf16 = false;
  const IntentRunResult run =
      finetune_intent(tmp_.file("bundle"), task, ft, 1, {}, tmp_.file("teacher"));
  ASSERT_DOUBLE_EQ(run.best_val_accuracy, 1.0);
  model::LoadedBundle teacher = model::load_bundle(tmp_.file("teacher"));
  ASSERT_EQ(teacher.info.intent_labels, teacher_labels);

  PseudoLabelOptions o;
  o.per_label = 3;
  o.bf16 = false;
  const PseudoLabelReport r = pseudo_label_task_head(*teacher.model, *teacher.tokenizer,
                                                     teacher.info.intent_labels, data, o, "T");
  EXPECT_EQ(r.labeller, "T");
  EXPECT_EQ(r.labelled, 9u);
  EXPECT_EQ(r.pool, 15u);
  EXPECT_DOUBLE_EQ(r.val_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(r.val_precision, 1.0);
  EXPECT_EQ(r.to_json()["labeller"], "T");
  // The pool's texts are kTexts[k][3..7]; every kept record carries its text's own intent.
  ASSERT_EQ(r.kept, 9u);
  for (const auto& d : r.records) {
    const std::string text = d.turns[0].text;
    const std::string label =
        sts::to_json(d)["turns"][0]["label"]["DEFAULT_DOMAIN"].begin().key();
    int truth = -1;
    for (int k = 0; k < 3; ++k)
      for (const auto& t : testing_tiny::kTexts[static_cast<std::size_t>(k)])
        if (t == text) truth = k;
    EXPECT_EQ(label, testing_tiny::kLabels[static_cast<std::size_t>(truth)]) << text;
  }
  // A head whose intents are not the task's is refused, naming the intent.
  std::vector<std::string> other = teacher_labels;
  other[1] = "alarm_set";
  EXPECT_THAT(testing::error_of<std::invalid_argument>([&] {
                pseudo_label_task_head(*teacher.model, *teacher.tokenizer, other, data, o, "T");
              }),
              ::testing::HasSubstr("'alarm_set' is not an intent of hwu"));
  EXPECT_THROW(pseudo_label_task_head(*bundle_.model, *bundle_.tokenizer, teacher_labels, data, o,
                                      "no head"),
               std::invalid_argument);
}

TEST_F(PseudoLabelTask, RefusesDataItCannotCheckNamingTheFile) {
  // One intent in train_10: no classifier; an empty val: no precision check.
  const auto one = write_data("one", [](int k) { return k; });
  {
    std::ofstream out(one / "hwu" / "train_10.csv");
    out << "text,category\n" << testing_tiny::kTexts[0][0] << "," << testing_tiny::kLabels[0]
        << "\n";
  }
  EXPECT_THAT(testing::error_of<DataError>([&] { load_pseudo_label_data(one.string(), "hwu"); }),
              ::testing::AllOf(::testing::HasSubstr("train_10.csv"),
                               ::testing::HasSubstr("needs at least two")));
  const auto noval = write_data("noval", [](int k) { return k; });
  std::ofstream(noval / "hwu" / "val.csv") << "text,category\n";
  EXPECT_THAT(testing::error_of<DataError>([&] { load_pseudo_label_data(noval.string(), "hwu"); }),
              ::testing::HasSubstr("val.csv"));
}

}  // namespace
}  // namespace dialtree::eval
