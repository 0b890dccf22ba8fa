// Slot JSON reader (Restaurant8k, DSTC8): real splits, CASES C04 / C07 / C08, spans in code
// points, malformed copies of real files.
#include "readers/slot_json.h"

#include <algorithm>
#include <random>

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
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

// --- real data ---------------------------------------------------------------------------------

struct SlotSplit {
  const char* task;
  const char* split;
  std::size_t examples;
  std::size_t labels;  // total label spans (counted with Python's json module)
};

class RealSlotSplit : public ::testing::TestWithParam<SlotSplit> {};

TEST_P(RealSlotSplit, CountsMatchReadmeAndSpansAreInside) {
  const SlotSplit& c = GetParam();
  std::vector<SlotExample> v =
      read_slot_json(shared_data(std::string("dialoglue/") + c.task + "/" + c.split + ".json"));
  EXPECT_EQ(v.size(), c.examples);
  std::size_t labels = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].index, i);
    const std::size_t len = utf8::length(v[i].text);
    for (const SlotSpan& s : v[i].labels) {
      EXPECT_LT(s.start, s.end);
      EXPECT_LE(s.end, len);
    }
    labels += v[i].labels.size();
    EXPECT_EQ(v[i].id.has_value(), std::string(c.task) == "dstc8_sgd");
  }
  EXPECT_EQ(labels, c.labels);
}

INSTANTIATE_TEST_SUITE_P(DialoGLUE, RealSlotSplit,
                         ::testing::Values(SlotSplit{"restaurant8k", "train", 7244, 6764},
                                           SlotSplit{"restaurant8k", "val", 1000, 915},
                                           SlotSplit{"restaurant8k", "test", 3731, 3477},
                                           SlotSplit{"restaurant8k", "train_10", 724, 640},
                                           SlotSplit{"dstc8_sgd", "train", 5023, 1838},
                                           SlotSplit{"dstc8_sgd", "val", 602, 222},
                                           SlotSplit{"dstc8_sgd", "test", 1813, 628},
                                           SlotSplit{"dstc8_sgd", "train_10", 502, 175}),
                         [](const ::testing::TestParamInfo<SlotSplit>& i) {
                           return std::string(i.param.task) + "_" + i.param.split;
                         });

TEST(SlotJsonReal, Restaurant8kValuesInCodePoints) {
  std::vector<SlotExample> v = read_slot_json(shared_data("dialoglue/restaurant8k/train.json"));
  ASSERT_EQ(v.size(), 7244u);
  EXPECT_EQ(v[0].text, "There will be 5 adults and 1 child.");
  EXPECT_THAT(v[0].requested_slots, ElementsAre("people"));
  ASSERT_EQ(v[0].labels.size(), 1u);
  EXPECT_EQ(v[0].labels[0].slot, "people");
  EXPECT_EQ(utf8::substr(v[0].text, v[0].labels[0].start, v[0].labels[0].end),
            "5 adults and 1 child");
  EXPECT_TRUE(v[1].requested_slots.empty());  // no "context"
  // Record 326 has a curly apostrophe (3 bytes, 1 code point): offsets count code points.
  EXPECT_EQ(v[326].text, "It\xE2\x80\x99s reserved for Sun August 12");
  ASSERT_EQ(v[326].labels.size(), 1u);
  EXPECT_EQ(v[326].labels[0].start, 18u);
  EXPECT_EQ(v[326].labels[0].end, 31u);  // = length in code points (33 bytes)
  EXPECT_EQ(utf8::substr(v[326].text, 18, 31), "Sun August 12");
}

TEST(SlotJsonReal, Dstc8IdsAndRequestedSlots) {
  std::vector<SlotExample> v = read_slot_json(shared_data("dialoglue/dstc8_sgd/test.json"));
  ASSERT_EQ(v.size(), 1813u);
  EXPECT_EQ(v[1].id, "2_000792");
  EXPECT_THAT(v[1].requested_slots, ElementsAre("to_location", "from_location", "leaving_date"));
  ASSERT_EQ(v[1].labels.size(), 3u);
  EXPECT_EQ(v[1].labels[0].slot, "from_location");
  EXPECT_EQ(utf8::substr(v[1].text, v[1].labels[0].start, v[1].labels[0].end), "Las Vegas");
}

TEST(SlotJsonReal, VocabFilesAndBuiltVocabHaveTheSameTags) {
  for (const char* task : {"restaurant8k", "dstc8_sgd"}) {
    const std::string dir = std::string("dialoglue/") + task + "/";
    std::vector<std::string> file_vocab = read_slot_vocab(shared_data(dir + "vocab.txt"));
    std::vector<std::string> built =
        build_slot_vocab(read_slot_json(shared_data(dir + "train.json")));
    EXPECT_EQ(file_vocab.front(), "O");
    // Same tags; the file's order comes from a Python set, ours is sorted (C04).
    EXPECT_THAT(built, UnorderedElementsAreArray(file_vocab)) << task;
  }
  EXPECT_EQ(read_slot_vocab(shared_data("dialoglue/dstc8_sgd/vocab.txt")).size(), 27u);
  EXPECT_EQ(build_slot_vocab(read_slot_json(shared_data("dialoglue/restaurant8k/train.json"))),
            (std::vector<std::string>{"O", "B-date", "I-date", "B-first_name", "I-first_name",
                                      "B-last_name", "I-last_name", "B-people", "I-people",
                                      "B-time", "I-time"}));
}

TEST(SlotJsonReal, MalformedCopies) {
  TempDir tmp;
  const std::string real = read_file_bytes(shared_data("dialoglue/restaurant8k/train.json"));
  const std::string path = tmp.file("train.json");

  // Wrong type (C08).
  write_bytes(path, replace_first(real, "\"endIndex\": 34", "\"endIndex\": \"34\""));
  EXPECT_EQ(error_of<SchemaError>([&] { read_slot_json(path); }),
            path +
                ": record 0: field 'labels[0].valueSpan.endIndex': must be an integer, got "
                "string \"34\"");

  // Span past the end of the text (35 code points).
  write_bytes(path, replace_first(real, "\"endIndex\": 34", "\"endIndex\": 36"));
  EXPECT_EQ(error_of<DataError>([&] { read_slot_json(path); }),
            path +
                ": record 0: field 'labels[0].valueSpan': span [14, 36) is not inside the text "
                "(need 0 <= start < end <= 35 code points)");

  // Truncated file.
  write_bytes(path, real.substr(0, 1000));
  const std::string msg = error_of<DataError>([&] { read_slot_json(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": line 1, column 1001: invalid JSON"));
  EXPECT_THAT(msg, Not(HasSubstr("json.exception")));
  EXPECT_THAT(msg, Not(HasSubstr("parse error at line")));  // the place is said once

  // An invalid byte inside a string is escaped in the message, never printed raw (found by a
  // break test, 2026-12-03).
  write_bytes(path, "[{\"userInput\":{\"text\":\"caf\xC3\"}}]");
  const std::string bad = error_of<DataError>([&] { read_slot_json(path); });
  EXPECT_THAT(bad, HasSubstr("invalid JSON: syntax error while parsing value - invalid string: "
                             "ill-formed UTF-8 byte"));
  EXPECT_THAT(bad, HasSubstr("\\xC3"));
  EXPECT_EQ(bad.find('\xC3'), std::string::npos) << bad;
}

// --- C07: offset 0 omitted ---------------------------------------------------------------------

TEST(SlotJsonC07, MissingStartIndexMeansZero) {
  std::vector<SlotExample> v = read_slot_json(fixture("readers/c07_missing_start.json"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].text, "tomorrow at 6pm");
  ASSERT_EQ(v[0].labels.size(), 1u);
  EXPECT_EQ(v[0].labels[0].slot, "date");
  EXPECT_EQ(v[0].labels[0].start, 0u);
  EXPECT_EQ(v[0].labels[0].end, 8u);
  EXPECT_EQ(utf8::substr(v[0].text, 0, 8), "tomorrow");
}

TEST(SlotJsonC07, MissingEndIndexIsAnErrorNamingTheRecord) {
  const std::string path = fixture("readers/c07_missing_end.json");
  const std::string msg = error_of<DataError>([&] { read_slot_json(path); });
  EXPECT_EQ(msg, path +
                     ": record 1: field 'labels[0].valueSpan.endIndex': is missing (only "
                     "startIndex may be omitted)");
}

// --- C08: wrong JSON types ---------------------------------------------------------------------

struct WrongType {
  const char* name;
  std::string json;
  std::string path;
  std::string expected;  // expected type name
  std::string got;       // type found
};

class SlotJsonC08 : public ::testing::TestWithParam<WrongType> {};

TEST_P(SlotJsonC08, SchemaErrorNamesPathAndBothTypes) {
  TempDir tmp;
  const std::string file = tmp.file("bad.json");
  const WrongType& c = GetParam();
  write_bytes(file, c.json);
  const std::string msg = error_of<SchemaError>([&] { read_slot_json(file); });
  EXPECT_THAT(msg, HasSubstr("field '" + c.path + "'"));
  EXPECT_THAT(msg, HasSubstr("must be " + c.expected + ", got " + c.got));
  EXPECT_THAT(msg, HasSubstr(c.path == "(root)" ? file + ": field" : file + ": record 0: "));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("missing")));
}

const char* const kGood = R"({"userInput":{"text":"tomorrow at 6pm"},)";

INSTANTIATE_TEST_SUITE_P(
    Cases, SlotJsonC08,
    ::testing::Values(
        WrongType{"start_string",
                  std::string("[") + kGood +
                      R"("labels":[{"slot":"date","valueSpan":{"startIndex":"3","endIndex":8}}]}])",
                  "labels[0].valueSpan.startIndex", "an integer", "string"},
        WrongType{"end_float",
                  std::string("[") + kGood +
                      R"("labels":[{"slot":"date","valueSpan":{"endIndex":8.5}}]}])",
                  "labels[0].valueSpan.endIndex", "an integer", "number"},
        WrongType{"end_null",
                  std::string("[") + kGood +
                      R"("labels":[{"slot":"date","valueSpan":{"endIndex":null}}]}])",
                  "labels[0].valueSpan.endIndex", "an integer", "null"},
        WrongType{"end_bool",
                  std::string("[") + kGood +
                      R"("labels":[{"slot":"date","valueSpan":{"endIndex":true}}]}])",
                  "labels[0].valueSpan.endIndex", "an integer", "boolean"},
        WrongType{
            "slot_int",
            std::string("[") + kGood + R"("labels":[{"slot":5,"valueSpan":{"endIndex":8}}]}])",
            "labels[0].slot", "a string", "integer"},
        WrongType{"value_span_array",
                  std::string("[") + kGood + R"("labels":[{"slot":"date","valueSpan":[0,8]}]}])",
                  "labels[0].valueSpan", "an object", "array"},
        WrongType{"label_bool", std::string("[") + kGood + R"("labels":[true]}])", "labels[0]",
                  "an object", "boolean"},
        WrongType{"labels_object", std::string("[") + kGood + R"("labels":{}}])", "labels",
                  "an array", "object"},
        WrongType{"text_array", R"([{"userInput":{"text":["a"]}}])", "userInput.text", "a string",
                  "array"},
        WrongType{"user_input_string", R"([{"userInput":"hi"}])", "userInput", "an object",
                  "string"},
        WrongType{"requested_string",
                  std::string("[") + kGood + R"("context":{"requestedSlots":"people"}}])",
                  "context.requestedSlots", "an array", "string"},
        WrongType{"requested_item_int",
                  std::string("[") + kGood + R"("context":{"requestedSlots":["a",1]}}])",
                  "context.requestedSlots[1]", "a string", "integer"},
        WrongType{"id_int", std::string("[") + kGood + R"("id":5}])", "id", "a string", "integer"},
        WrongType{"record_string", R"(["hello"])", "(record)", "an object", "string"},
        WrongType{"root_object", R"({"userInput":{"text":"x"}})", "(root)", "an array", "object"}),
    [](const ::testing::TestParamInfo<WrongType>& i) { return std::string(i.param.name); });

// --- spans -------------------------------------------------------------------------------------

TEST(SlotJsonSpans, BadSpansAreDataErrors) {
  TempDir tmp;
  const std::string file = tmp.file("s.json");
  auto err = [&](const std::string& span) {
    write_bytes(
        file, R"([{"userInput":{"text":"caf\u00e9 at 5pm"},"labels":[{"slot":"time","valueSpan":)" +
                  span + "}]}]");
    return error_of<DataError>([&] { read_slot_json(file); });
  };
  // "café at 5pm" is 11 code points (12 bytes): [8, 11) is fine, [8, 12) is not.
  write_bytes(
      file,
      R"([{"userInput":{"text":"caf\u00e9 at 5pm"},"labels":[{"slot":"time","valueSpan":{"startIndex":8,"endIndex":11}}]}])");
  std::vector<SlotExample> ok = read_slot_json(file);
  EXPECT_EQ(utf8::substr(ok[0].text, ok[0].labels[0].start, ok[0].labels[0].end), "5pm");
  EXPECT_EQ(err(R"({"startIndex":8,"endIndex":12})"),
            file +
                ": record 0: field 'labels[0].valueSpan': span [8, 12) is not inside the text "
                "(need 0 <= start < end <= 11 code points)");
  EXPECT_EQ(err(R"({"startIndex":5,"endIndex":5})"),
            file +
                ": record 0: field 'labels[0].valueSpan': span [5, 5) is not inside the text "
                "(need 0 <= start < end <= 11 code points)");
  EXPECT_EQ(err(R"({"startIndex":-1,"endIndex":5})"),
            file + ": record 0: field 'labels[0].valueSpan.startIndex': negative offset -1");
}

TEST(SlotJsonSpans, OptionalFieldsAndMissingRequiredOnes) {
  TempDir tmp;
  const std::string file = tmp.file("s.json");
  write_bytes(file, R"([{"userInput":{"text":"hi"}}, {"userInput":{"text":"yo"},"context":{}}])");
  std::vector<SlotExample> v = read_slot_json(file);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[0].labels.empty());
  EXPECT_TRUE(v[1].requested_slots.empty());
  EXPECT_EQ(v[1].index, 1u);
  write_bytes(file, R"([{"userInput":{"text":"hi"}}, {"userInput":{}}])");
  EXPECT_EQ(error_of<SchemaError>([&] { read_slot_json(file); }),
            file + ": record 1: field 'userInput.text': is missing");
  write_bytes(file, R"([{"userInput":{"text":"hi"},"labels":[{"valueSpan":{"endIndex":1}}]}])");
  EXPECT_EQ(error_of<SchemaError>([&] { read_slot_json(file); }),
            file + ": record 0: field 'labels[0].slot': is missing");
  // docs/failure-cases.md B13: an empty text was converted into an empty turn.
  write_bytes(file, R"([{"userInput":{"text":"hi"}}, {"userInput":{"text":""}}])");
  EXPECT_EQ(error_of<DataError>([&] { read_slot_json(file); }),
            file + ": record 1: field 'userInput.text': empty text");
  write_bytes(file, R"([{"userInput":{"text":"  "}}])");
  EXPECT_EQ(error_of<DataError>([&] { read_slot_json(file); }),
            file + ": record 0: field 'userInput.text': the text is only blanks");
}

// --- C04: deterministic vocabulary -------------------------------------------------------------

TEST(SlotVocabC04, SortedAndIndependentOfInputOrder) {
  std::vector<SlotExample> examples;
  const char* slots[] = {"time", "date", "time", "people", "date", "Zone", "\xC3\xA9t\xC3\xA9"};
  for (std::size_t i = 0; i < std::size(slots); ++i) {
    SlotExample ex;
    ex.text = "abcdef";
    ex.labels.push_back(SlotSpan{slots[i], 0, 3});
    if (i % 2 == 0) ex.labels.push_back(SlotSpan{"date", 3, 6});
    examples.push_back(ex);
  }
  const std::vector<std::string> expected = {"O",
                                             "B-Zone",
                                             "I-Zone",
                                             "B-date",
                                             "I-date",
                                             "B-people",
                                             "I-people",
                                             "B-time",
                                             "I-time",
                                             "B-\xC3\xA9t\xC3\xA9",
                                             "I-\xC3\xA9t\xC3\xA9"};
  const std::string expected_bytes = json(expected).dump();
  for (unsigned seed = 0; seed < 5; ++seed) {
    std::vector<SlotExample> shuffled = examples;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(seed));
    std::vector<std::string> vocab = build_slot_vocab(shuffled);
    EXPECT_EQ(vocab, expected) << "seed " << seed;
    EXPECT_EQ(json(vocab).dump(), expected_bytes);  // the written file is byte-identical
  }
}

TEST(SlotVocabC04, CaseExample) {
  std::vector<SlotExample> ex(2);
  ex[0].labels.push_back(SlotSpan{"time", 0, 1});
  ex[1].labels.push_back(SlotSpan{"date", 0, 1});
  EXPECT_THAT(build_slot_vocab(ex), ElementsAre("O", "B-date", "I-date", "B-time", "I-time"));
  std::swap(ex[0], ex[1]);
  EXPECT_THAT(build_slot_vocab(ex), ElementsAre("O", "B-date", "I-date", "B-time", "I-time"));
  EXPECT_THAT(build_slot_vocab({}), ElementsAre("O"));
}

TEST(SlotVocab, ReadErrors) {
  TempDir tmp;
  write_bytes(tmp.file("v.json"), R"(["O", "B-a", "O"])");
  EXPECT_EQ(error_of<DataError>([&] { read_slot_vocab(tmp.file("v.json")); }),
            tmp.file("v.json") + ": field '[2]': duplicate tag 'O'");
  write_bytes(tmp.file("v.json"), R"(["O", 1])");
  EXPECT_EQ(error_of<SchemaError>([&] { read_slot_vocab(tmp.file("v.json")); }),
            tmp.file("v.json") + ": field '[1]': must be a string, got integer");
}

}  // namespace
}  // namespace dialtree::readers
