// eval/tag_mapping + eval/tasks: DialoGLUE's word-level gold tags, pushed through the same
// mapping that turns predictions into DialoGLUE's piece-level scheme, give gt_test.json exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_util.h"
#include "eval/submission.h"
#include "eval/tag_mapping.h"
#include "eval/tasks.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

using ::testing::HasSubstr;

class RealTagging : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(RealTagging, GoldWordTagsMapToTheAnswerKeyExactly) {
  const auto [folder, key] = GetParam();
  const std::string data = testing::shared_data("dialoglue");
  const TaggingTask task = load_tagging_task(data, folder, Setting::Few);
  const TagMapper mapper(data, task);
  const nlohmann::json gold = json_parse_file(data + "/gt_test.json");
  const nlohmann::json ours = mapper.gold_submission(task.test);
  ASSERT_EQ(ours.size(), gold.at(key).size());
  std::size_t equal = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) equal += ours[i] == gold.at(key)[i] ? 1 : 0;
  EXPECT_EQ(equal, ours.size());
  // And the scorer agrees: 100 (slot F1 just under 1 by its 1e-5 smoothing).
  const TaskScore s = score_task(parse_task(key), ours, gold);
  EXPECT_NEAR(s.value, 1.0, 1e-5);
  // The few-shot training split is the 10% sample (docs/dialoglue.md §1).
  EXPECT_FALSE(task.train.empty());
  EXPECT_FALSE(task.val.empty());
}

INSTANTIATE_TEST_SUITE_P(DialoGLUE, RealTagging,
                         ::testing::Values(std::make_pair("restaurant8k", "restaurant8k"),
                                           std::make_pair("dstc8_sgd", "dstc8"),
                                           std::make_pair("top", "top")));

TEST(TagMapper, PredictedWordTagsBecomePieceSpans) {
  const std::string data = testing::shared_data("dialoglue");
  TaggingTask task;
  task.name = "restaurant8k";
  task.tag_labels = {"O", "B-time", "I-time", "B-people", "I-people"};
  const TagMapper mapper(data, task);
  // "sacramento" is one piece, "7:30pm" is 4 pieces (7 : 30 ##pm): the I- form spreads over them.
  const std::vector<std::string> words = {"table", "for", "4", "at", "7:30pm"};
  EXPECT_EQ(mapper.slot_spans(words, {"O", "O", "B-people", "O", "B-time"}),
            (SpanList{"people:2-3", "time:4-8"}));
  // An I- tag that does not continue an open span opens nothing (§4 step 6).
  EXPECT_EQ(mapper.slot_spans(words, {"O", "O", "I-people", "O", "O"}), SpanList{});
  EXPECT_THROW(mapper.slot_spans(words, {"O"}), std::invalid_argument);

  TaggingTask top;
  top.name = "top";
  top.tag_labels = {"O", "B-SL_LOCATION", "I-SL_LOCATION"};
  const TagMapper top_mapper(data, top);
  // The bare ":" word disappears as in DialoGLUE's loader; "downtown" is one piece.
  const TopParse p = top_mapper.top_parse({"go", ":", "downtown"}, {"O", "O", "B-SL_LOCATION"},
                                          "IN_GET_DIRECTIONS");
  EXPECT_EQ(p.intent, "IN_GET_DIRECTIONS");
  EXPECT_EQ(p.tags, (std::vector<std::string>{"O", "B-SL_LOCATION"}));
}

TEST(TaggingTask, RejectsUnknownTasks) {
  const std::string data = testing::shared_data("dialoglue");
  EXPECT_THROW(load_tagging_task(data, "banking", Setting::Few), std::invalid_argument);
  EXPECT_THROW(load_intent_task(data, "top", Setting::Few), std::invalid_argument);
  EXPECT_THROW(load_tagging_task(data + "/nowhere", "top", Setting::Few), DataError);
  EXPECT_EQ(parse_setting("few"), Setting::Few);
  EXPECT_THROW(parse_setting("Few"), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::eval
