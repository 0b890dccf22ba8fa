// Regression tests for the tester's report on sts/: linear-time conversion of huge records, ids
// that do not depend on how the input path is spelled, option validation, MultiWOZ's last user
// turn, the text reader's warning, and what label trees and turns accept.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/utf8.h"
#include "expect_error.h"
#include "sts/convert.h"
#include "sts/format.h"
#include "sts/score.h"
#include "sts/tree.h"
#include "test_data.h"
#include "test_paths.h"

namespace dialtree::sts {
namespace {

using dialtree::testing::write_text;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using dialtree::testing::error_of;

// ---- bug 2: linear-time conversion -------------------------------------------------------------

// A 200k-token TOP line, every token its own value of one slot (the old code was quadratic in
// the text length and in the number of values of a slot). Words have 2-byte characters, so byte
// and code point offsets differ.
TEST(LinearConversion, HugeTopLine) {
  testing::TempDir tmp;
  constexpr std::size_t kTokens = 200000;
  std::string line;
  line.reserve(kTokens * 12);
  for (std::size_t i = 0; i < kTokens; ++i) {
    // Word i is "é<i>"; every third token continues the value opened before it (I- tag).
    line += "\xC3\xA9" + std::to_string(i) + (i % 3 == 1 ? ":I-SL_A " : ":B-SL_A ");
  }
  line += "<=> IN_X\n";
  write_text(tmp.file("top.txt"), line);

  const auto dialogs = convert(SourceFormat::Top, tmp.file("top.txt"));
  ASSERT_EQ(dialogs.size(), 1u);
  const Turn& t = dialogs[0].turns.at(0);
  const auto& values = t.label->domains.at(kDefaultDomain).at("IN_X").at("SL_A");
  // Tokens 0+1, 2, 3+4, 5, ...: two values per three tokens (rounded up).
  ASSERT_EQ(values.size(), (kTokens / 3) * 2 + (kTokens % 3 == 0 ? 0 : 1));
  EXPECT_EQ(values[0].value,
            "\xC3\xA9"
            "0 \xC3\xA9"
            "1");
  EXPECT_EQ(values[0].span, std::make_pair(std::size_t{0}, std::size_t{5}));
  EXPECT_EQ(values[1].value,
            "\xC3\xA9"
            "2");
  EXPECT_EQ(values[1].span, std::make_pair(std::size_t{6}, std::size_t{8}));
  const Value& last = values.back();
  EXPECT_EQ(last.value, "\xC3\xA9" + std::to_string(kTokens - 2) + " \xC3\xA9" +
                            std::to_string(kTokens - 1));  // 199998 opens, 199999 continues
  EXPECT_EQ(utf8::substr(t.text, last.span->first, last.span->second), last.value);
  EXPECT_EQ(last.span->second, utf8::length(t.text));

  // Writing and reading it back checks every span against the text: linear too.
  write_jsonl(tmp.file("top.jsonl"), dialogs);
  const auto back = read_jsonl(tmp.file("top.jsonl"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].turns[0].label, t.label);
}

// A slot-json record of ~400k code points with 20k labels on one slot, some repeated (kept once).
TEST(LinearConversion, SlotRecordWithManyLabels) {
  testing::TempDir tmp;
  constexpr std::size_t kLabels = 20000;
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t cp = 0;
  for (std::size_t i = 0; i < kLabels; ++i) {
    const std::string word = "\xE2\x82\xAC" + std::to_string(i);  // "€<i>"
    spans.emplace_back(cp, cp + utf8::length(word));
    text += word + std::string(12, ' ');
    cp += utf8::length(word) + 12;
  }
  nlohmann::json labels = nlohmann::json::array();
  for (std::size_t i = 0; i < kLabels; ++i) {
    labels.push_back(
        {{"slot", "s"},
         {"valueSpan", {{"startIndex", spans[i].first}, {"endIndex", spans[i].second}}}});
  }
  for (std::size_t i = 0; i < 100; ++i) labels.push_back(labels[i]);  // duplicates
  const nlohmann::json file = {{{"userInput", {{"text", text}}}, {"labels", labels}}};
  write_text(tmp.file("train.json"), file.dump());

  const auto dialogs = convert(SourceFormat::SlotJson, tmp.file("train.json"));
  ASSERT_EQ(dialogs.size(), 1u);
  const auto& values =
      dialogs[0].turns.at(0).label->domains.at(kDefaultDomain).at(kDefaultIntent).at("s");
  ASSERT_EQ(values.size(), kLabels);  // the 100 repeats are dropped
  EXPECT_EQ(values[0].value,
            "\xE2\x82\xAC"
            "0");
  EXPECT_EQ(values[12345].value,
            "\xE2\x82\xAC"
            "12345");
  EXPECT_EQ(values[12345].span, spans[12345]);
  EXPECT_EQ(values.back().value, "\xE2\x82\xAC" + std::to_string(kLabels - 1));
}

TEST(LinearConversion, AddValuesMatchesAddValue) {
  std::vector<Value> values;
  for (int i = 0; i < 200; ++i) {
    values.push_back(Value{"v" + std::to_string(i % 70), std::nullopt});
    values.push_back(Value{"v" + std::to_string(i % 50),
                           std::make_pair(static_cast<std::size_t>(i % 30), std::size_t{99})});
  }
  Tree one_by_one, batched, small;
  one_by_one.add_value("d", "i", "s", Value{"v3", std::nullopt});
  batched.add_value("d", "i", "s", Value{"v3", std::nullopt});
  for (const Value& v : values) one_by_one.add_value("d", "i", "s", v);
  batched.add_values("d", "i", "s", values);
  EXPECT_EQ(batched, one_by_one);
  small.add_values("d", "i", "s", {Value{"a", std::nullopt}, Value{"a", std::nullopt}});
  EXPECT_EQ(small.domains["d"]["i"]["s"].size(), 1u);
}

// ---- bug 5: ids do not depend on how the input path is spelled ---------------------------------

class SourceNames : public ::testing::Test {
 protected:
  void SetUp() override {
    char buf[4096];
    ASSERT_NE(::getcwd(buf, sizeof buf), nullptr);
    cwd_ = buf;
    fs::create_directories(tmp_.path() / "task");
    write_text(tmp_.file("task/train.csv"), "\xEF\xBB\xBFtext,category\nhello,greet\n");
    write_text(tmp_.file("task/categories.json"), R"(["greet"])");
    write_text(tmp_.file("task/corpus.txt"), "one\n\n\ntwo\n");
    fs::create_directory_symlink("task", tmp_.path() / "alias");
  }
  void TearDown() override { ASSERT_EQ(::chdir(cwd_.c_str()), 0); }

  testing::TempDir tmp_;
  std::string cwd_;
};

TEST_F(SourceNames, EverySpellingGivesTheFolderName) {
  ASSERT_EQ(::chdir(tmp_.file("task").c_str()), 0);
  for (const std::string& input :
       {std::string("train.csv"), std::string("./train.csv"), std::string("../task/train.csv"),
        tmp_.file("task/train.csv"), tmp_.file("alias/train.csv")}) {
    const auto dialogs = convert(SourceFormat::IntentCsv, input);
    ASSERT_EQ(dialogs.size(), 1u) << input;
    EXPECT_EQ(dialogs[0].id, "task/train/0") << input;
    EXPECT_EQ(dialogs[0].source, "task") << input;
  }
  // Text files: the stem, also when given relative to the current folder.
  EXPECT_EQ(convert(SourceFormat::Text, "corpus.txt").at(0).id, "corpus/corpus/1");
  EXPECT_EQ(convert(SourceFormat::Text, tmp_.file("task/corpus.txt")).at(0).id, "corpus/corpus/1");
}

TEST_F(SourceNames, TheRootFolderNeedsAnExplicitSource) {
  // "/tmp" exists, and its folder is the root, which has no name.
  EXPECT_THAT(error_of<std::invalid_argument>([] { convert(SourceFormat::IntentCsv, "/tmp"); }),
              HasSubstr("pass --source"));
  // A missing file there is reported as missing, not as a naming problem.
  EXPECT_THAT(error_of<DataError>(
                  [] { convert(SourceFormat::IntentCsv, "/no-such-dialtree-file.csv"); }),
              HasSubstr("/no-such-dialtree-file.csv: cannot open file for reading: No such file"));
  // With a source the name is not derived; the reader then reports the missing file.
  ConvertOptions o;
  o.source = "x";
  EXPECT_THROW(convert(SourceFormat::IntentCsv, "/no-such-dialtree-file.csv", o), DataError);
}

TEST_F(SourceNames, EmptyOrInapplicableOptionsAreRejected) {
  const std::string csv = tmp_.file("task/train.csv");
  ConvertOptions empty_source;
  empty_source.source = "";
  EXPECT_THAT(
      error_of<std::invalid_argument>([&] { convert(SourceFormat::IntentCsv, csv, empty_source); }),
      HasSubstr("--source must not be empty"));
  ConvertOptions empty_domain;
  empty_domain.domain = "";
  EXPECT_THAT(
      error_of<std::invalid_argument>([&] { convert(SourceFormat::IntentCsv, csv, empty_domain); }),
      HasSubstr("--domain must not be empty"));
  ConvertOptions domain;
  domain.domain = "banking";
  EXPECT_EQ(to_json(*convert(SourceFormat::IntentCsv, csv, domain).at(0).turns[0].label).dump(),
            R"({"banking":{"greet":{}}})");
  for (SourceFormat f : {SourceFormat::Sgd, SourceFormat::Multiwoz, SourceFormat::Text}) {
    EXPECT_THAT(error_of<std::invalid_argument>([&] { convert(f, csv, domain); }),
                HasSubstr("--domain does not apply to --format"));
  }
  ConvertOptions categories;
  categories.categories = tmp_.file("task/categories.json");
  EXPECT_THAT(error_of<std::invalid_argument>(
                  [&] { convert(SourceFormat::Text, tmp_.file("task/corpus.txt"), categories); }),
              HasSubstr("--categories applies to --format intent-csv only"));
}

// ---- bug 14: the text reader's warning names the file ------------------------------------------

TEST_F(SourceNames, BlankLineWarningNamesTheFile) {
  ConvertReport rep;
  convert(SourceFormat::Text, tmp_.file("task/corpus.txt"), {}, &rep);
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_EQ(rep.warnings[0], tmp_.file("task/corpus.txt") + ": 2 blank lines skipped");
}

// ---- bug 13: MultiWOZ's last user turn
// -----------------------------------------------------------

TEST(MultiwozLastTurn, AUserTurnWithoutAFollowingSystemTurnIsUnlabelled) {
  testing::TempDir tmp;
  write_text(tmp.file("train_dials.json"), R"({"D1.json": {"log": [
      {"text": "a hotel in the north", "metadata": {}},
      {"text": "which price?", "metadata": {"hotel": {"semi": {"area": "north"}, "book": {"booked": []}}}},
      {"text": "thanks, bye", "metadata": {}}]}})");
  const auto dialogs = convert(SourceFormat::Multiwoz, tmp.file("train_dials.json"));
  ASSERT_EQ(dialogs.size(), 1u);
  const auto& turns = dialogs[0].turns;
  ASSERT_EQ(turns.size(), 3u);
  ASSERT_TRUE(turns[0].label.has_value());
  EXPECT_EQ(to_json(*turns[0].label).dump(),
            R"({"hotel":{"DEFAULT_INTENT":{"area":[{"value":"north"}]}}})");
  EXPECT_FALSE(turns[1].label.has_value());  // system
  EXPECT_FALSE(turns[2].label.has_value()) << "no state after it: unknown, not {}";
}

// ---- bug 11: what a label tree and a turn accept
// -------------------------------------------------

TEST(TreeJson, BooleansAndEmptyNamesAreRejected) {
  using nlohmann::json;
  EXPECT_THAT(error_of<SchemaError>(
                  [] { tree_from_json(json::parse(R"({"d":{"i":{"s":[true]}}})"), "a.json"); }),
              HasSubstr("field 'label.d.i.s[0]': must be a value object, string or number, got "
                        "boolean true"));
  EXPECT_THAT(error_of<SchemaError>([] {
                tree_from_json(json::parse(R"({"d":{"i":{"s":[{"value":false}]}}})"), "a.json");
              }),
              HasSubstr("field 'label.d.i.s[0].value': must be a string or a number"));
  EXPECT_EQ(tree_from_json(json::parse(R"({"d":{"i":{"s":[3, "x", {"value": 1.5}]}}})"))
                .domains["d"]["i"]["s"]
                .size(),
            3u);
  EXPECT_THAT(
      error_of<DataError>([] { tree_from_json(json::parse(R"({"":{"i":{}}})"), "a.json"); }),
      HasSubstr("field 'label': empty domain name"));
  EXPECT_THAT(
      error_of<DataError>([] { tree_from_json(json::parse(R"({"d":{"":{}}})"), "a.json"); }),
      HasSubstr("field 'label.d': empty intent name"));
  EXPECT_THAT(
      error_of<DataError>([] { tree_from_json(json::parse(R"({"d":{"i":{"":[]}}})"), "a.json"); }),
      HasSubstr("field 'label.d.i': empty slot name"));
}

TEST(TurnJson, ASingleTurnHasItsSpansCheckedAndMayOmitTheRole) {
  using nlohmann::json;
  const Turn t = turn_from_json(
      json::parse(R"({"text":"hi there","label":{"d":{"i":{"s":[{"value":"hi","span":[0,2]}]}}}})"),
      "t.json", "", "", /*require_role=*/false);
  EXPECT_EQ(t.role, "user");
  ASSERT_TRUE(t.label.has_value());
  EXPECT_EQ(
      error_of<DataError>([] {
        turn_from_json(
            json::parse(R"({"text":"hi","label":{"d":{"i":{"s":[{"value":"hx","span":[0,2]}]}}}})"),
            "t.json", "", "", false);
      }),
      "t.json: field 'label.d.i.s[0].span': text[0:2] is 'hi' but the value is 'hx'");
  EXPECT_THROW(turn_from_json(json::parse(R"({"text":"hi"})"), "t.json", "", "", true),
               SchemaError);  // a role is required inside sts/1 records
  // An empty tree scores 0 against every tree, itself included.
  EXPECT_EQ(combined_score(Tree{}, Tree{}), 0.0);
}

}  // namespace
}  // namespace dialtree::sts
