// MultiWOZ 2.1 (TripPy layout) reader and CASES C12 time normalisation. The real files are not
// available (docs/dialoglue.md §6): tests/fixtures/multiwoz/train_dials.json is a hand-written file
// in the same format (3 dialogues, unsorted keys, belief states in metadata, a `booked` list).
#include "readers/multiwoz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/json_util.h"
#include "readers_test_util.h"
#include "test_paths.h"

namespace dialtree::readers {
namespace {

using ::dialtree::testing::error_of;
using ::dialtree::testing::fixture;
using ::dialtree::testing::replace_first;
using ::dialtree::testing::TempDir;
using ::dialtree::testing::write_bytes;
using ::testing::HasSubstr;
using Belief = std::map<std::string, std::string>;

// --- C12: normalize_time -----------------------------------------------------------------------

TEST(MultiwozC12, NormalizeTimeTable) {
  const std::pair<const char*, const char*> table[] = {{"5:30pm", "17:30"},
                                                       {"10:15", "10:15"},
                                                       {"12:15am", "00:15"},
                                                       {"12:30pm", "12:30"},
                                                       {"9.30", "09:30"},
                                                       {"9:30", "09:30"},
                                                       {"5:30 pm", "17:30"},
                                                       {"5:30PM", "17:30"},
                                                       {"11:59 p.m.", "23:59"},
                                                       {"5pm", "17:00"},
                                                       {"12am", "00:00"},
                                                       {"00:05", "00:05"},
                                                       {"23:59", "23:59"},
                                                       {" 7:45am ", "07:45"},
                                                       // Not times: returned unchanged.
                                                       {"dontcare", "dontcare"},
                                                       {"", ""},
                                                       {"24:00", "24:00"},
                                                       {"13:30pm", "13:30pm"},
                                                       {"0:30am", "0:30am"},
                                                       {"5:3", "5:3"},
                                                       {"5:60", "5:60"},
                                                       {"1530", "1530"},
                                                       {"5", "5"},
                                                       {"after 5:30pm", "after 5:30pm"},
                                                       {"5:30pmish", "5:30pmish"},
                                                       {"4.5", "4.5"}};
  for (const auto& [in, out] : table) EXPECT_EQ(normalize_time(in), out) << "'" << in << "'";
}

// --- loader ------------------------------------------------------------------------------------

TEST(MultiwozFixture, DialogsInKeyOrderRolesAndBelief) {
  std::vector<MultiwozDialog> d = read_multiwoz(fixture("multiwoz/train_dials.json"));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].id, "MUL0001.json");
  EXPECT_EQ(d[1].id, "PMUL0002.json");
  EXPECT_EQ(d[2].id, "SNG0003.json");

  const MultiwozDialog& mul = d[0];
  ASSERT_EQ(mul.turns.size(), 6u);
  for (std::size_t i = 0; i < mul.turns.size(); ++i) {
    EXPECT_EQ(mul.turns[i].role, i % 2 == 0 ? "user" : "system") << i;
    if (i % 2 == 0) {
      EXPECT_TRUE(mul.turns[i].belief.empty()) << i;
    }
  }
  EXPECT_EQ(mul.turns[0].text,
            "I need a train from cambridge to london kings cross on tuesday. I want to leave "
            "after 5:30pm.");  // utterance text is not touched
  // C12: "5:30pm" in the belief state is kept as a real value, normalised to 17:30;
  // "not mentioned" (arriveBy) and "" values are omitted.
  EXPECT_EQ(mul.turns[1].belief, (Belief{{"train-day", "tuesday"},
                                         {"train-departure", "cambridge"},
                                         {"train-destination", "london kings cross"},
                                         {"train-leaveat", "17:30"}}));
  // Book slots are "domain-book_slot"; the `booked` list is ignored.
  EXPECT_EQ(mul.turns[3].belief, (Belief{{"train-book_people", "2"},
                                         {"train-day", "tuesday"},
                                         {"train-departure", "cambridge"},
                                         {"train-destination", "london kings cross"},
                                         {"train-leaveat", "17:30"}}));
  EXPECT_EQ(mul.turns[5].belief, mul.turns[3].belief);

  const MultiwozDialog& pmul = d[1];
  ASSERT_EQ(pmul.turns.size(), 4u);
  EXPECT_EQ(pmul.turns[1].belief, (Belief{{"restaurant-area", "dontcare"},
                                          {"restaurant-book_day", "saturday"},
                                          {"restaurant-book_people", "3"},
                                          {"restaurant-book_time", "00:15"}}));
  EXPECT_EQ(pmul.turns[3].belief, (Belief{{"restaurant-area", "dontcare"},
                                          {"restaurant-book_day", "saturday"},
                                          {"restaurant-book_people", "3"},
                                          {"restaurant-book_time", "00:15"},
                                          {"taxi-arriveby", "10:15"},
                                          {"taxi-destination", "the gardenia"}}));

  const MultiwozDialog& sng = d[2];
  ASSERT_EQ(sng.turns.size(), 2u);
  EXPECT_EQ(sng.turns[1].role, "system");
  EXPECT_EQ(sng.turns[1].belief,
            (Belief{{"attraction-area", "centre"}, {"attraction-type", "museum"}}));
}

TEST(MultiwozFixture, MalformedCopies) {
  TempDir tmp;
  const std::string real = read_file_bytes(fixture("multiwoz/train_dials.json"));
  const std::string path = tmp.file("train_dials.json");
  // Wrong type (C08): the first "leaveAt" with a value is MUL0001.json turn 1's.
  write_bytes(path, replace_first(real, "\"leaveAt\": \"5:30pm\"", "\"leaveAt\": 530"));
  EXPECT_EQ(error_of<SchemaError>([&] { read_multiwoz(path); }),
            path +
                ": dialogue MUL0001.json: field 'log[1].metadata.train.semi.leaveAt': must be a "
                "string, got integer");
  write_bytes(path, replace_first(real, "\"log\": [", "\"turns\": ["));
  EXPECT_EQ(error_of<SchemaError>([&] { read_multiwoz(path); }),
            path + ": dialogue SNG0003.json: field 'log': is missing");
  write_bytes(path, replace_first(real, "\"metadata\": {},", "\"metadata\": [],"));
  EXPECT_EQ(
      error_of<SchemaError>([&] { read_multiwoz(path); }),
      path + ": dialogue SNG0003.json: field 'log[0].metadata': must be an object, got array");
  write_bytes(path, real.substr(0, real.size() / 2));
  EXPECT_THAT(error_of<DataError>([&] { read_multiwoz(path); }), HasSubstr(": invalid JSON"));
  write_bytes(path, "[]");
  EXPECT_EQ(error_of<SchemaError>([&] { read_multiwoz(path); }),
            path + ": field '(root)': must be an object, got array");
}

}  // namespace
}  // namespace dialtree::readers
