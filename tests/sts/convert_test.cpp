// Converters: record counts on every real DialoGLUE split and the SGD subset, the documented
// mapping on hand-made records, and errors that name the place.
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "common/error.h"
#include "readers/sgd.h"
#include "sts/convert.h"
#include "sts/score.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::sts {
namespace {

using dialtree::testing::write_text;

using testing::shared_data;

struct RealSplit {
  SourceFormat format;
  const char* path;
  std::size_t records;
};

TEST(Convert, RecordCountsMatchEveryRealTrainFile) {
  const RealSplit splits[] = {
      {SourceFormat::IntentCsv, "dialoglue/banking/train.csv", 8622},
      {SourceFormat::IntentCsv, "dialoglue/clinc/train.csv", 15000},
      {SourceFormat::IntentCsv, "dialoglue/hwu/train.csv", 8954},
      {SourceFormat::SlotJson, "dialoglue/restaurant8k/train.json", 7244},
      {SourceFormat::SlotJson, "dialoglue/dstc8_sgd/train.json", 5023},
      {SourceFormat::Top, "dialoglue/top/train.txt", 31279},
      {SourceFormat::Sgd, "pretrain/sgd_train_subset", 2790},
  };
  for (const auto& s : splits) {
    ConvertReport rep;
    const auto dialogs = convert(s.format, shared_data(s.path), {}, &rep);
    EXPECT_EQ(dialogs.size(), s.records) << s.path;
    EXPECT_EQ(rep.records, s.records) << s.path;
    EXPECT_EQ(rep.dialogs, s.records) << s.path;
  }
}

TEST(Convert, IntentRowsBecomeIntentOnlyTrees) {
  const auto dialogs = convert(SourceFormat::IntentCsv, shared_data("dialoglue/banking/train.csv"));
  ASSERT_FALSE(dialogs.empty());
  const Dialog& d = dialogs.front();
  EXPECT_EQ(d.id, "banking/train/0");
  EXPECT_EQ(d.source, "banking");
  ASSERT_EQ(d.turns.size(), 1u);
  EXPECT_EQ(d.turns[0].text, "I am still waiting on my card?");
  EXPECT_EQ(to_json(*d.turns[0].label).dump(), R"({"DEFAULT_DOMAIN":{"card_arrival":{}}})");
}

TEST(Convert, SlotSpansKeepTheirText) {
  const auto dialogs =
      convert(SourceFormat::SlotJson, shared_data("dialoglue/restaurant8k/train.json"));
  // record 0: "There will be 5 adults and 1 child." people = [14, 34)
  const Turn& t = dialogs.at(0).turns.at(0);
  EXPECT_EQ(to_json(*t.label).dump(),
            R"({"DEFAULT_DOMAIN":{"DEFAULT_INTENT":{"people":[{"value":"5 adults and 1 child",)"
            R"("span":[14,34]}]}}})");
  EXPECT_EQ(t.extra["requested_slots"], nlohmann::json::array({"people"}));
  // DSTC8's first train example has no labels: fix-up makes it a labelled empty tree.
  ConvertReport rep;
  const auto dstc =
      convert(SourceFormat::SlotJson, shared_data("dialoglue/dstc8_sgd/train.json"), {}, &rep);
  ASSERT_TRUE(dstc.at(0).turns.at(0).label.has_value());
  EXPECT_TRUE(dstc.at(0).turns.at(0).label->empty());
  EXPECT_EQ(dstc.at(0).turns.at(0).extra["source_id"], "27_001080");
  EXPECT_GT(rep.empty_labels, 0u);
  EXPECT_LT(rep.empty_labels, rep.labelled_turns);
}

TEST(Convert, TopKeepsOutermostSlotsAndFlattensNestedOnes) {
  testing::TempDir tmp;
  write_text(
      tmp.file("top.txt"),
      "will:O I:O make:O it:O to:O the:B-SL_DESTINATION_IN_GET_LOCATION_SL_CATEGORY_LOCATION "
      "beach:I-SL_DESTINATION_IN_GET_LOCATION_SL_CATEGORY_LOCATION by:B-SL_DATE_TIME_ARRIVAL "
      "noon:I-SL_DATE_TIME_ARRIVAL <=> IN_GET_ESTIMATED_ARRIVAL\n"
      "to:O my:B-SL_DESTINATION home:B-SL_DESTINATION_IN_GET_LOCATION_HOME_SL_CONTACT at:O "
      "5:B-SL_DATE_TIME ::I-SL_DATE_TIME 30:I-SL_DATE_TIME <=> IN_GET_DIRECTIONS\n");
  const auto dialogs = convert(SourceFormat::Top, tmp.file("top.txt"));
  ASSERT_EQ(dialogs.size(), 2u);
  EXPECT_EQ(dialogs[0].id, std::string(tmp.path().filename()) + "/top/0");
  EXPECT_EQ(to_json(*dialogs[0].turns[0].label).dump(),
            R"({"DEFAULT_DOMAIN":{"IN_GET_ESTIMATED_ARRIVAL":{"SL_DATE_TIME_ARRIVAL":)"
            R"([{"value":"by noon","span":[28,35]}],"SL_DESTINATION":[{"value":"the beach",)"
            R"("span":[18,27]}]}}})");
  // A nested B- inside an open outer slot continues it; the bare colon token is text ":".
  EXPECT_EQ(dialogs[1].turns[0].text, "to my home at 5 : 30");
  EXPECT_EQ(to_json(*dialogs[1].turns[0].label).dump(),
            R"({"DEFAULT_DOMAIN":{"IN_GET_DIRECTIONS":{"SL_DATE_TIME":[{"value":"5 : 30",)"
            R"("span":[14,20]}],"SL_DESTINATION":[{"value":"my home","span":[3,10]}]}}})");
}

TEST(Convert, SgdUserTurnsCarryServiceIntentAndInformedValues) {
  ConvertReport rep;
  const auto dialogs = convert(
      SourceFormat::Sgd, shared_data("pretrain/sgd_train_subset/dialogues_001.json"), {}, &rep);
  ASSERT_EQ(dialogs.size(), 128u);
  const Dialog& d = dialogs[0];
  ASSERT_GE(d.turns.size(), 2u);
  EXPECT_EQ(d.turns[0].role, "user");
  EXPECT_EQ(d.turns[0].text, "I am feeling hungry so I would like to find a place to eat.");
  // INFORM_INTENT only, no slots: {Restaurants: {FindRestaurants: {}}}
  EXPECT_EQ(to_json(*d.turns[0].label).dump(), R"({"Restaurants":{"FindRestaurants":{}}})");
  EXPECT_EQ(d.turns[1].role, "system");
  EXPECT_FALSE(d.turns[1].label.has_value());
  // Every span kept in the output cuts out its value (checked again by a write/read trip).
  testing::TempDir tmp;
  write_jsonl(tmp.file("sgd.jsonl"), dialogs);
  EXPECT_EQ(read_jsonl(tmp.file("sgd.jsonl")).size(), 128u);
  EXPECT_EQ(rep.turns, rep.labelled_turns * 2);  // user and system turns alternate
}

TEST(Convert, SgdExcludeServicesLeavesOutEveryDialogueThatTouchesOne) {
  // The dialogues of dstc8's four services, counted with the reader itself.
  const std::string dir = shared_data("pretrain/sgd_train_subset");
  std::set<std::string> dstc8_ids;
  for (const auto& d : readers::read_sgd(dir)) {
    for (const auto& s : d.services) {
      if (s == "Buses_1" || s == "Events_1" || s == "Homes_1" || s == "RentalCars_1")
        dstc8_ids.insert("sgd/" + d.dialogue_id);
    }
  }
  ASSERT_EQ(dstc8_ids.size(), 377u);
  ConvertOptions o;
  o.exclude_services = dstc8_services();
  ConvertReport rep;
  const auto dialogs = convert(SourceFormat::Sgd, dir, o, &rep);
  EXPECT_EQ(rep.records, 2790u);
  EXPECT_EQ(rep.excluded_dialogs, 377u);
  EXPECT_EQ(dialogs.size(), 2790u - 377u);
  for (const auto& d : dialogs) EXPECT_EQ(dstc8_ids.count(d.id), 0u) << d.id;
  for (const auto& w : rep.warnings) EXPECT_EQ(w.find("--exclude-services"), std::string::npos);

  // A misspelt service excludes nothing, and says so.
  o.exclude_services = {"Bus_1"};
  ConvertReport typo;
  EXPECT_EQ(convert(SourceFormat::Sgd, dir + "/dialogues_001.json", o, &typo).size(), 128u);
  ASSERT_FALSE(typo.warnings.empty());
  EXPECT_NE(typo.warnings.back().find("no dialogue of"), std::string::npos);
  EXPECT_NE(typo.warnings.back().find("'Bus_1'"), std::string::npos);

  // With the folder (and its schema.json), a name the schema does not list is an error.
  o.exclude_services = {"Buses_1", "Busses_1"};
  try {
    convert(SourceFormat::Sgd, dir, o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'Busses_1' is not a service of"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Buses_1, Buses_2"), std::string::npos);
  }

  // Other formats refuse the option.
  try {
    convert(SourceFormat::Top, shared_data("dialoglue/top/train_10.txt"), o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--exclude-services applies to --format sgd only");
  }
}

TEST(Convert, SgdTreesScoreAsSpace2Expects) {
  const auto dialogs =
      convert(SourceFormat::Sgd, shared_data("pretrain/sgd_train_subset/dialogues_001.json"));
  // Two user turns of the same dialog share domain and intent: D and I views are 1.
  const Tree& a = *dialogs[0].turns[0].label;
  const Tree& b = *dialogs[0].turns[2].label;
  const ViewScores s = score_views(a, b);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::D)], 1.0);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::I)], 1.0);
}

TEST(Convert, AUsersCsvWithoutCategoriesJsonUsesItsOwnLabels) {
  testing::TempDir tmp;
  write_text(tmp.file("mine.csv"),
             "text,category\nhi there,greet\nmy balance?,balance\nhello,greet\n");
  ConvertReport rep;
  const auto dialogs = convert(SourceFormat::IntentCsv, tmp.file("mine.csv"), {}, &rep);
  ASSERT_EQ(dialogs.size(), 3u);
  EXPECT_EQ(to_json(*dialogs[1].turns[0].label).dump(), R"({"DEFAULT_DOMAIN":{"balance":{}}})");
  EXPECT_EQ(to_json(*dialogs[2].turns[0].label).dump(), R"({"DEFAULT_DOMAIN":{"greet":{}}})");
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_NE(rep.warnings[0].find("the 2 labels are the CSV's own"), std::string::npos)
      << rep.warnings[0];
  // An empty label is an error naming the line; a categories.json, once there, is used.
  write_text(tmp.file("empty.csv"), "text,category\nhi,greet\nwhat,\n");
  try {
    convert(SourceFormat::IntentCsv, tmp.file("empty.csv"));
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3: field 'category': empty label"),
              std::string::npos)
        << e.what();
  }
  write_text(tmp.file("categories.json"), R"(["greet"])");
  try {
    convert(SourceFormat::IntentCsv, tmp.file("mine.csv"));
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("label 'balance' not in"), std::string::npos) << e.what();
  }
}

TEST(Convert, MalformedInputsNameThePlace) {
  testing::TempDir tmp;
  write_text(tmp.file("categories.json"), R"(["balance","greet"])");
  write_text(tmp.file("bad.csv"), "text,category\nhello,greet\n\"unterminated,greet\n");
  write_text(
      tmp.file("bad.json"),
      R"([{"userInput":{"text":"at 6pm"},"labels":[{"slot":"time","valueSpan":{"startIndex":"3","endIndex":6}}]}])");
  write_text(
      tmp.file("badspan.json"),
      R"([{"userInput":{"text":"at 6pm"},"labels":[{"slot":"time","valueSpan":{"startIndex":3,"endIndex":60}}]}])");
  write_text(tmp.file("bad.txt"), "a:O b <=> IN_X\n");
  struct Case {
    SourceFormat format;
    std::string file, needle;
  };
  const Case cases[] = {
      {SourceFormat::IntentCsv, "bad.csv", "bad.csv: line 3"},
      {SourceFormat::SlotJson, "bad.json", "labels[0].valueSpan.startIndex"},
      {SourceFormat::SlotJson, "badspan.json", "record 0"},
      {SourceFormat::Top, "bad.txt", "bad.txt: line 1"},
  };
  for (const auto& c : cases) {
    try {
      convert(c.format, tmp.file(c.file));
      ADD_FAILURE() << "no error for " << c.file;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
  }
}

TEST(Convert, FormatNames) {
  EXPECT_EQ(parse_source_format("slot-json"), SourceFormat::SlotJson);
  EXPECT_THROW(parse_source_format("csv"), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::sts
