// data/word_input.h: words with their code-point offsets, each word tokenised alone, and the
// hidden-state row of each word's first sub-word after every cut (worked examples on a
// six-word WordPiece vocabulary).
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/serialize.h"
#include "data/wordpiece.h"
#include "data/word_input.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using Rows = std::vector<std::int64_t>;

// tests/fixtures/data/tiny_wordpiece_vocab.txt: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 fly=5
// to=6 new=7 yo=8 ##rk=9 city=10 tomorrow=11 user=12; markers 13-16 (outside the vocabulary
// is fine for serialisation).
const WordPieceTokenizer& tiny_words() {
  static const auto* tok = [] {
    WordPieceOptions opts;
    opts.special = SpecialTokens{0, 1, 2, 3, 4, 13, 14, 15, 16};
    return new WordPieceTokenizer(dialtree::testing::fixture("data/tiny_wordpiece_vocab.txt"),
                                  opts);
  }();
  return *tok;
}

TEST(SplitWords, CodePointOffsetsAsPythonSlices) {
  const auto w = split_words("  fly\u00a0to  new york");
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].text, "fly");
  EXPECT_EQ(w[0].start, 2u);
  EXPECT_EQ(w[0].stop, 5u);
  EXPECT_EQ(w[1].text, "to");  // NBSP is one code point (two bytes)
  EXPECT_EQ(w[1].start, 6u);
  EXPECT_EQ(w[1].stop, 8u);
  EXPECT_EQ(w[3].text, "york");
  EXPECT_EQ(w[3].start, 14u);
  EXPECT_EQ(w[3].stop, 18u);
  const auto accents = split_words("caf\u00e9\tx");
  EXPECT_EQ(accents[0].stop, 4u);
  EXPECT_EQ(accents[1].start, 5u);
  EXPECT_TRUE(split_words(" \n ").empty());
  EXPECT_THROW(split_words("a\xff"), std::invalid_argument);
}

TEST(WordPieces, EachWordAloneAndTheRightCut) {
  WordPieces p = encode_word_pieces({"fly", "york", "zzz", ""}, tiny_words());
  EXPECT_EQ(p.ids, (std::vector<std::int32_t>{5, 8, 9, 1}));
  EXPECT_EQ(p.first, (Rows{0, 1, 3, -1}));
  keep_first_pieces(p, 2);  // "york" keeps "yo"; "zzz" loses its only piece
  EXPECT_EQ(p.ids, (std::vector<std::int32_t>{5, 8}));
  EXPECT_EQ(p.first, (Rows{0, 1, -1, -1}));
}

TEST(FirstPieceRows, AfterTheLeftCutAndBehindContext) {
  const std::vector<std::string> words = {"fly", "york", "zzz", ""};
  SerializeOptions so;
  so.max_utt_len = 3;  // keeps "yo ##rk [UNK]": "fly" is cut
  const TaggedInput one = encode_words(words, tiny_words(), so);
  EXPECT_EQ(one.input.input_ids, (std::vector<std::int32_t>{13, 8, 9, 1, 14}));
  // Rows with [CLS] prepended: [CLS]=0 [sos]=1 yo=2 ##rk=3 [UNK]=4.
  EXPECT_EQ(one.first_row, (Rows{-1, 2, 4, -1}));

  const WordPieces pieces = encode_word_pieces(words, tiny_words());
  const SerializedExample dialog = serialize_context(
      {Utterance{"system", {5, 6}}, Utterance{"user", pieces.ids}}, tiny_words().special(), {});
  // [CLS] [sos_r] fly to [eos_r] [sos_u] fly yo ##rk [UNK] [eos_u]
  EXPECT_EQ(first_piece_rows(dialog, pieces), (Rows{6, 7, 9, -1}));

  const SerializedExample other = serialize_context({Utterance{"user", {5, 6}}}, tiny_words().special(), {});
  EXPECT_THROW(first_piece_rows(other, pieces), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::data
