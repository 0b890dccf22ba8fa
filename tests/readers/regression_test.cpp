// Regression tests for the tester's report on the readers: repeated SGD dialogue ids, SGD
// services without a name, folders passed as files, user data quoted with escapes in messages,
// and integers beyond int64 in slot spans.
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "readers/intent_csv.h"
#include "readers/multiwoz.h"
#include "readers/sgd.h"
#include "readers/slot_json.h"
#include "readers/text.h"
#include "readers/top.h"
#include "readers_test_util.h"
#include "test_paths.h"

namespace dialtree::readers {
namespace {

using ::dialtree::testing::error_of;
using ::dialtree::testing::TempDir;
using ::dialtree::testing::write_bytes;
using ::testing::HasSubstr;
using ::testing::Not;

// One SGD dialogue `id` with one user turn on `service`.
std::string sgd_dialog(const std::string& id, const std::string& service = "Restaurants_1") {
  return R"({"dialogue_id":")" + id + R"(","services":[")" + service +
         R"("],"turns":[{"speaker":"USER","utterance":"hi","frames":[{"service":")" + service +
         R"(","actions":[],"slots":[],"state":{"active_intent":"NONE","requested_slots":[],)"
         R"("slot_values":{}}}]}]})";
}

// ---- bug 6: repeated dialogue ids ------------------------------------------------------------

TEST(SgdDuplicateIds, InOneFileNamesTheIdAndBothPlaces) {
  TempDir tmp;
  const std::string f = tmp.file("dialogues_001.json");
  write_bytes(f, "[" + sgd_dialog("1_00000") + "," + sgd_dialog("1_00001") + "," +
                     sgd_dialog("1_00000") + "]");
  EXPECT_EQ(error_of<DataError>([&] { read_sgd_file(f); }),
            f + ": record 2: field 'dialogue_id': duplicate dialogue id '1_00000' (first at "
                "dialogues_001.json record 0)");
  EXPECT_THROW(read_sgd(tmp.path().string()), DataError);
}

TEST(SgdDuplicateIds, AcrossFilesOfAFolder) {
  TempDir tmp;
  write_bytes(tmp.file("dialogues_001.json"), "[" + sgd_dialog("1_00000") + "]");
  write_bytes(tmp.file("dialogues_002.json"),
              "[" + sgd_dialog("2_00000") + "," + sgd_dialog("1_00000") + "]");
  EXPECT_EQ(error_of<DataError>([&] { read_sgd(tmp.path().string()); }),
            tmp.file("dialogues_002.json") +
                ": record 1: field 'dialogue_id': duplicate dialogue id '1_00000' (first at "
                "dialogues_001.json record 0)");
  // Each file on its own is fine.
  EXPECT_EQ(read_sgd_file(tmp.file("dialogues_002.json")).size(), 2u);
}

// ---- bug 13: services that give no domain ------------------------------------------------------

TEST(SgdServices, AServiceWithoutANameIsAnError) {
  TempDir tmp;
  const std::string f = tmp.file("dialogues_001.json");
  for (const std::string service : {"_1", ""}) {
    write_bytes(f, "[" + sgd_dialog("1_00000", service) + "]");
    const std::string msg = error_of<DataError>([&] { read_sgd_file(f); });
    EXPECT_THAT(msg, HasSubstr("field 'turns[0].frames[0].service': service '" + service +
                               "' gives an empty domain"));
  }
  EXPECT_EQ(sgd_service_domain("Restaurants_1"), "Restaurants");
  EXPECT_EQ(sgd_service_domain("Banks"), "Banks");
  EXPECT_EQ(sgd_service_domain("My_Service_12"), "My_Service");
  EXPECT_EQ(sgd_service_domain("_1"), "");
}

// ---- bug 10: a folder where a file is expected --------------------------------------------------

TEST(DirectoryAsFile, EveryReaderSaysItIsADirectory) {
  TempDir tmp;
  const std::string dir = tmp.path().string();
  const std::string expected = dir + ": is a directory, not a file";
  const LabelMap labels({"a"}, "categories.json");
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(dir, labels); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { LabelMap::from_categories_json(dir); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { read_text_lines(dir); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { read_top(dir); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { read_slot_json(dir); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { read_multiwoz(dir); }), expected);
  EXPECT_EQ(error_of<DataError>([&] { read_sgd_file(dir); }), expected);
}

// ---- bug 9: user data in messages is quoted with escapes ---------------------------------------

TEST(QuotedUserData, CsvLabelWithANulAndInvalidBytes) {
  TempDir tmp;
  const LabelMap labels({"greet"}, "categories.json");
  const std::string f = tmp.file("train.csv");
  write_bytes(f, std::string("text,category\nhello,gr\0eet\n", 27));
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(f, labels); }),
            f + ": line 2: field 'category': label 'gr\\x00eet' not in categories.json");
  // A duplicate category with a control character.
  EXPECT_THAT(error_of<DataError>([] {
                LabelMap({"a\x01", "a\x01"}, "c.json");
              }),
              HasSubstr("duplicate label 'a\\x01'"));
}

TEST(QuotedUserData, TopTokensAndTags) {
  TempDir tmp;
  const std::string f = tmp.file("top.txt");
  write_bytes(f, "hi:B\x07X there:O <=> IN_A\n");
  EXPECT_EQ(error_of<DataError>([&] { read_top(f); }),
            f + ": line 1: token 'hi:B\\x07X': tag 'B\\x07X' is not O, B-<label> or I-<label>");
  write_bytes(f, std::string("a\0b there:O <=> IN_A\n", 20));
  EXPECT_EQ(error_of<DataError>([&] { read_top(f); }),
            f + ": line 1: token 'a\\x00b' has no ':' between word and tag");
}

TEST(QuotedUserData, SgdSpeaker) {
  TempDir tmp;
  const std::string f = tmp.file("dialogues_001.json");
  write_bytes(f, R"([{"dialogue_id":"x_1","services":[],"turns":[{"speaker":"US\u0000ER",)"
                 R"("utterance":"hi","frames":[]}]}])");
  EXPECT_THAT(error_of<DataError>([&] { read_sgd_file(f); }),
              HasSubstr("must be \"USER\" or \"SYSTEM\", got 'US\\x00ER'"));
}

// ---- bug 12: endIndex beyond int64 --------------------------------------------------------------

TEST(SlotSpanRange, HugeEndIndexIsReportedAsItIs) {
  TempDir tmp;
  const std::string f = tmp.file("train.json");
  write_bytes(f, R"([{"userInput":{"text":"hello"},"labels":[{"slot":"s","valueSpan":)"
                 R"({"startIndex":0,"endIndex":18446744073709551615}}]}])");
  const std::string msg = error_of<DataError>([&] { read_slot_json(f); });
  EXPECT_THAT(msg, HasSubstr("field 'labels[0].valueSpan.endIndex': integer "
                             "18446744073709551615 is out of range"));
  // Not wrapped to -1. Only the text after the file name is checked: the temporary folder's
  // random name may itself hold "-1" (it did once: /tmp/dialtree-test-1gQhZI).
  EXPECT_THAT(msg.substr(msg.find("record 0")), Not(HasSubstr("-1")));
}

}  // namespace
}  // namespace dialtree::readers
