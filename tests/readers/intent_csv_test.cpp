// Intent CSV reader and LabelMap: real DialoGLUE splits, CASES C01 / C03, RFC 4180 details and
// malformed input.
#include "readers/intent_csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "readers_test_util.h"
#include "test_paths.h"

namespace dialtree::readers {
namespace {

using ::dialtree::testing::error_of;
using ::dialtree::testing::shared_data;
using ::dialtree::testing::TempDir;
using ::dialtree::testing::write_bytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

LabelMap small_map() {
  return LabelMap({"balance", "card_lost", "greet"}, "categories.json");
}

// --- real data ---------------------------------------------------------------------------------

struct SplitCount {
  const char* task;
  const char* split;
  std::size_t rows;
};

class RealIntentSplit : public ::testing::TestWithParam<SplitCount> {};

TEST_P(RealIntentSplit, RowCountMatchesReadmeAndEveryLabelMaps) {
  const SplitCount& c = GetParam();
  const std::string dir = std::string("dialoglue/") + c.task + "/";
  LabelMap labels = LabelMap::from_categories_json(shared_data(dir + "categories.json"));
  IntentCsv csv = read_intent_csv(shared_data(dir + c.split + ".csv"), labels);
  EXPECT_THAT(csv.header, ElementsAre("text", "category"));
  EXPECT_EQ(csv.rows.size(), c.rows);
  std::size_t prev_line = 1;
  for (const IntentExample& ex : csv.rows) {
    ASSERT_GE(ex.label_id, 0) << ex.label;
    EXPECT_EQ(labels.name(ex.label_id), ex.label);
    EXPECT_FALSE(ex.text.empty());
    EXPECT_GT(ex.line, prev_line);
    prev_line = ex.line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    DialoGLUE, RealIntentSplit,
    ::testing::Values(SplitCount{"banking", "train", 8622}, SplitCount{"banking", "val", 1540},
                      SplitCount{"banking", "test", 3080}, SplitCount{"banking", "train_10", 770},
                      SplitCount{"banking", "train_5", 385}, SplitCount{"clinc", "train", 15000},
                      SplitCount{"clinc", "val", 3000}, SplitCount{"clinc", "test", 4500},
                      SplitCount{"clinc", "train_10", 1500}, SplitCount{"clinc", "train_5", 750},
                      SplitCount{"hwu", "train", 8954}, SplitCount{"hwu", "val", 1076},
                      SplitCount{"hwu", "test", 1076}, SplitCount{"hwu", "train_10", 640},
                      SplitCount{"hwu", "train_5", 320}),
    [](const ::testing::TestParamInfo<SplitCount>& i) {
      return std::string(i.param.task) + "_" + i.param.split;
    });

TEST(IntentCsvReal, CategorySizesAndFileOrder) {
  LabelMap banking =
      LabelMap::from_categories_json(shared_data("dialoglue/banking/categories.json"));
  LabelMap clinc = LabelMap::from_categories_json(shared_data("dialoglue/clinc/categories.json"));
  LabelMap hwu = LabelMap::from_categories_json(shared_data("dialoglue/hwu/categories.json"));
  EXPECT_EQ(banking.size(), 77u);
  EXPECT_EQ(clinc.size(), 150u);
  EXPECT_EQ(hwu.size(), 64u);
  // BANKING77 keeps PolyAI's (unsorted) order: ids are positions in the file.
  EXPECT_EQ(banking.name(0), "card_arrival");
  EXPECT_EQ(banking.name(1), "card_linking");
  EXPECT_EQ(banking.name(2), "exchange_rate");
  EXPECT_EQ(banking.find("exchange_rate"), 2);
  EXPECT_EQ(banking.find("no_such_label"), -1);
}

TEST(IntentCsvReal, BankingTrainMultiLineRecordsAndLineNumbers) {
  const std::string dir = "dialoglue/banking/";
  LabelMap labels = LabelMap::from_categories_json(shared_data(dir + "categories.json"));
  IntentCsv csv = read_intent_csv(shared_data(dir + "train.csv"), labels);
  ASSERT_EQ(csv.rows.size(), 8622u);
  EXPECT_EQ(csv.rows.front().text, "I am still waiting on my card?");
  EXPECT_EQ(csv.rows.front().label, "card_arrival");
  EXPECT_EQ(csv.rows.front().label_id, 0);
  EXPECT_EQ(csv.rows.front().line, 2u);
  // The file is CRLF; this quoted text has LF newlines inside, one of them leading.
  const IntentExample* multi = nullptr;
  for (const IntentExample& ex : csv.rows) {
    if (ex.line == 1112) multi = &ex;
  }
  ASSERT_NE(multi, nullptr);
  EXPECT_EQ(multi->text, "\nI can't seem to be able to use my card\n\n\n");
  EXPECT_EQ(multi->label, "card_not_working");
  std::size_t with_newline = 0;
  for (const IntentExample& ex : csv.rows) with_newline += ex.text.find('\n') != std::string::npos;
  EXPECT_EQ(with_newline, 7u);  // README: 7 train rows contain newlines
  EXPECT_EQ(csv.rows.back().text, "Which countries are represented?");
  EXPECT_EQ(csv.rows.back().line, 8633u);  // 8622 rows + header + 10 extra physical lines
}

TEST(IntentCsvReal, SharedMapGivesSameIdsInEverySplit) {  // C03 on real data
  const std::string dir = "dialoglue/hwu/";
  LabelMap labels = LabelMap::from_categories_json(shared_data(dir + "categories.json"));
  IntentCsv train = read_intent_csv(shared_data(dir + "train.csv"), labels);
  IntentCsv test = read_intent_csv(shared_data(dir + "test.csv"), labels);
  const int id = labels.find("alarm_set");
  ASSERT_GE(id, 0);
  std::size_t seen = 0;
  for (const IntentCsv* csv : {&train, &test}) {
    for (const IntentExample& ex : csv->rows) {
      if (ex.label == "alarm_set") {
        EXPECT_EQ(ex.label_id, id);
        ++seen;
      }
    }
  }
  EXPECT_GT(seen, 0u);
}

TEST(IntentCsvReal, TruncatedCopyReportsUnterminatedQuoteAtRecordStart) {
  TempDir tmp;
  std::string bytes = read_file_bytes(shared_data("dialoglue/banking/train.csv"));
  // Cut inside the quoted multi-line text that starts on line 1112.
  std::size_t cut = bytes.find("\"\nI can't seem");
  ASSERT_NE(cut, std::string::npos);
  const std::string path = tmp.file("train.csv");
  write_bytes(path, bytes.substr(0, cut + 10));
  LabelMap labels =
      LabelMap::from_categories_json(shared_data("dialoglue/banking/categories.json"));
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(path, labels); }),
            path +
                ": line 1112: field 'text': unterminated quoted field: the closing quote is "
                "missing, so the field runs to the end of the file");
}

// --- C01: BOM ----------------------------------------------------------------------------------

TEST(IntentCsvC01, LeadingBomIsDroppedAndResultEqualsNoBom) {
  TempDir tmp;
  const std::string body = "text,category\nwhat is my balance,balance\n";
  write_bytes(tmp.file("bom.csv"), "\xEF\xBB\xBF" + body);
  write_bytes(tmp.file("plain.csv"), body);
  LabelMap labels = small_map();
  IntentCsv with_bom = read_intent_csv(tmp.file("bom.csv"), labels);
  IntentCsv plain = read_intent_csv(tmp.file("plain.csv"), labels);
  ASSERT_EQ(with_bom.header.size(), 2u);
  EXPECT_EQ(with_bom.header[0], std::string("text"));  // byte compare, no U+FEFF
  EXPECT_EQ(with_bom.header[0].size(), 4u);
  EXPECT_EQ(with_bom.header[1], "category");
  ASSERT_EQ(with_bom.rows.size(), 1u);
  EXPECT_EQ(with_bom.rows[0].text, "what is my balance");
  EXPECT_EQ(with_bom.rows[0].label, "balance");
  EXPECT_EQ(with_bom.rows[0].label_id, 0);
  EXPECT_EQ(with_bom.rows[0].line, 2u);
  EXPECT_EQ(with_bom.header, plain.header);
  ASSERT_EQ(plain.rows.size(), 1u);
  EXPECT_EQ(with_bom.rows[0].text, plain.rows[0].text);
  EXPECT_EQ(with_bom.rows[0].label_id, plain.rows[0].label_id);
  EXPECT_EQ(with_bom.rows[0].line, plain.rows[0].line);
}

TEST(IntentCsvBlankLines, TrailingBlankLinesEndTheFileLikeNone) {
  // Found by a break test (2026-12-04): "a,greet\n\n" stopped with "empty line". A blank line
  // between records is still an error (IntentCsvMalformed empty_line).
  TempDir tmp;
  const std::string body = "text,category\nwhat is my balance,balance\n\"two\nlines\",balance\n";
  write_bytes(tmp.file("plain.csv"), body);
  write_bytes(tmp.file("trailing.csv"), body + "\n\r\n  \n\t\n");  // blanks: spaces, tabs too
  LabelMap labels = small_map();
  const IntentCsv plain = read_intent_csv(tmp.file("plain.csv"), labels);
  const IntentCsv trailing = read_intent_csv(tmp.file("trailing.csv"), labels);
  ASSERT_EQ(plain.rows.size(), 2u);
  ASSERT_EQ(trailing.rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(trailing.rows[i].text, plain.rows[i].text);
    EXPECT_EQ(trailing.rows[i].label_id, plain.rows[i].label_id);
    EXPECT_EQ(trailing.rows[i].line, plain.rows[i].line);
  }
  EXPECT_EQ(trailing.rows[1].text, "two\nlines");
}

TEST(IntentCsvC01, OnlyOneBomIsDropped) {
  TempDir tmp;
  write_bytes(tmp.file("bom2.csv"), "\xEF\xBB\xBF\xEF\xBB\xBFtext,category\na,balance\n");
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(tmp.file("bom2.csv"), small_map()); }),
            tmp.file("bom2.csv") +
                ": line 1: field 'header': expected exactly 'text,category', got "
                "'\xEF\xBB\xBFtext,category'");
}

TEST(IntentCsvC01, BomInsideTextIsKept) {
  TempDir tmp;
  write_bytes(tmp.file("a.csv"), "text,category\n\xEF\xBB\xBFhi,greet\n");
  IntentCsv csv = read_intent_csv(tmp.file("a.csv"), small_map());
  ASSERT_EQ(csv.rows.size(), 1u);
  EXPECT_EQ(csv.rows[0].text, "\xEF\xBB\xBFhi");
}

// Without a label map the file's labels are its own: " greet" would have become a second label
// beside "greet" (a loose end of 2026-12-04); it is refused with its line.
TEST(IntentCsvLabels, BlanksAroundALabelAreRefusedInEveryMode) {
  TempDir tmp;
  write_bytes(tmp.file("a.csv"), "text,category\nhi,greet\nyo, greet\n");
  IntentCsvOptions own;
  own.labels_from_file = true;
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(tmp.file("a.csv"), LabelMap({}, ""), own); }),
            tmp.file("a.csv") +
                ": line 3: field 'category': label ' greet' has leading or trailing blanks; remove "
                "them (with them it is another label than the same name without)");
}

// --- C03: one shared label map -----------------------------------------------------------------

TEST(IntentCsvC03, OneMapForAllSplits) {
  TempDir tmp;
  write_bytes(tmp.file("train.csv"), "text,category\nlost my card,card_lost\nbalance?,balance\n");
  write_bytes(tmp.file("test.csv"), "text,category\nhi there,greet\ncard gone,card_lost\n");
  LabelMap labels = small_map();
  IntentCsv train = read_intent_csv(tmp.file("train.csv"), labels);
  IntentCsv test = read_intent_csv(tmp.file("test.csv"), labels);
  EXPECT_EQ(labels.find("balance"), 0);
  EXPECT_EQ(labels.find("card_lost"), 1);
  EXPECT_EQ(labels.find("greet"), 2);
  EXPECT_EQ(train.rows[0].label_id, 1);  // card_lost
  EXPECT_EQ(train.rows[1].label_id, 0);  // balance
  EXPECT_EQ(test.rows[0].label_id, 2);   // greet
  EXPECT_EQ(test.rows[1].label_id, 1);   // card_lost: same id although test has no balance
}

TEST(IntentCsvC03, UnknownLabelNamesLabelFileAndLine) {
  TempDir tmp;
  write_bytes(tmp.file("categories.json"), R"(["balance","card_lost","greet"])");
  write_bytes(tmp.file("test.csv"), "text,category\nhi there,greet\nwhat's up,chitchat\n");
  LabelMap labels = LabelMap::from_categories_json(tmp.file("categories.json"));
  const std::string msg =
      error_of<DataError>([&] { read_intent_csv(tmp.file("test.csv"), labels); });
  EXPECT_THAT(msg, HasSubstr("chitchat"));
  EXPECT_THAT(msg, HasSubstr("test.csv"));
  EXPECT_THAT(msg, HasSubstr("line 3"));
  EXPECT_EQ(msg, tmp.file("test.csv") + ": line 3: field 'category': label 'chitchat' not in " +
                     tmp.file("categories.json"));
}

TEST(IntentCsvC03, ExplicitOutOfScopePolicy) {
  TempDir tmp;
  write_bytes(tmp.file("test.csv"), "text,category\nhi there,greet\nwhat's up,chitchat\n");
  IntentCsvOptions opt;
  opt.unknown_label_as = "greet";
  IntentCsv csv = read_intent_csv(tmp.file("test.csv"), small_map(), opt);
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.rows[1].label, "chitchat");
  EXPECT_EQ(csv.rows[1].label_id, 2);
  opt.unknown_label_as = "oos";
  EXPECT_THROW(read_intent_csv(tmp.file("test.csv"), small_map(), opt), std::invalid_argument);
}

// --- RFC 4180 ----------------------------------------------------------------------------------

TEST(IntentCsvRfc4180, QuotesNewlinesLineEndsAndSpaces) {
  TempDir tmp;
  const std::string bytes =
      "text,category\r\n"                        // line 1
      "\"say \"\"hi\"\", please\",greet\r\n"     // line 2
      "\"two\r\nlines, one comma\",balance\r\n"  // lines 3-4
      "\"\nleading newline\",card_lost\n"        // lines 5-6 (LF only)
      " spaced out ,balance\r\n"                 // line 7: spaces are kept
      "\"\"\"\",greet\n"                         // line 8: a lone quote, quoted
      "\"a\",\"card_lost\"\n"                    // line 9: quoted label
      "last without newline,greet";              // line 10
  write_bytes(tmp.file("a.csv"), bytes);
  IntentCsv csv = read_intent_csv(tmp.file("a.csv"), small_map());
  ASSERT_EQ(csv.rows.size(), 7u);
  EXPECT_EQ(csv.rows[0].text, "say \"hi\", please");
  EXPECT_EQ(csv.rows[0].line, 2u);
  EXPECT_EQ(csv.rows[1].text, "two\r\nlines, one comma");
  EXPECT_EQ(csv.rows[1].line, 3u);
  EXPECT_EQ(csv.rows[2].text, "\nleading newline");
  EXPECT_EQ(csv.rows[2].line, 5u);
  EXPECT_EQ(csv.rows[3].text, " spaced out ");
  EXPECT_EQ(csv.rows[3].line, 7u);
  EXPECT_EQ(csv.rows[4].text, "\"");  // an empty text is an error (IntentCsvMalformed)
  EXPECT_EQ(csv.rows[4].line, 8u);
  EXPECT_EQ(csv.rows[5].label_id, 1);
  EXPECT_EQ(csv.rows[5].line, 9u);
  EXPECT_EQ(csv.rows[6].text, "last without newline");
  EXPECT_EQ(csv.rows[6].line, 10u);
}

// --- malformed input: one clear error naming the place ------------------------------------------

// "é" (2 bytes) repeated.
const std::string kEacute22 = [] {
  std::string s;
  for (int i = 0; i < 22; ++i) s += "\xC3\xA9";
  return s;
}();
const std::string kEacute25 = kEacute22 + "\xC3\xA9\xC3\xA9\xC3\xA9";

struct BadCsv {
  const char* name;
  std::string bytes;
  std::string message;  // expected what() after "<path>: "
};

class IntentCsvMalformed : public ::testing::TestWithParam<BadCsv> {};

TEST_P(IntentCsvMalformed, OneClearError) {
  TempDir tmp;
  const std::string path = tmp.file("bad.csv");
  write_bytes(path, GetParam().bytes);
  EXPECT_EQ(error_of<DataError>([&] { read_intent_csv(path, small_map()); }),
            path + ": " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IntentCsvMalformed,
    ::testing::Values(
        BadCsv{"unterminated_quote", "text,category\na,greet\n\"open quote,greet\nb,balance\n",
               "line 3: field 'text': unterminated quoted field: the closing quote is missing, so "
               "the field runs to the end of the file"},
        BadCsv{"quote_in_unquoted_field", "text,category\nab\"c,greet\n",
               "line 2: field 'text': malformed quoting at byte 3 of the line: a quote inside an "
               "unquoted field or text after a closing quote (RFC 4180: quote the field and "
               "double inner quotes)"},
        BadCsv{"text_after_closing_quote", "text,category\n\"ab\"c,greet\n",
               "line 2: field 'text': malformed quoting at byte 5 of the line: a quote inside an "
               "unquoted field or text after a closing quote (RFC 4180: quote the field and "
               "double inner quotes)"},
        BadCsv{"three_fields", "text,category\na,greet\nhello, world,greet\n",
               "line 3: expected 2 fields (text,category), got 3 (quote a text that has a "
               "comma)"},
        BadCsv{"one_field", "text,category\r\nno label here\r\n",
               "line 2: expected 2 fields (text,category), got 1"},
        BadCsv{"long_bad_header",  // cut at 60 bytes, backed off to a code point boundary
               std::string("text,category,x") + kEacute25 + "\n",
               "line 1: field 'header': expected exactly 'text,category', got 'text,category,x" +
                   kEacute22 + "...'"},
        BadCsv{"wrong_header", "text,label\na,greet\n",
               "line 1: field 'header': expected exactly 'text,category', got 'text,label'"},
        BadCsv{"no_header", "hello,greet\n",
               "line 1: field 'header': expected exactly 'text,category', got 'hello,greet'"},
        BadCsv{"empty_line", "text,category\na,greet\n\r\nb,greet\n",
               "line 3: empty line; every record needs 2 fields (text,category)"},
        BadCsv{"invalid_utf8", "text,category\na,greet\ncaf\xE9,greet\n",
               "line 3: invalid UTF-8 at byte 4 of the line"},
        BadCsv{"invalid_utf8_in_quoted_continuation", "text,category\n\"a\nb\xFF\",greet\n",
               "line 3: field 'text': invalid UTF-8 at byte 2 of the line"},
        BadCsv{"empty_file", "", "line 1: field 'header': file is empty; expected 'text,category'"},
        // Found by a break test (2026-12-03): an empty or blank text was converted, and an empty
        // label was reported as "label '' not in categories.json".
        BadCsv{"empty_text", "text,category\na,greet\n\"\",greet\n",
               "line 3: field 'text': empty text"},
        BadCsv{"blank_text", "text,category\na,greet\n   ,greet\n",
               "line 3: field 'text': the text is only blanks"},
        BadCsv{"empty_label_with_categories", "text,category\nhi,\n",
               "line 2: field 'category': empty label"},
        BadCsv{"label_with_blanks", "text,category\nhi,greet\nyo,greet \n",
               "line 3: field 'category': label 'greet ' has leading or trailing blanks; remove "
               "them (with them it is another label than the same name without)"},
        BadCsv{"unknown_label_after_multiline", "text,category\n\"x\ny\nz\",greet\nq,nope\n",
               "line 5: field 'category': label 'nope' not in categories.json"}),
    [](const ::testing::TestParamInfo<BadCsv>& i) { return std::string(i.param.name); });

TEST(IntentCsvMalformed, MissingFile) {
  EXPECT_EQ(error_of<DataError>([] { read_intent_csv("/nonexistent/x.csv", small_map()); }),
            "/nonexistent/x.csv: cannot open file for reading: No such file or directory");
}

// --- LabelMap ----------------------------------------------------------------------------------

TEST(LabelMap, RejectsDuplicateAndEmptyNames) {
  EXPECT_EQ(error_of<DataError>([] {
              LabelMap({"a", "b", "a"}, "cats.json");
            }),
            "cats.json: field '[2]': duplicate label 'a' (first at [0])");
  EXPECT_EQ(error_of<DataError>([] {
              LabelMap({"a", ""}, "cats.json");
            }),
            "cats.json: field '[1]': empty label name");
}

TEST(LabelMap, CategoriesJsonWrongTypes) {
  TempDir tmp;
  write_bytes(tmp.file("c1.json"), R"(["a", 3])");
  EXPECT_EQ(error_of<SchemaError>([&] { LabelMap::from_categories_json(tmp.file("c1.json")); }),
            tmp.file("c1.json") + ": field '[1]': must be a string, got integer");
  write_bytes(tmp.file("c2.json"), R"({"a": 0})");
  EXPECT_EQ(error_of<SchemaError>([&] { LabelMap::from_categories_json(tmp.file("c2.json")); }),
            tmp.file("c2.json") + ": field '(root)': must be an array, got object");
  write_bytes(tmp.file("c3.json"), "[]");
  EXPECT_EQ(error_of<DataError>([&] { LabelMap::from_categories_json(tmp.file("c3.json")); }),
            tmp.file("c3.json") + ": categories list is empty");
}

}  // namespace
}  // namespace dialtree::readers
