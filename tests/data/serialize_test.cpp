// SPACE-2 dialog serialisation (docs/method.md §1.5). Every expected array below was worked out by
// hand from the seven steps of §1.5, with SPACE-2's BERT marker ids sos_u=13, eos_u=7,
// sos_r=14, eos_r=8 (docs/method.md §1.4).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/serialize.h"
#include "data/wordpiece.h"
#include "sts/format.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Ids = std::vector<std::int32_t>;

const SpecialTokens kBert{};  // sos_u=13, eos_u=7, sos_r=14, eos_r=8

Utterance user(Ids ids) {
  return Utterance{"user", std::move(ids)};
}
Utterance sys(Ids ids) {
  return Utterance{"system", std::move(ids)};
}

void expect_same_length(const SerializedExample& ex) {
  EXPECT_EQ(ex.position_ids.size(), ex.input_ids.size());
  EXPECT_EQ(ex.role_ids.size(), ex.input_ids.size());
  EXPECT_EQ(ex.turn_ids.size(), ex.input_ids.size());
}

TEST(Serialize, ThreeTurnUserSystemUser) {
  const std::vector<Utterance> dialog = {user({1000, 1001}), sys({2000}), user({3000, 3001, 3002})};
  const auto examples = serialize_dialog("d1", dialog, kBert);
  ASSERT_EQ(examples.size(), 2u);  // one per user turn

  const auto& first = examples[0];
  EXPECT_EQ(first.dialog_id, "d1");
  EXPECT_EQ(first.turn_index, 0u);
  EXPECT_THAT(first.input_ids, ElementsAre(13, 1000, 1001, 7));
  EXPECT_THAT(first.position_ids, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(first.role_ids, ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(first.turn_ids, ElementsAre(1, 1, 1, 1));

  const auto& ex = examples[1];
  EXPECT_EQ(ex.turn_index, 2u);
  EXPECT_THAT(ex.input_ids, ElementsAre(13, 1000, 1001, 7, 14, 2000, 8, 13, 3000, 3001, 3002, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 4));
  EXPECT_THAT(ex.role_ids, ElementsAre(1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1));
  EXPECT_THAT(ex.turn_ids, ElementsAre(3, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1));
}

TEST(Serialize, UtteranceTruncationKeepsTheEnd) {
  SerializeOptions o;
  o.max_utt_len = 3;
  const auto ex = serialize_context({sys({1, 2}), user({10, 11, 12, 13, 14})}, kBert, o);
  // system [1,2] fits; user keeps its last 3 ids 12,13,14.
  EXPECT_THAT(ex.input_ids, ElementsAre(14, 1, 2, 8, 13, 12, 13, 14, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 2, 3, 0, 1, 2, 3, 4));
  EXPECT_THAT(ex.role_ids, ElementsAre(0, 0, 0, 0, 1, 1, 1, 1, 1));
  EXPECT_THAT(ex.turn_ids, ElementsAre(2, 2, 2, 2, 1, 1, 1, 1, 1));
}

TEST(Serialize, DefaultUtteranceLimitIs50) {
  Ids long_utt;
  for (std::int32_t i = 0; i < 60; ++i) long_utt.push_back(1000 + i);
  const auto ex = serialize_context({user(long_utt)}, kBert);
  ASSERT_EQ(ex.input_ids.size(), 52u);  // 50 ids + 2 markers
  EXPECT_EQ(ex.input_ids.front(), 13);
  EXPECT_EQ(ex.input_ids[1], 1010);  // the first 10 ids are dropped
  EXPECT_EQ(ex.input_ids[50], 1059);
  EXPECT_EQ(ex.input_ids.back(), 7);
  EXPECT_EQ(ex.position_ids.back(), 51);
}

TEST(Serialize, ContextTurnCutoff) {
  SerializeOptions o;
  o.max_ctx_turn = 2;
  const auto examples = serialize_dialog("d", {user({1}), sys({2}), user({3})}, kBert, o);
  ASSERT_EQ(examples.size(), 2u);
  const auto& ex = examples[1];  // the first user turn falls out of the window
  EXPECT_THAT(ex.input_ids, ElementsAre(14, 2, 8, 13, 3, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(ex.role_ids, ElementsAre(0, 0, 0, 1, 1, 1));
  EXPECT_THAT(ex.turn_ids, ElementsAre(2, 2, 2, 1, 1, 1));
}

TEST(Serialize, DefaultContextWindowIs16Turns) {
  std::vector<Utterance> dialog;
  for (std::int32_t t = 0; t < 20; ++t) {
    dialog.push_back(t % 2 == 0 ? user({100 + t}) : sys({100 + t}));
  }
  const auto examples = serialize_dialog("d", dialog, kBert);
  ASSERT_EQ(examples.size(), 10u);
  const auto& last = examples.back();  // turn 18 (user): keeps turns 3..18
  EXPECT_EQ(last.turn_index, 18u);
  ASSERT_EQ(last.input_ids.size(), 48u);  // 16 utterances x 3
  EXPECT_THAT(Ids(last.input_ids.begin(), last.input_ids.begin() + 3), ElementsAre(14, 103, 8));
  EXPECT_EQ(last.turn_ids.front(), 16);
  EXPECT_EQ(last.role_ids.front(), 0);  // distance 15 from a user turn
  EXPECT_THAT(Ids(last.input_ids.end() - 3, last.input_ids.end()), ElementsAre(13, 118, 7));
}

TEST(Serialize, MaxLenTruncationCutsMidUtterance) {
  SerializeOptions o;
  o.max_len = 7;
  const auto ex =
      serialize_context({user({1000, 1001}), sys({2000}), user({3000, 3001, 3002})}, kBert, o);
  // Full: 13 1000 1001 7 | 14 2000 8 | 13 3000 3001 3002 7 -> last 7 entries; the system
  // utterance loses its opening marker, its positions start at 1.
  EXPECT_THAT(ex.input_ids, ElementsAre(2000, 8, 13, 3000, 3001, 3002, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(1, 2, 0, 1, 2, 3, 4));
  EXPECT_THAT(ex.role_ids, ElementsAre(0, 0, 1, 1, 1, 1, 1));
  EXPECT_THAT(ex.turn_ids, ElementsAre(2, 2, 1, 1, 1, 1, 1));
}

TEST(Serialize, DefaultMaxLenIs256) {
  std::vector<Utterance> dialog;
  Ids ids(50, 1000);
  for (int t = 0; t < 6; ++t) dialog.push_back(t % 2 == 0 ? user(ids) : sys(ids));
  dialog.push_back(user({5, 6}));
  const auto examples = serialize_dialog("d", dialog, kBert);
  const auto& ex = examples.back();  // 6 x 52 + 4 = 316 entries before truncation
  ASSERT_EQ(ex.input_ids.size(), 256u);
  expect_same_length(ex);
  EXPECT_THAT(Ids(ex.input_ids.end() - 4, ex.input_ids.end()), ElementsAre(13, 5, 6, 7));
  // 316 - 256 = 60 entries dropped: all of utterance 0 (52) and 8 of utterance 1 (turn 6).
  EXPECT_EQ(ex.turn_ids.front(), 6);
  EXPECT_EQ(ex.position_ids.front(), 8);
}

TEST(Serialize, RolesByParityNotByStoredRole) {
  // Two user turns in a row: the older one is at distance 1, so it gets the *other* role id.
  const auto ex = serialize_context({user({1}), user({2})}, kBert);
  EXPECT_THAT(ex.input_ids, ElementsAre(13, 1, 7, 13, 2, 7));  // markers by actual role
  EXPECT_THAT(ex.role_ids, ElementsAre(0, 0, 0, 1, 1, 1));
}

TEST(Serialize, SystemTriggerReversesParity) {
  SerializeOptions o;
  o.trigger_role = "system";
  const auto examples =
      serialize_dialog("d", {user({1}), user({2}), sys({3}), user({4})}, kBert, o);
  ASSERT_EQ(examples.size(), 1u);  // only the system turn
  const auto& ex = examples[0];
  EXPECT_EQ(ex.turn_index, 2u);
  // Current speaker is system (0): distances 2, 1, 0 -> 0, 1, 0.
  EXPECT_THAT(ex.input_ids, ElementsAre(13, 1, 7, 13, 2, 7, 14, 3, 8));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 2, 0, 1, 2, 0, 1, 2));
  EXPECT_THAT(ex.role_ids, ElementsAre(0, 0, 0, 1, 1, 1, 0, 0, 0));
  EXPECT_THAT(ex.turn_ids, ElementsAre(3, 3, 3, 2, 2, 2, 1, 1, 1));
}

TEST(Serialize, TriggerRoleIsASubstringTest) {
  SerializeOptions o;
  o.trigger_role = "user_system";
  const auto examples = serialize_dialog("d", {user({1}), sys({2}), user({3})}, kBert, o);
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_THAT(examples[1].role_ids, ElementsAre(1, 1, 1, 0, 0, 0));  // system current: 0
}

TEST(Serialize, EmptyUtteranceIsJustItsMarkers) {
  const auto ex = serialize_context({sys({}), user({5})}, kBert);
  EXPECT_THAT(ex.input_ids, ElementsAre(14, 8, 13, 5, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 0, 1, 2));
}

TEST(Serialize, RejectsBadInput) {
  EXPECT_THROW(serialize_context({}, kBert), std::invalid_argument);
  SerializeOptions zero;
  zero.max_len = 0;
  EXPECT_THROW(serialize_context({user({1})}, kBert, zero), std::invalid_argument);
  try {
    serialize_dialog("dlg-7", {user({1}), Utterance{"agent", {2}}}, kBert);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("dlg-7"));
    EXPECT_THAT(e.what(), HasSubstr("turn 1"));
    EXPECT_THAT(e.what(), HasSubstr("agent"));
  }
}

// docs/method.md §1.5 worked example: a single-turn intent query through BERT WordPiece.
TEST(Serialize, SingleTurnIntentExampleWithBertVocab) {
  const WordPieceTokenizer bert(
      dialtree::testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  sts::Dialog dialog;
  dialog.id = "banking/test/0";
  dialog.source = "banking";
  sts::Turn turn;
  turn.role = "user";
  turn.text = "I am still waiting on my card?";
  dialog.turns.push_back(turn);

  const auto examples = serialize_dialog(dialog, bert);
  ASSERT_EQ(examples.size(), 1u);
  const auto& ex = examples[0];
  EXPECT_EQ(ex.dialog_id, "banking/test/0");
  EXPECT_EQ(ex.turn_index, 0u);
  // i=1045 am=2572 still=2145 waiting=3403 on=2006 my=2026 card=4003 ?=1029
  EXPECT_THAT(ex.input_ids, ElementsAre(13, 1045, 2572, 2145, 3403, 2006, 2026, 4003, 1029, 7));
  EXPECT_THAT(ex.position_ids, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
  EXPECT_THAT(ex.role_ids, ElementsAreArray(Ids(10, 1)));
  EXPECT_THAT(ex.turn_ids, ElementsAreArray(Ids(10, 1)));
}

TEST(Serialize, DialogOverloadUsesTheTokenizerAndRealRoles) {
  const WordPieceTokenizer bert(
      dialtree::testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  sts::Dialog dialog;
  dialog.id = "d";
  for (const auto& [role, text] : std::vector<std::pair<std::string, std::string>>{
           {"user", "my card"}, {"system", "on"}, {"user", "i am"}}) {
    sts::Turn t;
    t.role = role;
    t.text = text;
    dialog.turns.push_back(t);
  }
  const auto examples = serialize_dialog(dialog, bert);
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_THAT(examples[1].input_ids,
              ElementsAre(13, 2026, 4003, 7, 14, 2006, 8, 13, 1045, 2572, 7));
  EXPECT_THAT(examples[1].turn_ids, ElementsAre(3, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1));
  EXPECT_THAT(examples[1].role_ids, ElementsAre(1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1));
}

}  // namespace
}  // namespace dialtree::data
