// SGD dialogue reader: the real train subset, CASES C06 (span text vs annotated value), bad
// spans and wrong types.
#include "readers/sgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/json_util.h"
#include "common/utf8.h"
#include "readers_test_util.h"
#include "test_paths.h"

namespace dialtree::readers {
namespace {

using ::dialtree::testing::error_of;
using ::dialtree::testing::fixture;
using ::dialtree::testing::replace_first;
using ::dialtree::testing::shared_data;
using ::dialtree::testing::TempDir;
using ::dialtree::testing::write_bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- real data ---------------------------------------------------------------------------------

TEST(SgdReal, TrainSubsetCountsAndValues) {
  SgdLoadReport report;
  std::vector<SgdDialog> dialogs = read_sgd(shared_data("pretrain/sgd_train_subset"), &report);
  // README: 2790 dialogues, 42940 turns (21470 user turns).
  EXPECT_EQ(dialogs.size(), 2790u);
  EXPECT_EQ(report.dialogs, 2790u);
  EXPECT_EQ(report.turns, 42940u);
  // Every span of these 22 files equals one of its frame's action values (checked in Python
  // with the same rule), so nothing is dropped.
  EXPECT_EQ(report.value_mismatch, 0u);
  EXPECT_TRUE(report.mismatches.empty());

  std::size_t user_turns = 0, spans = 0;
  for (const SgdDialog& d : dialogs) {
    for (const SgdTurn& t : d.turns) {
      const bool user = t.speaker == "USER";
      user_turns += user;
      for (const SgdFrame& f : t.frames) {
        EXPECT_EQ(f.active_intent.has_value(), user);
        spans += f.slots.size();
      }
    }
  }
  EXPECT_EQ(user_turns, 21470u);
  EXPECT_EQ(spans, 29505u);

  // Files are read in name order: dialogues_001.json first, dialogues_125.json last.
  const SgdDialog& d = dialogs.front();
  EXPECT_EQ(d.dialogue_id, "1_00000");
  EXPECT_THAT(d.services, ElementsAre("Restaurants_1"));
  ASSERT_EQ(d.turns.size(), 24u);
  EXPECT_EQ(d.turns[0].speaker, "USER");
  EXPECT_EQ(d.turns[0].frames[0].active_intent, "FindRestaurants");
  EXPECT_EQ(d.turns[0].frames[0].actions[0].act, "INFORM_INTENT");
  EXPECT_EQ(d.turns[0].frames[0].actions[0].slot, "intent");
  EXPECT_THAT(d.turns[0].frames[0].actions[0].values, ElementsAre("FindRestaurants"));
  const SgdTurn& t2 = d.turns[2];
  EXPECT_EQ(t2.utterance, "I would like for it to be in San Jose.");
  ASSERT_EQ(t2.frames[0].slots.size(), 1u);
  EXPECT_EQ(t2.frames[0].slots[0].slot, "city");
  EXPECT_EQ(t2.frames[0].slots[0].start, 29u);
  EXPECT_EQ(t2.frames[0].slots[0].end, 37u);
  EXPECT_THAT(t2.frames[0].slot_values.at("city"), ElementsAre("San Jose"));
  EXPECT_EQ(d.turns[1].speaker, "SYSTEM");
  EXPECT_FALSE(d.turns[1].frames[0].active_intent.has_value());
  EXPECT_EQ(dialogs.back().dialogue_id, "125_00127");
}

TEST(SgdReal, MalformedCopyNamesRecordAndPath) {
  TempDir tmp;
  const std::string real =
      read_file_bytes(shared_data("pretrain/sgd_train_subset/dialogues_001.json"));
  const std::string path = tmp.file("dialogues_001.json");
  // First span of the file: turn 2, "San Jose" = [29, 37) of a 38-code-point utterance.
  write_bytes(path, replace_first(real, "\"exclusive_end\": 37", "\"exclusive_end\": 39"));
  EXPECT_EQ(error_of<DataError>([&] { read_sgd_file(path); }),
            path +
                ": record 0 (dialogue 1_00000): field 'turns[2].frames[0].slots[0].exclusive_end'"
                ": span [29, 39) is not inside the utterance (need start < exclusive_end <= 38 "
                "code points)");
  write_bytes(path, replace_first(real, "\"exclusive_end\": 37", "\"exclusive_end\": \"37\""));
  EXPECT_EQ(error_of<SchemaError>([&] { read_sgd_file(path); }),
            path +
                ": record 0 (dialogue 1_00000): field 'turns[2].frames[0].slots[0].exclusive_end'"
                ": must be an integer, got string \"37\"");
  write_bytes(path, real.substr(0, 300));
  EXPECT_THAT(error_of<DataError>([&] { read_sgd_file(path); }),
              HasSubstr(path + ": line 16, column "));
}

// --- C06: annotated value differs from the utterance -------------------------------------------

TEST(SgdC06, EnDashValueVsHyphenUtteranceIsCountedAndDropped) {
  SgdLoadReport report;
  std::vector<SgdDialog> dialogs = read_sgd(fixture("readers/sgd_c06"), &report);
  EXPECT_EQ(report.value_mismatch, 1u);
  ASSERT_EQ(report.mismatches.size(), 1u);
  EXPECT_EQ(report.mismatches[0],
            "dialogues_001.json: dialogue c06_00001 turn 0: slot pickup_location: "
            "'Hartsfield-Jackson' vs 'Hartsfield\xE2\x80\x93Jackson'");
  EXPECT_EQ(report.dialogs, 1u);
  EXPECT_EQ(report.turns, 3u);
  ASSERT_EQ(dialogs.size(), 1u);
  const SgdDialog& d = dialogs[0];
  // The mismatching span is gone: no token of turn 0 can be tagged from it.
  EXPECT_TRUE(d.turns[0].frames[0].slots.empty());
  // The state keeps its (annotated) value.
  EXPECT_THAT(d.turns[0].frames[0].slot_values.at("pickup_location"),
              ElementsAre("Hartsfield\xE2\x80\x93Jackson"));
  // Matching spans are kept, on system and user turns.
  ASSERT_EQ(d.turns[1].frames[0].slots.size(), 1u);
  EXPECT_EQ(d.turns[1].frames[0].slots[0].slot, "destination");
  EXPECT_EQ(utf8::substr(d.turns[1].utterance, d.turns[1].frames[0].slots[0].start,
                         d.turns[1].frames[0].slots[0].end),
            "Midtown");
  ASSERT_EQ(d.turns[2].frames[0].slots.size(), 1u);
  EXPECT_EQ(d.turns[2].frames[0].slots[0].start, 9u);
  EXPECT_THAT(d.turns[2].frames[0].requested_slots, ElementsAre("wait_time"));
  EXPECT_EQ(d.turns[2].frames[0].actions[0].slot, "");
  EXPECT_TRUE(d.turns[2].frames[0].actions[0].values.empty());
}

TEST(SgdC06, MismatchIsDroppedEvenWithoutAReport) {
  std::vector<SgdDialog> dialogs = read_sgd_file(fixture("readers/sgd_c06/dialogues_001.json"));
  EXPECT_TRUE(dialogs[0].turns[0].frames[0].slots.empty());
}

// --- structure and errors ----------------------------------------------------------------------

// One dialogue with one turn; `frame` is the frame object.
std::string one_turn(const std::string& speaker, const std::string& utterance,
                     const std::string& frame) {
  return R"([{"dialogue_id":"x_1","services":["S_1"],"turns":[{"speaker":")" + speaker +
         R"(","utterance":")" + utterance + R"(","frames":[)" + frame + "]}]}]";
}

TEST(SgdErrors, BadSpansStateOnSystemTurnWrongTypes) {
  TempDir tmp;
  const std::string f = tmp.file("dialogues_001.json");
  const std::string where = f + ": record 0 (dialogue x_1): field ";
  auto err = [&](const std::string& bytes) {
    write_bytes(f, bytes);
    return error_of<DataError>([&] { read_sgd_file(f); });
  };
  const std::string actions = R"("actions":[{"act":"INFORM","slot":"a","values":["bc"]}])";
  EXPECT_EQ(err(one_turn("USER", "abc",
                         R"({"service":"S_1",)" + actions +
                             R"(,"slots":[{"slot":"a","start":2,"exclusive_end":2}]})")),
            where +
                "'turns[0].frames[0].slots[0].exclusive_end': span [2, 2) is not inside the "
                "utterance (need start < exclusive_end <= 3 code points)");
  EXPECT_EQ(err(one_turn("USER", "abc",
                         R"({"service":"S_1",)" + actions +
                             R"(,"slots":[{"slot":"a","start":-1,"exclusive_end":2}]})")),
            where + "'turns[0].frames[0].slots[0].start': negative offset -1");
  EXPECT_EQ(
      err(one_turn(
          "SYSTEM", "abc",
          R"({"service":"S_1",)" + actions +
              R"(,"slots":[],"state":{"active_intent":"NONE","requested_slots":[],"slot_values":{}}})")),
      where +
          "'turns[0].frames[0].state': dialogue state on a SYSTEM turn (only user frames "
          "carry one)");
  EXPECT_EQ(err(one_turn("BOT", "abc", R"({"service":"S_1",)" + actions + R"(,"slots":[]})")),
            where + "'turns[0].speaker': must be \"USER\" or \"SYSTEM\", got 'BOT'");
  // C08-style wrong types.
  EXPECT_EQ(
      err(one_turn(
          "USER", "abc",
          R"({"service":"S_1","actions":[{"act":"INFORM","slot":"a","values":"bc"}],"slots":[]})")),
      where + "'turns[0].frames[0].actions[0].values': must be an array, got string \"bc\"");
  EXPECT_EQ(
      err(one_turn(
          "USER", "abc",
          R"({"service":"S_1",)" + actions +
              R"(,"slots":[],"state":{"active_intent":"NONE","requested_slots":[],"slot_values":{"a":"bc"}}})")),
      where + "'turns[0].frames[0].state.slot_values.a': must be an array, got string \"bc\"");
  EXPECT_EQ(err(one_turn("USER", "abc", R"({"service":"S_1",)" + actions + "}")),
            where + "'turns[0].frames[0].slots': is missing");
  // A USER frame without its state would lose the turn's intent: refused, not skipped.
  EXPECT_EQ(err(one_turn("USER", "abc", R"({"service":"S_1",)" + actions + R"(,"slots":[]})")),
            where + "'turns[0].frames[0].state': is missing: a USER frame carries the dialogue "
                    "state (active_intent, requested_slots, slot_values)");
  write_bytes(f, R"([{"dialogue_id":7}])");
  EXPECT_EQ(error_of<SchemaError>([&] { read_sgd_file(f); }),
            f + ": record 0: field 'dialogue_id': must be a string, got integer");
  // docs/failure-cases.md B13: no text, or no turn at all, was converted and then dropped.
  EXPECT_EQ(err(one_turn("USER", "", R"({"service":"S_1","actions":[],"slots":[]})")),
            where + "'turns[0].utterance': empty text");
  EXPECT_EQ(err(one_turn("USER", "  ", R"({"service":"S_1","actions":[],"slots":[]})")),
            where + "'turns[0].utterance': the text is only blanks");
  EXPECT_EQ(err(R"([{"dialogue_id":"x_1","services":["S_1"],"turns":[]}])"),
            where + "'turns': a dialogue with no turn");
}

TEST(SgdErrors, CodePointOffsetsAndNoValuesKeepSpan) {
  TempDir tmp;
  const std::string f = tmp.file("d.json");
  // "Café Rouge" is 10 code points / 11 bytes; no action gives a value for the slot, so there
  // is nothing to compare with and the span is kept.
  write_bytes(
      f,
      one_turn(
          "USER", "Caf\u00e9 Rouge",
          R"({"service":"S_1","actions":[],"slots":[{"slot":"name","start":0,"exclusive_end":10}],"state":{"active_intent":"NONE","requested_slots":[],"slot_values":{}}})"));
  SgdLoadReport report;
  std::vector<SgdDialog> d = read_sgd_file(f, &report);
  ASSERT_EQ(d[0].turns[0].frames[0].slots.size(), 1u);
  EXPECT_EQ(d[0].turns[0].frames[0].slots[0].end, 10u);
  EXPECT_EQ(d[0].turns[0].frames[0].active_intent, "NONE");
  EXPECT_EQ(report.value_mismatch, 0u);
}

TEST(SgdDirectory, NameOrderSkipsSchemaAndNeedsFiles) {
  TempDir tmp;
  const std::string frame = R"({"service":"S_1","actions":[],"slots":[]})";
  auto dialog = [&](const std::string& id) {
    return R"([{"dialogue_id":")" + id +
           R"(","services":["S_1"],"turns":[{"speaker":"SYSTEM","utterance":"hi","frames":[)" +
           frame + "]}]}]";
  };
  write_bytes(tmp.file("dialogues_010.json"), dialog("b"));
  write_bytes(tmp.file("dialogues_002.json"), dialog("a"));
  write_bytes(tmp.file("schema.json"), R"([{"service_name":"S_1"}])");
  write_bytes(tmp.file("notes.txt"), "not json");
  SgdLoadReport report;
  std::vector<SgdDialog> d = read_sgd(tmp.path().string(), &report);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].dialogue_id, "a");
  EXPECT_EQ(d[1].dialogue_id, "b");
  EXPECT_EQ(report.turns, 2u);

  TempDir empty;
  EXPECT_EQ(error_of<DataError>([&] { read_sgd(empty.path().string()); }),
            empty.path().string() + ": no dialogues_*.json file in this directory");
  EXPECT_EQ(error_of<DataError>([&] { read_sgd("/nonexistent/sgd"); }),
            "/nonexistent/sgd: no such file or directory");
}

}  // namespace
}  // namespace dialtree::readers
