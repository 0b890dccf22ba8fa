// Plain text reader: the real DialoGLUE MLM corpus, BOM, blank lines, invalid UTF-8.
#include "readers/text.h"

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

TEST(TextReal, MlmCorpusLinesAndBlankLines) {
  TextLoadReport report;
  std::vector<TextLine> v =
      read_text_lines(shared_data("dialoglue/mlm_all_no_multiwoz.txt"), &report);
  // 76133 physical lines; 9 are empty (BANKING texts with embedded newlines).
  EXPECT_EQ(v.size() + report.blank_lines, 76133u);
  EXPECT_EQ(report.blank_lines, 9u);
  EXPECT_EQ(v.size(), 76124u);
  EXPECT_EQ(v.front().text, "I am still waiting on my card?");
  EXPECT_EQ(v.front().line, 1u);
  EXPECT_EQ(v.back().text, "What 's the traffic from Flint to Detroit");
  EXPECT_EQ(v.back().line, 76133u);
  // Physical line 1111 is blank, so the line after it keeps its own number.
  for (const TextLine& l : v) ASSERT_NE(l.line, 1111u);
}

TEST(TextFixture, BomCrlfBlankLinesAndSpacesKept) {
  TempDir tmp;
  const std::string path = tmp.file("t.txt");
  write_bytes(path, "\xEF\xBB\xBFhello\r\n\r\n  \n  indented \nlast");
  TextLoadReport report;
  std::vector<TextLine> v = read_text_lines(path, &report);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].text, "hello");
  EXPECT_EQ(v[0].line, 1u);
  EXPECT_EQ(v[1].text, "  indented ");
  EXPECT_EQ(v[1].line, 4u);
  EXPECT_EQ(v[2].text, "last");
  EXPECT_EQ(v[2].line, 5u);
  EXPECT_EQ(report.blank_lines, 2u);
  EXPECT_NO_THROW(read_text_lines(path));  // report is optional
}

TEST(TextFixture, InvalidUtf8AndMissingFile) {
  TempDir tmp;
  const std::string path = tmp.file("t.txt");
  write_bytes(path, "ok\nalso ok\nbad \xC0\xAF here\n");
  EXPECT_EQ(error_of<DataError>([&] { read_text_lines(path); }),
            path + ": line 3: invalid UTF-8 at byte 5 of the line");
  EXPECT_EQ(error_of<DataError>([] { read_text_lines("/nonexistent/t.txt"); }),
            "/nonexistent/t.txt: cannot open file for reading: No such file or directory");
  write_bytes(path, "");
  EXPECT_TRUE(read_text_lines(path).empty());
}

}  // namespace
}  // namespace dialtree::readers
