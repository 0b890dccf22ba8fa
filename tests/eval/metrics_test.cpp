// DialoGLUE metrics (docs/dialoglue.md §3-§6): the real answer key gt_test.json scored against
// itself, and hand-made perturbations and sets whose scores were computed by hand.
#include "eval/metrics.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "eval/submission.h"
#include "readers/multiwoz.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::eval {
namespace {

using dialtree::testing::answer_key;
using dialtree::testing::percent;

using dialtree::testing::fixture;
using dialtree::testing::shared_data;
using ::testing::HasSubstr;

// F1 of one slot type whose TP, #predicted and #to-recall are given (docs/dialoglue.md §4 step 7).
double type_f1(double tp, double predicted, double to_recall) {
  const double p = tp / (1e-5 + predicted), r = tp / (1e-5 + to_recall);
  return 2 * p * r / (1e-5 + p + r);
}

// --- the real answer key against itself ---------------------------------------------------------

TEST(GoldAgainstItself, IntentTasksScoreExactly100) {
  for (const char* key : {"hwu", "banking", "clinc"}) {
    const auto gold = answer_key().at(key).get<std::vector<std::string>>();
    EXPECT_EQ(intent_accuracy(gold, gold), 1.0) << key;
    EXPECT_EQ(percent(intent_accuracy(gold, gold)), "100.00") << key;
  }
  EXPECT_EQ(answer_key().at("banking").size(), 3080u);
  EXPECT_EQ(answer_key().at("clinc").size(), 4500u);
  EXPECT_EQ(answer_key().at("hwu").size(), 1076u);
}

TEST(GoldAgainstItself, SlotTasksGiveJustUnderOneAndPrint100) {
  for (const char* key : {"restaurant8k", "dstc8"}) {
    const auto gold = answer_key().at(key).get<std::vector<SpanList>>();
    const SlotF1 r = slot_f1_details(gold, gold);
    // The epsilons make a perfect score 0.99999...: each type has TP = #predicted = #to-recall.
    EXPECT_LT(r.score, 1.0) << key;
    EXPECT_GT(r.score, 0.9999) << key;
    EXPECT_EQ(percent(r.score), "100.00") << key;
    ASSERT_FALSE(r.types.empty());
    double sum = 0;
    for (const auto& t : r.types) {
      EXPECT_EQ(t.true_positives, t.predicted) << key << " " << t.type;
      EXPECT_EQ(t.predicted, t.to_recall) << key << " " << t.type;
      const double n = static_cast<double>(t.predicted);
      EXPECT_DOUBLE_EQ(t.f1, type_f1(n, n, n)) << key << " " << t.type;
      sum += t.f1;
    }
    EXPECT_DOUBLE_EQ(r.score, sum / static_cast<double>(r.types.size()));
  }
}

TEST(GoldAgainstItself, TopScoresExactly100) {
  std::vector<TopParse> gold;
  for (const auto& e : answer_key().at("top")) {
    gold.push_back({e.at(0).get<std::string>(), e.at(1).get<std::vector<std::string>>()});
  }
  ASSERT_EQ(gold.size(), 9042u);
  EXPECT_EQ(top_exact_match(gold, gold), 1.0);
  EXPECT_EQ(percent(top_exact_match(gold, gold)), "100.00");
}

// --- intent accuracy ----------------------------------------------------------------------------

TEST(IntentAccuracy, ThreeFlippedBankingLabels) {
  const auto gold = answer_key().at("banking").get<std::vector<std::string>>();
  auto pred = gold;
  for (std::size_t i : {0u, 1500u, 3079u}) {
    pred[i] = pred[i] == "card_arrival" ? "card_linking" : "card_arrival";
  }
  EXPECT_EQ(intent_accuracy(pred, gold), 3077.0 / 3080.0);
  EXPECT_EQ(percent(intent_accuracy(pred, gold)), "99.90");
  // Byte comparison: case and spaces matter.
  EXPECT_EQ(intent_accuracy({"Card_arrival", "card_arrival "}, {"card_arrival", "card_arrival"}),
            0.0);
  EXPECT_EQ(intent_accuracy({"a", "b", "x", "d"}, {"a", "b", "c", "d"}), 0.75);
}

TEST(IntentAccuracy, BadInputThrows) {
  try {
    intent_accuracy({"a"}, {"a", "b"});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("1 predictions for 2 gold examples"));
  }
  EXPECT_THROW(intent_accuracy({}, {}), std::invalid_argument);
}

// --- slot F1 ------------------------------------------------------------------------------------

// Gold types: date, leaving_date, people, time. Per type (kept = spans containing the type):
//   date:         ex0 [date:3-4] both; ex1 [leaving_date:0-1] both (substring quirk)
//                 -> TP 2, predicted 2, to_recall 2
//   leaving_date: ex1 both -> TP 1, predicted 1, to_recall 1
//   people:       ex3 gold only -> TP 0, predicted 0, to_recall 1 -> F1 0
//   time:         ex0 [time:1-2] both; ex2 gold [time:1-2, time:5-6] vs predicted in the other
//                 order -> not equal -> TP 1, predicted 2, to_recall 2
// "bogus" occurs only in predictions, so it is no type.
TEST(SlotF1, HandComputedTypesWithSubstringQuirkAndOrder) {
  const std::vector<SpanList> gold = {
      {"time:1-2", "date:3-4"}, {"leaving_date:0-1"}, {"time:1-2", "time:5-6"}, {"people:0-1"}};
  const std::vector<SpanList> pred = {
      {"date:3-4", "time:1-2"}, {"leaving_date:0-1"}, {"time:5-6", "time:1-2"}, {"bogus:0-1"}};
  const SlotF1 r = slot_f1_details(pred, gold);
  ASSERT_EQ(r.types.size(), 4u);
  EXPECT_EQ(r.types[0].type, "date");
  EXPECT_EQ(r.types[1].type, "leaving_date");
  EXPECT_EQ(r.types[2].type, "people");
  EXPECT_EQ(r.types[3].type, "time");
  const std::size_t want[4][3] = {{2, 2, 2}, {1, 1, 1}, {0, 0, 1}, {1, 2, 2}};
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(r.types[k].true_positives, want[k][0]) << r.types[k].type;
    EXPECT_EQ(r.types[k].predicted, want[k][1]) << r.types[k].type;
    EXPECT_EQ(r.types[k].to_recall, want[k][2]) << r.types[k].type;
  }
  // By hand: date P = R = 2/2.00001 = 0.999995, F1 = 2PR/(1e-5+P+R) = 0.99999;
  // leaving_date P = R = 1/1.00001 = 0.99999, F1 = 0.999985; people 0;
  // time P = R = 1/2.00001 = 0.4999975, F1 = 2 * 0.4999975^2 / 1.000005 = 0.4999925.
  EXPECT_NEAR(r.types[0].precision, 0.999995, 1e-9);
  EXPECT_NEAR(r.types[0].f1, 0.99999, 1e-9);
  EXPECT_NEAR(r.types[1].precision, 0.99999, 1e-9);
  EXPECT_NEAR(r.types[1].f1, 0.999985, 1e-9);
  EXPECT_EQ(r.types[2].precision, 0.0);
  EXPECT_EQ(r.types[2].recall, 0.0);
  EXPECT_EQ(r.types[2].f1, 0.0);
  EXPECT_NEAR(r.types[3].precision, 0.4999975, 1e-9);
  EXPECT_NEAR(r.types[3].f1, 0.4999925, 1e-9);
  EXPECT_NEAR(r.score, (0.99999 + 0.999985 + 0.0 + 0.4999925) / 4, 1e-9);
  EXPECT_EQ(slot_f1(pred, gold), r.score);

  // The same spans for example 2 in gold order make "time" as good as "date" (TP 2 of 2).
  auto fixed = pred;
  fixed[2] = gold[2];
  EXPECT_NEAR(slot_f1_details(fixed, gold).types[3].f1, 0.99999, 1e-9);
}

TEST(SlotF1, SubstringQuirkCanCostAType) {
  // Missing "leaving_date" in example 1 also fails type "date", which keeps that span.
  const std::vector<SpanList> gold = {{"date:0-1"}, {"leaving_date:2-3"}};
  const std::vector<SpanList> pred = {{"date:0-1"}, {}};
  const SlotF1 r = slot_f1_details(pred, gold);
  ASSERT_EQ(r.types.size(), 2u);
  EXPECT_EQ(r.types[0].type, "date");
  EXPECT_EQ(r.types[0].true_positives, 1u);
  EXPECT_EQ(r.types[0].predicted, 1u);
  EXPECT_EQ(r.types[0].to_recall, 2u);  // a plain per-type count would give 1
  EXPECT_DOUBLE_EQ(r.types[0].f1, type_f1(1, 1, 2));
  EXPECT_EQ(r.types[1].f1, 0.0);
  // An extra predicted span of another type that contains "date" also breaks "date" there.
  const SlotF1 r2 = slot_f1_details({{"date:0-1", "update:5-6"}, {"leaving_date:2-3"}}, gold);
  EXPECT_EQ(r2.types[0].true_positives, 1u);  // example 0 fails, example 1 passes
  EXPECT_EQ(r2.types[0].predicted, 2u);
}

TEST(SlotF1, EmptyGoldAndBadInput) {
  // No gold span at all: no types, score 0 (DialoGLUE would average an empty list).
  EXPECT_EQ(slot_f1({{"time:0-1"}, {}}, {{}, {}}), 0.0);
  EXPECT_THROW(slot_f1({{}}, {{}, {}}), std::invalid_argument);
  EXPECT_THROW(slot_f1({}, {}), std::invalid_argument);
}

TEST(SlotF1, DroppingOneDstc8SpanLowersOnlyItsTypes) {
  const auto gold = answer_key().at("dstc8").get<std::vector<SpanList>>();
  ASSERT_EQ(gold[1], (SpanList{"leaving_date:12-14", "from_location:24-25"}));
  auto pred = gold;
  pred[1] = {"from_location:24-25"};  // drop the leaving_date span of example 1
  const SlotF1 base = slot_f1_details(gold, gold), r = slot_f1_details(pred, gold);
  ASSERT_EQ(base.types.size(), r.types.size());
  for (std::size_t k = 0; k < r.types.size(); ++k) {
    const auto& t = r.types[k];
    const auto& b = base.types[k];
    const bool hit = std::string("leaving_date").find(t.type) != std::string::npos;
    if (hit) {
      // Example 1 no longer predicts this type: one TP and one prediction fewer.
      EXPECT_EQ(t.true_positives, b.true_positives - 1) << t.type;
      EXPECT_EQ(t.predicted, b.predicted - 1) << t.type;
      EXPECT_EQ(t.to_recall, b.to_recall) << t.type;
    } else {
      EXPECT_EQ(t.f1, b.f1) << t.type;
    }
  }
  EXPECT_LT(r.score, base.score);
}

// --- TOP exact match ----------------------------------------------------------------------------

std::vector<TopParse> top_gold() {
  std::vector<TopParse> gold;
  for (const auto& e : answer_key().at("top")) {
    gold.push_back({e.at(0).get<std::string>(), e.at(1).get<std::vector<std::string>>()});
  }
  return gold;
}

TEST(TopExactMatch, EachKindOfErrorDropsExactlyOneExample) {
  const auto gold = top_gold();
  const double n = static_cast<double>(gold.size());
  auto wrong_intent = gold;
  wrong_intent[0].intent =
      wrong_intent[0].intent == "IN_GET_EVENT" ? "IN_UNSUPPORTED" : "IN_GET_EVENT";
  EXPECT_EQ(top_exact_match(wrong_intent, gold), (n - 1) / n);
  auto wrong_tag = gold;
  ASSERT_GE(wrong_tag[1].tags.size(), 1u);
  wrong_tag[1].tags.back() = wrong_tag[1].tags.back() == "O" ? "B-SL_DATE_TIME" : "O";
  EXPECT_EQ(top_exact_match(wrong_tag, gold), (n - 1) / n);
  auto short_tags = gold;
  short_tags[2].tags.pop_back();
  EXPECT_EQ(top_exact_match(short_tags, gold), (n - 1) / n);
  // Both errors in one example still cost one; three examples cost three.
  auto both = wrong_intent;
  both[0].tags = wrong_tag[1].tags;
  EXPECT_EQ(top_exact_match(both, gold), (n - 1) / n);
  auto three = wrong_intent;
  three[1] = wrong_tag[1];
  three[2] = short_tags[2];
  EXPECT_EQ(top_exact_match(three, gold), (n - 3) / n);
  EXPECT_EQ(percent(top_exact_match(three, gold)), "99.97");
}

TEST(TopExactMatch, BadInputThrows) {
  EXPECT_THROW(top_exact_match({{"IN_A", {"O"}}}, {}), std::invalid_argument);
  EXPECT_THROW(top_exact_match({}, {}), std::invalid_argument);
}

// --- MultiWOZ joint goal accuracy ---------------------------------------------------------------

LabelMaps centre_maps() {
  return normalize_label_maps({{"centre", {"center", "downtown"}}, {"moderate", {"mid-range"}}});
}

TEST(TripPyNormalize, SplitsAtNonWordRunsKeepingThem) {
  const std::pair<const char*, const char*> table[] = {
      {"centre", "centre"},
      {"  guest   house ", "guest house"},
      {"mid-range", "mid - range"},
      {"5:30", "5 : 30"},
      {"17:30", "17 : 30"},
      {"saint john's college", "saint john ' s college"},
      {"a , - b", "a , - b"},  // inner space of a separator run is kept
      {"\xC2\xA7\xC2\xA7"
       "centre",
       "\xC2\xA7\xC2\xA7 centre"},             // "§§centre" -> "§§ centre"
      {"caf\xC3\xA9 uno", "caf\xC3\xA9 uno"},  // é is a word character
      {"\xC4\xA0the\xC4\xA0"
       "gard enia",
       "the gardenia"},  // RoBERTa 'Ġ' marks
      {"", ""},
      {"---", "---"},
  };
  for (const auto& [in, out] : table) {
    EXPECT_EQ(trippy_normalize_value(in), out) << "'" << in << "'";
    EXPECT_EQ(trippy_normalize_value(out), out) << "idempotent: '" << out << "'";
  }
}

TEST(DstValueCorrect, VariantsDontcareAndNone) {
  const LabelMaps maps = centre_maps();
  EXPECT_TRUE(dst_value_correct("center", "centre", maps));
  EXPECT_TRUE(dst_value_correct("downtown", "centre", maps));
  EXPECT_FALSE(dst_value_correct("centre", "center", maps));  // one-directional, as in TripPy
  EXPECT_TRUE(dst_value_correct("mid-range", "moderate", maps));
  EXPECT_TRUE(dst_value_correct("mid - range", "moderate", maps));
  EXPECT_TRUE(dst_value_correct("5 : 30", "5:30", maps));
  EXPECT_FALSE(dst_value_correct("none", "dontcare", maps));
  EXPECT_FALSE(dst_value_correct("dontcare", "none", maps));
  EXPECT_TRUE(dst_value_correct("dontcare", "dontcare", maps));
  EXPECT_FALSE(dst_value_correct("Centre", "centre", maps));  // no lower-casing
}

TEST(JointGoalAccuracy, ThreeTurnsOneWrongSlot) {
  const LabelMaps maps = centre_maps();
  const std::vector<BeliefState> gold = {
      {{"hotel-area", "centre"}},
      {{"hotel-area", "centre"}, {"hotel-stars", "4"}},
      {{"hotel-area", "centre"}, {"hotel-stars", "4"}, {"hotel-parking", "dontcare"}}};
  std::vector<BeliefState> pred = {
      {{"hotel-area", "center"}},                        // variant: correct
      {{"hotel-area", "centre"}, {"hotel-stars", "3"}},  // one wrong slot
      {{"hotel-area", "downtown"}, {"hotel-stars", "4"}, {"hotel-parking", "dontcare"}}};
  EXPECT_DOUBLE_EQ(joint_goal_accuracy(pred, gold, maps), 2.0 / 3.0);
  // Without label maps the two variant turns are wrong as well.
  EXPECT_EQ(joint_goal_accuracy(pred, gold, {}), 0.0);

  // dontcare vs none: a missing slot is "none", which is not "dontcare".
  auto no_parking = pred;
  no_parking[2].erase("hotel-parking");
  EXPECT_DOUBLE_EQ(joint_goal_accuracy(no_parking, gold, maps), 1.0 / 3.0);
  // ... and the other way round: predicted dontcare where the gold state has nothing.
  auto extra = pred;
  extra[0]["hotel-parking"] = "dontcare";
  EXPECT_DOUBLE_EQ(joint_goal_accuracy(extra, gold, maps), 1.0 / 3.0);
  // An explicit "none" equals an absent slot.
  auto explicit_none = pred;
  explicit_none[0]["hotel-parking"] = "none";
  EXPECT_DOUBLE_EQ(joint_goal_accuracy(explicit_none, gold, maps), 2.0 / 3.0);

  EXPECT_THROW(joint_goal_accuracy({{}}, gold, maps), std::invalid_argument);
  EXPECT_THROW(joint_goal_accuracy({}, {}, maps), std::invalid_argument);
}

TEST(JointGoalAccuracy, GoldStatesFromTheMultiwozReader) {
  std::vector<BeliefState> gold;
  for (const auto& d : readers::read_multiwoz(fixture("multiwoz/train_dials.json"))) {
    for (const auto& t : d.turns) {
      if (t.role == "system") gold.push_back(t.belief);
    }
  }
  ASSERT_GE(gold.size(), 3u);
  const double n = static_cast<double>(gold.size());
  EXPECT_EQ(joint_goal_accuracy(gold, gold, {}), 1.0);
  auto pred = gold;
  pred.back()["taxi-destination"] = "nowhere";
  EXPECT_DOUBLE_EQ(joint_goal_accuracy(pred, gold, {}), (n - 1) / n);
}

// TripPy's prediction records: 2 dialogues, 2 turns each, slots hotel-area and hotel-stars.
// class_types as in TripPy's multiwoz21.json: none 0, dontcare 1, copy_value 2, true 3, false 4,
// inform 5, refer 6.
TripPyConfig small_config() {
  TripPyConfig c;
  c.class_types = {"none", "dontcare", "copy_value", "true", "false", "inform", "refer"};
  c.slots = {"hotel-area", "hotel-stars"};
  c.label_maps = centre_maps();
  return c;
}

TripPyTurn record(const char* dialog, const char* turn, TripPySlotPrediction area,
                  TripPySlotPrediction stars) {
  TripPyTurn t;
  t.guid = {"test", dialog, turn};
  t.slots = {{"hotel-area", std::move(area)}, {"hotel-stars", std::move(stars)}};
  return t;
}

std::vector<TripPyTurn> small_records() {
  return {
      // Turn correct: area copied "center" (variant of gold "centre"), stars none/none.
      record("D1.json", "0", {2, 2, "centre", "center"}, {0, 0, "none", "none"}),
      // Turn wrong: area kept (class none) = "center", ok; stars predicted dontcare, gold "4".
      record("D1.json", "1", {0, 0, "centre", "center"}, {2, 1, "4", "dontcare"}),
      // New dialogue: state reset. area none; stars refer to "§§ none" keeps none. Correct.
      record("D2.json", "0", {0, 0, "none", "center"}, {0, 6, "none", "\xC2\xA7\xC2\xA7 none"}),
      // area inform "§§downtown area": its words contain the variant "downtown" of gold
      // "centre", so check_slot_inform gives "centre"; stars copied "4". Correct.
      record("D2.json", "1",
             {5, 5, "centre",
              "\xC2\xA7\xC2\xA7"
              "downtown area"},
             {2, 2, "4", "4"}),
  };
}

TEST(TripPyJointGoalAccuracy, HandComputedRecords) {
  const DstStates s = trippy_dst_states(small_records(), small_config());
  ASSERT_EQ(s.predicted.size(), 4u);
  EXPECT_EQ(s.predicted[0].at("hotel-area"), "center");
  EXPECT_EQ(s.predicted[1].at("hotel-area"), "center");
  EXPECT_EQ(s.predicted[1].at("hotel-stars"), "dontcare");
  EXPECT_EQ(s.predicted[2].at("hotel-area"), "none");  // reset at turn "0"
  EXPECT_EQ(s.predicted[2].at("hotel-stars"), "none");
  EXPECT_EQ(s.predicted[3].at("hotel-area"), "centre");
  EXPECT_EQ(s.gold[3].at("hotel-area"), "centre");
  EXPECT_DOUBLE_EQ(trippy_joint_goal_accuracy(small_records(), small_config()), 3.0 / 4.0);

  // Turn "10" is not a reset (TripPy compares the whole last guid element with "0").
  auto recs = small_records();
  recs[2].guid.back() = "10";
  const DstStates s2 = trippy_dst_states(recs, small_config());
  EXPECT_EQ(s2.predicted[2].at("hotel-area"), "center");  // carried over from record 1
  EXPECT_EQ(s2.predicted[2].at("hotel-stars"), "dontcare");
  EXPECT_DOUBLE_EQ(trippy_joint_goal_accuracy(recs, small_config()), 2.0 / 4.0);

  // An inform value unrelated to the gold value is kept as informed.
  recs = small_records();
  recs[3].slots["hotel-area"].slot_prediction = "\xC2\xA7\xC2\xA7north";
  EXPECT_EQ(trippy_dst_states(recs, small_config()).predicted[3].at("hotel-area"), "north");
  EXPECT_DOUBLE_EQ(trippy_joint_goal_accuracy(recs, small_config()), 2.0 / 4.0);
}

TEST(TripPyJointGoalAccuracy, BadRecordsThrowNamingRecordAndSlot) {
  auto recs = small_records();
  recs[0].guid.back() = "1";
  EXPECT_THROW(trippy_dst_states(recs, small_config()), std::invalid_argument);
  recs = small_records();
  recs[1].slots["hotel-stars"].class_prediction = 9;
  try {
    trippy_dst_states(recs, small_config());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("record 1: slot 'hotel-stars': class_prediction 9"));
  }
  recs = small_records();
  recs[1].slots["hotel-area"].class_prediction = 5;  // inform without "§§"
  EXPECT_THROW(trippy_dst_states(recs, small_config()), std::invalid_argument);
  recs = small_records();
  recs[2].slots.erase("hotel-area");
  EXPECT_THROW(trippy_dst_states(recs, small_config()), std::invalid_argument);
  EXPECT_THROW(trippy_dst_states({}, small_config()), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::eval
