// TOP reader and vocabulary files: real splits, bare-colon words, malformed lines.
#include "readers/top.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/json_util.h"
#include "readers_test_util.h"
#include "test_paths.h"

namespace dialtree::readers {
namespace {

using ::dialtree::testing::error_of;
using ::dialtree::testing::shared_data;
using ::dialtree::testing::TempDir;
using ::dialtree::testing::write_bytes;
using ::testing::ElementsAre;

struct TopSplit {
  const char* split;
  std::size_t lines;
  std::size_t bare_colons;  // "::TAG" tokens (counted with grep/Python)
};

class RealTopSplit : public ::testing::TestWithParam<TopSplit> {};

TEST_P(RealTopSplit, CountsMatchReadme) {
  std::vector<TopExample> v =
      read_top(shared_data(std::string("dialoglue/top/") + GetParam().split + ".txt"));
  EXPECT_EQ(v.size(), GetParam().lines);
  std::size_t colons = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].line, i + 1);
    ASSERT_EQ(v[i].words.size(), v[i].tags.size());
    for (const std::string& w : v[i].words) colons += w == ":";
  }
  EXPECT_EQ(colons, GetParam().bare_colons);
}

INSTANTIATE_TEST_SUITE_P(DialoGLUE, RealTopSplit,
                         ::testing::Values(TopSplit{"train", 31279, 375},
                                           TopSplit{"eval", 4462, 74}, TopSplit{"test", 9042, 121},
                                           TopSplit{"train_10", 3127, 47}),
                         [](const ::testing::TestParamInfo<TopSplit>& i) {
                           return std::string(i.param.split);
                         });

TEST(TopReal, FirstExampleAndBareColon) {
  std::vector<TopExample> v = read_top(shared_data("dialoglue/top/train.txt"));
  ASSERT_EQ(v.size(), 31279u);
  EXPECT_THAT(v[0].words, ElementsAre("How", "long", "will", "it", "take", "to", "drive", "from",
                                      "Chicago", "to", "Mississippi"));
  EXPECT_THAT(v[0].tags, ElementsAre("O", "O", "O", "O", "O", "O", "B-SL_METHOD_TRAVEL", "O",
                                     "B-SL_SOURCE", "O", "B-SL_DESTINATION"));
  EXPECT_EQ(v[0].intent, "IN_GET_ESTIMATED_DURATION");
  // Line 161: "... before:B-SL_DATE_TIME_ARRIVAL 2:I-... ::I-SL_DATE_TIME_ARRIVAL 30:I-... ".
  const TopExample& ex = v[160];
  EXPECT_EQ(ex.line, 161u);
  EXPECT_EQ(ex.intent, "IN_GET_ESTIMATED_ARRIVAL");
  ASSERT_EQ(ex.words.size(), 15u);
  EXPECT_EQ(ex.words[10], "2");
  EXPECT_EQ(ex.words[11], ":");
  EXPECT_EQ(ex.tags[11], "I-SL_DATE_TIME_ARRIVAL");
  EXPECT_EQ(ex.words[12], "30");
}

TEST(TopReal, VocabFilesAreSortedSetsOverTrainEvalTest) {
  std::vector<TopExample> all;
  for (const char* split : {"train", "eval", "test"}) {
    std::vector<TopExample> v =
        read_top(shared_data(std::string("dialoglue/top/") + split + ".txt"));
    all.insert(all.end(), v.begin(), v.end());
  }
  std::vector<std::string> intents = read_vocab_lines(shared_data("dialoglue/top/vocab.intent"));
  std::vector<std::string> tags = read_vocab_lines(shared_data("dialoglue/top/vocab.slot"));
  EXPECT_EQ(intents.size(), 19u);
  EXPECT_EQ(tags.size(), 653u);
  EXPECT_EQ(top_intent_vocab(all), intents);
  EXPECT_EQ(top_tag_vocab(all), tags);
}

TEST(TopReal, BertVocab) {
  std::vector<std::string> v =
      read_vocab_lines(shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  ASSERT_EQ(v.size(), 30522u);
  EXPECT_EQ(v[0], "[PAD]");
  EXPECT_EQ(v[100], "[UNK]");
  EXPECT_EQ(v[101], "[CLS]");
  EXPECT_EQ(v[102], "[SEP]");
  EXPECT_EQ(v[103], "[MASK]");
}

TEST(TopReal, TruncatedCopyNamesTheLine) {
  TempDir tmp;
  const std::string real = read_file_bytes(shared_data("dialoglue/top/train.txt"));
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) pos = real.find('\n', pos) + 1;  // keep 3 full lines
  const std::string path = tmp.file("train.txt");
  write_bytes(path, real.substr(0, pos + 40));  // + a cut 4th line
  EXPECT_EQ(error_of<DataError>([&] { read_top(path); }),
            path + ": line 4: missing ' <=> ' between the tagged words and the intent");
}

TEST(TopFixture, ParsesWordsTagsCrlfAndBareColon) {
  TempDir tmp;
  const std::string path = tmp.file("t.txt");
  write_bytes(path,
              "at:O 5:B-SL_TIME ::I-SL_TIME 30:I-SL_TIME or:O 10:30:B-SL_TIME <=> IN_X\r\n"
              "go:O  home:B-SL_DEST <=> IN_Y\n");
  std::vector<TopExample> v = read_top(path);
  ASSERT_EQ(v.size(), 2u);
  // A word with a colon in it splits at the token's last colon (tags never hold one).
  EXPECT_THAT(v[0].words, ElementsAre("at", "5", ":", "30", "or", "10:30"));
  EXPECT_THAT(v[0].tags, ElementsAre("O", "B-SL_TIME", "I-SL_TIME", "I-SL_TIME", "O", "B-SL_TIME"));
  EXPECT_EQ(v[0].intent, "IN_X");
  EXPECT_THAT(v[1].words, ElementsAre("go", "home"));
  EXPECT_EQ(v[1].intent, "IN_Y");
  EXPECT_EQ(v[1].line, 2u);
  EXPECT_THAT(top_intent_vocab(v), ElementsAre("IN_X", "IN_Y"));
  EXPECT_THAT(top_tag_vocab(v), ElementsAre("B-SL_DEST", "B-SL_TIME", "I-SL_TIME", "O"));
}

struct BadTop {
  const char* name;
  std::string bytes;
  std::string message;  // after "<path>: "
};

class TopMalformed : public ::testing::TestWithParam<BadTop> {};

TEST_P(TopMalformed, OneClearError) {
  TempDir tmp;
  const std::string path = tmp.file("bad.txt");
  write_bytes(path, GetParam().bytes);
  EXPECT_EQ(error_of<DataError>([&] { read_top(path); }), path + ": " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TopMalformed,
    ::testing::Values(
        BadTop{"no_separator", "a:O <=> IN_X\nb:O IN_Y\n",
               "line 2: missing ' <=> ' between the tagged words and the intent"},
        BadTop{"two_separators", "a:O <=> IN_X <=> IN_Y\n", "line 1: more than one ' <=> '"},
        BadTop{"no_colon", "a:O b <=> IN_X\n", "line 1: token 'b' has no ':' between word and tag"},
        BadTop{"empty_word", "a:O :O <=> IN_X\n", "line 1: token ':O' has an empty word"},
        BadTop{"bad_tag", "a:O b:X-SL_A <=> IN_X\n",
               "line 1: token 'b:X-SL_A': tag 'X-SL_A' is not O, B-<label> or I-<label>"},
        BadTop{"empty_tag", "a:O b: <=> IN_X\n",
               "line 1: token 'b:': tag '' is not O, B-<label> or I-<label>"},
        BadTop{"colon_word_bad_tag", "a:O 10:30:X <=> IN_X\n",
               "line 1: token '10:30:X': tag 'X' is not O, B-<label> or I-<label>"},
        BadTop{"empty_intent", "a:O <=> \n", "line 1: field 'intent': empty intent"},
        BadTop{"no_words", " <=> IN_X\n", "line 1: no tagged words before ' <=> '"},
        BadTop{"blank_line", "a:O <=> IN_X\n\nb:O <=> IN_X\n", "line 2: empty line"},
        BadTop{"invalid_utf8", "a:O <=> IN_X\ncaf\xC3:O <=> IN_X\n",
               "line 2: invalid UTF-8 at byte 4 of the line"}),
    [](const ::testing::TestParamInfo<BadTop>& i) { return std::string(i.param.name); });

TEST(VocabLines, CrlfStrippedBlankLineIsAnError) {
  TempDir tmp;
  write_bytes(tmp.file("v.txt"), "[PAD]\r\nhello\r\n##lo");
  EXPECT_THAT(read_vocab_lines(tmp.file("v.txt")), ElementsAre("[PAD]", "hello", "##lo"));
  write_bytes(tmp.file("v.txt"), "a\n\nb\n");
  EXPECT_EQ(error_of<DataError>([&] { read_vocab_lines(tmp.file("v.txt")); }),
            tmp.file("v.txt") + ": line 2: empty line in a vocabulary file");
}

}  // namespace
}  // namespace dialtree::readers
