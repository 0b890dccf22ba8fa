// eval/tag_probe: the token-level probe's fit and DialoGLUE scoring on known answers. Vectors
// that encode each word's gold tag (one-hot) must score 100 through the real data, the real
// word-to-piece mapping and DialoGLUE's metric; vectors that carry nothing must predict the
// majority tag everywhere and score what that scores.
#include <algorithm>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "eval/submission.h"
#include "eval/tag_probe.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

using ::testing::HasSubstr;

/// Vectors of `xs`: each word's row is the one-hot of its gold tag id (or zeros when
/// `informative` is false); [CLS] the one-hot of the intent id (TOP) or zeros.
WordVectors oracle_vectors(const TaggingTask& task, const std::vector<TaggingExample>& xs,
                           bool informative) {
  const auto d = static_cast<Eigen::Index>(
      std::max(task.tag_labels.size(), std::max<std::size_t>(task.intent_labels.size(), 1)));
  WordVectors v;
  Eigen::Index n = 0;
  for (const auto& x : xs) n += static_cast<Eigen::Index>(x.words.size());
  v.words = ProbeMatrix::Zero(n, d);
  v.cls = ProbeMatrix::Zero(static_cast<Eigen::Index>(xs.size()), d);
  Eigen::Index r = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    v.rows.emplace_back();
    for (const auto& tag : xs[i].tags) {
      const auto id = std::find(task.tag_labels.begin(), task.tag_labels.end(), tag) -
                      task.tag_labels.begin();
      if (informative) v.words(r, id) = 1.0;
      v.rows.back().push_back(r++);
    }
    if (informative && !task.intent_labels.empty()) {
      const auto id = std::find(task.intent_labels.begin(), task.intent_labels.end(),
                                xs[i].intent) -
                      task.intent_labels.begin();
      v.cls(static_cast<Eigen::Index>(i), id) = 1.0;
    }
  }
  return v;
}

class TagProbe : public ::testing::Test {
 protected:
  std::string data_ = testing::shared_data("dialoglue");
};

TEST_F(TagProbe, VectorsThatEncodeTheGoldTagsScoreOneHundredSlotF1) {
  const TaggingTask task = load_tagging_task(data_, "restaurant8k", Setting::Few);
  const TagMapper mapper(data_, task);
  ProbeOptions o;
  o.threads = 1;
  // Every tag of a val word occurs in train_10's words for restaurant8k.
  const TagProbeRow row =
      probe_tagging(task, oracle_vectors(task, task.train, true), task.val,
                    oracle_vectors(task, task.val, true), "val", mapper,
                    mapper.gold_submission(task.val), o);
  EXPECT_EQ(row.task, "restaurant8k");
  EXPECT_EQ(row.metric, "slot F1");
  EXPECT_EQ(row.split, "val");
  EXPECT_EQ(row.train_examples, task.train.size());
  EXPECT_EQ(row.eval_examples, task.val.size());
  EXPECT_NEAR(row.score, 1.0, 1e-4);  // DialoGLUE's 1e-5 smoothing keeps it just under 1
  EXPECT_DOUBLE_EQ(row.tag_accuracy, 1.0);
  EXPECT_LT(row.intent_accuracy, 0);  // no intent for slot tasks
  EXPECT_TRUE(row.lr_converged);
  std::set<std::string> train_tags;  // 9 of the 11: train_10 has no I-first_name, I-last_name
  for (const auto& x : task.train) train_tags.insert(x.tags.begin(), x.tags.end());
  EXPECT_EQ(row.tag_classes, static_cast<int>(train_tags.size()));
}

TEST_F(TagProbe, UninformativeVectorsPredictTheMajorityTagAndScoreZero) {
  const TaggingTask task = load_tagging_task(data_, "restaurant8k", Setting::Few);
  const TagMapper mapper(data_, task);
  ProbeOptions o;
  o.threads = 1;
  const TagProbeRow row =
      probe_tagging(task, oracle_vectors(task, task.train, false), task.val,
                    oracle_vectors(task, task.val, false), "val", mapper,
                    mapper.gold_submission(task.val), o);
  // Constant vectors: only the intercept is fitted, so every word gets the most frequent
  // training tag, "O": no span predicted, slot F1 0, and the word accuracy is O's share of val.
  std::size_t words = 0, o_words = 0;
  for (const auto& x : task.val) {
    words += x.tags.size();
    o_words += static_cast<std::size_t>(std::count(x.tags.begin(), x.tags.end(), "O"));
  }
  EXPECT_NEAR(row.score, 0.0, 1e-12);
  EXPECT_NEAR(row.tag_accuracy, static_cast<double>(o_words) / static_cast<double>(words), 1e-12);
}

TEST_F(TagProbe, TopScoresExactMatchWithTheIntentFromCls) {
  TaggingTask task = load_tagging_task(data_, "top", Setting::Few);
  task.train.resize(400);  // keeps the fit small; scored on the same examples
  const TagMapper mapper(data_, task);
  ProbeOptions o;
  o.threads = 2;  // the intent fit runs beside the tagger's
  const WordVectors v = oracle_vectors(task, task.train, true);
  const TagProbeRow row = probe_tagging(task, v, task.train, v, "val", mapper,
                                        mapper.gold_submission(task.train), o);
  EXPECT_EQ(row.task, "top");
  EXPECT_EQ(row.metric, "exact match");
  EXPECT_DOUBLE_EQ(row.score, 1.0);
  EXPECT_DOUBLE_EQ(row.tag_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(row.intent_accuracy, 1.0);
  // The intent alone decides a miss: [CLS] without information gives the majority intent.
  WordVectors blind = v;
  blind.cls.setZero();
  const TagProbeRow miss = probe_tagging(task, blind, task.train, blind, "val", mapper,
                                         mapper.gold_submission(task.train), o);
  std::map<std::string, int> counts;
  for (const auto& x : task.train) ++counts[x.intent];
  const auto majority = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->second;
  EXPECT_NEAR(miss.intent_accuracy, majority / 400.0, 1e-12);
  EXPECT_NEAR(miss.score, majority / 400.0, 1e-12);
}

TEST_F(TagProbe, VectorsThatDoNotMatchTheExamplesAreRefused) {
  const TaggingTask task = load_tagging_task(data_, "restaurant8k", Setting::Few);
  const TagMapper mapper(data_, task);
  WordVectors v = oracle_vectors(task, task.train, true);
  v.rows.pop_back();
  try {
    probe_tagging(task, v, task.val, oracle_vectors(task, task.val, true), "val", mapper,
                  mapper.gold_submission(task.val), {});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("training split"));
  }
}

}  // namespace
}  // namespace dialtree::eval
