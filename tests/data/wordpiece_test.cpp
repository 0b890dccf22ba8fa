// WordPiece (BERT uncased) known answers on the real bert-base-uncased vocabulary. Expected
// pieces and ids were cross-checked by hand against a Python re-statement of Hugging Face's
// BasicTokenizer + WordpieceTokenizer rules (unicodedata, Python 3.11).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "data/bert_tokenizer.h"
#include "data/wordpiece.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using dialtree::testing::bert;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Pieces = std::vector<std::string>;

TEST(WordPiece, LoadsBertVocab) {
  const auto& tok = bert();
  EXPECT_EQ(tok.vocab_size(), 30522);
  EXPECT_EQ(tok.token_to_id("[PAD]"), 0);
  EXPECT_EQ(tok.token_to_id("[UNK]"), 100);
  EXPECT_EQ(tok.token_to_id("[CLS]"), 101);
  EXPECT_EQ(tok.token_to_id("[SEP]"), 102);
  EXPECT_EQ(tok.token_to_id("[MASK]"), 103);
  EXPECT_EQ(tok.token_to_id("user"), 5310);
  EXPECT_EQ(tok.token_to_id("no-such-token"), -1);
  EXPECT_EQ(tok.id_to_token(7592), "hello");
  EXPECT_EQ(tok.type(), "wordpiece");
  EXPECT_EQ(tok.special().cls, 101);
}

TEST(WordPiece, GreedyLongestMatchWithContinuations) {
  const auto& tok = bert();
  // With this vocab the longest first match is "una" (not "un" as in BERT's README example).
  EXPECT_EQ(tok.tokenize("unaffable"), (Pieces{"una", "##ffa", "##ble"}));
  EXPECT_EQ(tok.encode("unaffable"), (std::vector<std::int32_t>{14477, 20961, 3468}));
  EXPECT_EQ(tok.tokenize("usercomponents"), (Pieces{"user", "##com", "##pone", "##nts"}));
  EXPECT_EQ(tok.wordpiece("ßtraße"), (Pieces{"ß", "##tra", "##ße"}));
  // A piece in the middle that matches nothing turns the whole word into [UNK].
  EXPECT_EQ(tok.wordpiece("ｆｕｌｌ"), (Pieces{"[UNK]"}));
  EXPECT_TRUE(tok.wordpiece("").empty());
}

TEST(WordPiece, LowerCasesAndStripsAccents) {
  const auto& tok = bert();
  EXPECT_EQ(tok.tokenize("Héllo"), (Pieces{"hello"}));
  EXPECT_EQ(tok.tokenize("naïve CAFÉ"), (Pieces{"naive", "cafe"}));
  // U+0130 lower-cases to "i" + U+0307, and the combining dot is then stripped.
  EXPECT_EQ(tok.tokenize("İstanbul"), (Pieces{"istanbul"}));
  // Python's str.lower() applies Final_Sigma: word-final capital sigma becomes U+03C2.
  EXPECT_EQ(tok.tokenize("ΟΔΟΣ. σΣ"), (Pieces{"ο", "##δ", "##ος", ".", "σ", "##ς"}));
}

TEST(WordPiece, SplitsPunctuation) {
  const auto& tok = bert();
  EXPECT_EQ(tok.tokenize("Hello,world!!"), (Pieces{"hello", ",", "world", "!", "!"}));
  EXPECT_EQ(tok.tokenize("don't"), (Pieces{"don", "'", "t"}));
  EXPECT_EQ(tok.tokenize("co-operate"), (Pieces{"co", "-", "operate"}));
  // ASCII symbols count as punctuation even where Unicode says Sm/Sc.
  EXPECT_EQ(tok.basic_tokenize("a$b+c"), (Pieces{"a", "$", "b", "+", "c"}));
  // Special-token look-alikes are not protected: encode() adds no special tokens.
  EXPECT_EQ(tok.tokenize("[CLS] hi"), (Pieces{"[", "cl", "##s", "]", "hi"}));
}

TEST(WordPiece, IsolatesCjkIdeographsOnly) {
  const auto& tok = bert();
  EXPECT_EQ(tok.basic_tokenize("I'm going to 北京 today"),
            (Pieces{"i", "'", "m", "going", "to", "北", "京", "today"}));
  EXPECT_EQ(tok.tokenize("你好世界"), (Pieces{"[UNK]", "[UNK]", "世", "[UNK]"}));
  // Hiragana is not in the CJK ideograph ranges: one word, split by WordPiece.
  EXPECT_EQ(tok.tokenize("こんにちは"), (Pieces{"こ", "##ん", "##に", "##ち", "##は"}));
}

TEST(WordPiece, CleansControlCharactersAndWhitespace) {
  const auto& tok = bert();
  // \x01, DEL, U+200B (Cf) are dropped (joining their neighbours); U+FFFD is dropped.
  EXPECT_EQ(tok.tokenize("a\x01"
                         "b\x7f"
                         "c\u200b"
                         "d e\ufffd"
                         "f"),
            (Pieces{"abc", "##d", "e", "##f"}));
  EXPECT_EQ(tok.tokenize(std::string("no\0w", 4)), (Pieces{"now"}));
  // \t, NBSP (Zs) and U+2028 (split by Python's str.split) separate words.
  EXPECT_EQ(tok.tokenize("tab\tsep"), (Pieces{"tab", "sep"}));
  EXPECT_EQ(tok.tokenize("one\u2028two\u00a0three"), (Pieces{"one", "two", "three"}));
  EXPECT_TRUE(tok.tokenize(" \t\r\n ").empty());
  EXPECT_TRUE(tok.tokenize("").empty());
}

TEST(WordPiece, LongWordsBecomeUnk) {
  const auto& tok = bert();
  const std::string a100(100, 'a'), a101(101, 'a');
  EXPECT_EQ(tok.tokenize(a101), (Pieces{"[UNK]"}));
  const Pieces p100 = tok.tokenize(a100);
  ASSERT_EQ(p100.size(), 50u);  // aaa ##aa x48 ##a
  EXPECT_EQ(p100.front(), "aaa");
  EXPECT_EQ(p100.back(), "##a");
  // The limit counts code points, not bytes: 60 two-byte letters are still tokenised.
  std::string e60;
  for (int i = 0; i < 60; ++i) e60 += "\u00e9";
  EXPECT_NE(tok.tokenize(e60), (Pieces{"[UNK]"}));
}

TEST(WordPiece, RejectsInvalidUtf8) {
  EXPECT_THROW(bert().encode("ab\xff"), TokenizerError);
  EXPECT_THROW(bert().tokenize("\xc3"), TokenizerError);
}

TEST(WordPiece, DecodeJoinsContinuations) {
  const auto& tok = bert();
  EXPECT_EQ(tok.decode(tok.encode("unaffable")), "unaffable");
  EXPECT_EQ(tok.decode(tok.encode("Hello, WORLD!")), "hello , world !");
  EXPECT_EQ(tok.decode({101, 7592, 102}), "[CLS] hello [SEP]");
  EXPECT_EQ(tok.decode({}), "");
  // Round trip: decode(encode(x)) re-encodes to the same ids.
  for (const char* text : {"I'd like a table for 4 at 7:30pm, please.", "Crème brûlée x2",
                           "book 北京 tickets", "unaffable usercomponents"}) {
    const auto ids = tok.encode(text);
    EXPECT_EQ(tok.encode(tok.decode(ids)), ids) << text;
  }
}

TEST(WordPiece, DecodeRejectsOutOfRangeIds) {
  try {
    bert().decode({7592, 30522});
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("30522"));
  }
  EXPECT_THROW(bert().decode({-1}), TokenizerError);
  EXPECT_THROW(bert().id_to_token(30522), TokenizerError);
}

// docs/failure-cases.md C14: a bad id inside a batch is a catchable error naming the row and the
// id.
TEST(WordPiece, DecodeBatchNamesRowAndIdC14) {
  const auto& tok = bert();
  EXPECT_THAT(tok.decode_batch({{7592}, {2088, 999}}), ElementsAre("hello", "world !"));
  std::string message;
  bool threw = false;
  // On a worker thread: an exception escaping there would call std::terminate.
  std::thread worker([&] {
    try {
      tok.decode_batch({{2, 4}, {1, 30522}});
    } catch (const TokenizerError& e) {
      threw = true;
      message = e.what();
    }
  });
  worker.join();
  EXPECT_TRUE(threw);
  EXPECT_THAT(message, HasSubstr("row 1"));
  EXPECT_THAT(message, HasSubstr("30522"));
  EXPECT_THROW(tok.decode_batch({{2, 4}, {1, 30522}}), TokenizerError);
}

TEST(WordPiece, TinyVocabSplitsYork) {
  WordPieceOptions opts;
  opts.special = SpecialTokens{0, 1, 2, 3, 4, 0, 0, 0, 0};
  WordPieceTokenizer tok(dialtree::testing::fixture("data/tiny_wordpiece_vocab.txt"), opts);
  EXPECT_EQ(tok.vocab_size(), 13);
  EXPECT_EQ(tok.tokenize("fly to New York city tomorrow"),
            (Pieces{"fly", "to", "new", "yo", "##rk", "city", "tomorrow"}));
  EXPECT_EQ(tok.tokenize("boston"), (Pieces{"[UNK]"}));
  EXPECT_EQ(tok.decode(tok.encode("new york")), "new york");
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// The input bytes of each piece, as text.substr(begin, end - begin).
std::vector<std::string> spelled(const Tokenizer& tok, const std::string& text) {
  std::vector<std::string> out;
  const auto spans = tok.encode_with_offsets(text);
  std::vector<std::int32_t> ids;
  for (const TokenSpan& t : spans) {
    EXPECT_LE(t.begin, t.end);
    EXPECT_LE(t.end, text.size());
    out.push_back(text.substr(t.begin, t.end - t.begin));
    ids.push_back(t.id);
  }
  EXPECT_EQ(ids, tok.encode(text)) << text;  // the same segmentation as encode()
  return out;
}

TEST(WordPiece, OffsetsPointAtTheOriginalSpelling) {
  const auto& tok = bert();
  EXPECT_EQ(spelled(tok, "Héllo, WORLD!"), (Pieces{"Héllo", ",", "WORLD", "!"}));
  EXPECT_EQ(spelled(tok, "  unaffable\tcard"), (Pieces{"una", "ffa", "ble", "card"}));
  EXPECT_EQ(spelled(tok, "İstanbul naïve"), (Pieces{"İstanbul", "naïve"}));
  EXPECT_EQ(spelled(tok, "我爱ab"), (Pieces{"我", "爱", "ab"}));
  EXPECT_EQ(spelled(tok, "ｆｕｌｌ x"), (Pieces{"ｆｕｌｌ", "x"}));  // [UNK] covers its word
  // A control character inside a word is dropped, and covered.
  EXPECT_EQ(spelled(tok,
                    "a\x01"
                    "b"),
            (Pieces{"a\x01"
                    "b"}));
  const auto spans = tok.encode_with_offsets("Héllo");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].id, tok.token_to_id("hello"));
  EXPECT_EQ(spans[0].begin, 0u);
  EXPECT_EQ(spans[0].end, 6u);  // é is two bytes
  EXPECT_TRUE(tok.encode_with_offsets("").empty());
  EXPECT_THROW(tok.encode_with_offsets("caf\xC3"), TokenizerError);
}

TEST(WordPiece, OffsetsAgreeWithEncodeOnRealUtterances) {
  const auto& tok = bert();
  std::ifstream in(dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
  std::size_t n = 0;
  for (std::string line; std::getline(in, line) && n < 3000; ++n) {
    const auto spans = tok.encode_with_offsets(line);
    std::vector<std::int32_t> ids;
    for (const TokenSpan& t : spans) {
      ids.push_back(t.id);
      ASSERT_LT(t.begin, t.end) << line;
      // An ASCII piece is its own spelling, lower-cased.
      const std::string piece = tok.id_to_token(t.id);
      const std::string bare = piece.rfind("##", 0) == 0 ? piece.substr(2) : piece;
      std::string src = line.substr(t.begin, t.end - t.begin);
      std::transform(src.begin(), src.end(), src.begin(), ::tolower);
      const bool ascii =
          std::all_of(src.begin(), src.end(), [](char c) { return (c & 0x80) == 0; });
      if (ascii && piece != "[UNK]") {
        ASSERT_EQ(src, bare) << line;
      }
    }
    ASSERT_EQ(ids, tok.encode(line)) << line;
  }
  EXPECT_EQ(n, 3000u);
}

TEST(WordPiece, VocabFileErrors) {
  dialtree::testing::TempDir dir;
  EXPECT_THROW(WordPieceTokenizer(dir.file("missing.txt")), TokenizerError);
  write_file(dir.file("empty.txt"), "");
  EXPECT_THROW(WordPieceTokenizer(dir.file("empty.txt")), TokenizerError);
  write_file(dir.file("dup.txt"), "[UNK]\nab\nab\n");
  try {
    WordPieceTokenizer tok(dir.file("dup.txt"));
    FAIL() << "no exception";
  } catch (const TokenizerError& e) {
    EXPECT_THAT(e.what(), HasSubstr("line 3"));
    EXPECT_THAT(e.what(), HasSubstr("duplicate"));
  }
  write_file(dir.file("nounk.txt"), "a\nb\n");
  EXPECT_THROW(WordPieceTokenizer(dir.file("nounk.txt")), TokenizerError);
  // CRLF line ends are accepted; ids are 0-based line numbers.
  write_file(dir.file("crlf.txt"), "[UNK]\r\nab\r\n##c\r\n");
  WordPieceTokenizer crlf(dir.file("crlf.txt"));
  EXPECT_EQ(crlf.token_to_id("##c"), 2);
  EXPECT_EQ(crlf.tokenize("abc"), (Pieces{"ab", "##c"}));
}

}  // namespace
}  // namespace dialtree::data
