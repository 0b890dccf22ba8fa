// Worked examples of DialoGLUE's gold-label rules (docs/dialoglue.md §4 steps 1-6, §5) and
// docs/failure-cases.md C09. Expected values were derived by hand from the rules and, where BERT
// pieces are involved, checked against a Python re-statement of the BERT-uncased tokenizer.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "data/bert_tokenizer.h"
#include "data/dialoglue_labels.h"
#include "data/wordpiece.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using dialtree::testing::bert;

using Strings = std::vector<std::string>;

// tests/fixtures/data/tiny_wordpiece_vocab.txt: [PAD] [UNK] [CLS] [SEP] [MASK] fly to new yo
// ##rk city tomorrow user, so "york" splits into "yo" "##rk".
const WordPieceTokenizer& tiny() {
  static const auto* tok = [] {
    WordPieceOptions opts;
    opts.special = SpecialTokens{0, 1, 2, 3, 4, 0, 0, 0, 0};
    return new WordPieceTokenizer(dialtree::testing::fixture("data/tiny_wordpiece_vocab.txt"),
                                  opts);
  }();
  return *tok;
}

readers::SlotExample slot_example(std::string text, std::vector<readers::SlotSpan> labels,
                                  Strings requested = {}) {
  readers::SlotExample ex;
  ex.text = std::move(text);
  ex.labels = std::move(labels);
  ex.requested_slots = std::move(requested);
  return ex;
}

TEST(SplitPythonWhitespace, MatchesStrSplit) {
  EXPECT_EQ(split_python_whitespace("  a  b\tc\n"), (Strings{"a", "b", "c"}));
  // NBSP, U+2028 and U+3000 are whitespace for str.split(); U+200B (Cf) is not.
  EXPECT_EQ(split_python_whitespace("7\u00a0pm\u2028x\u3000y\u200bz"),
            (Strings{"7", "pm", "x", "y\u200bz"}));
  EXPECT_TRUE(split_python_whitespace(" \t ").empty());
  EXPECT_THROW(split_python_whitespace("a\xff"), std::invalid_argument);
}

// docs/failure-cases.md C09: a multi-word value is B- I- I-, never three B-.
TEST(SlotWordTags, MultiWordValueC09) {
  const auto ex = slot_example("fly to new york city tomorrow", {{"city", 7, 20}});
  const WordTags wt = slot_word_tags(ex);
  EXPECT_EQ(wt.words, (Strings{"fly", "to", "new", "york", "city", "tomorrow"}));
  EXPECT_EQ(wt.tags, (Strings{"O", "O", "B-city", "I-city", "I-city", "O"}));
}

// C09, pieces: "york" -> "yo" "##rk"; the later piece of an I- word stays I-city.
TEST(ExpandToPieces, LaterPiecesGetInsideTagC09) {
  const auto ex = slot_example("fly to new york city tomorrow", {{"city", 7, 20}});
  const WordTags wt = slot_word_tags(ex);
  const TagSet vocab{"O", "B-city", "I-city"};
  const PieceTags pt = expand_to_pieces(wt.words, wt.tags, tiny(), vocab);
  EXPECT_EQ(pt.ids, (std::vector<std::int32_t>{5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(pt.tags, (Strings{"O", "O", "B-city", "I-city", "I-city", "I-city", "O"}));
  EXPECT_EQ(slot_gold_spans(ex, tiny(), vocab), (Strings{"city:2-6"}));
  // Same sentence with the BERT vocab: york is one piece.
  EXPECT_EQ(slot_gold_spans(ex, bert(), vocab), (Strings{"city:2-5"}));

  // When the split word is the first of the value, its later piece turns B- into I-...
  const auto york_first = slot_example("fly to new york city tomorrow", {{"city", 11, 20}});
  const WordTags yf = slot_word_tags(york_first);
  EXPECT_EQ(expand_to_pieces(yf.words, yf.tags, tiny(), vocab).tags,
            (Strings{"O", "O", "O", "B-city", "I-city", "I-city", "O"}));
  // ...unless the I- form is missing from the task vocab: then the piece repeats the tag.
  EXPECT_EQ(expand_to_pieces(yf.words, yf.tags, tiny(), TagSet{"O", "B-city"}).tags,
            (Strings{"O", "O", "O", "B-city", "B-city", "I-city", "O"}));
}

TEST(SlotWordTags, LaterLabelsOverwriteEarlierOnes) {
  // "two" is first labelled people, then time: the dict keeps time for every "two".
  const auto ex = slot_example("table for two two", {{"people", 10, 13}, {"time", 14, 17}});
  EXPECT_EQ(slot_word_tags(ex).tags, (Strings{"O", "O", "B-time", "I-time"}));
}

TEST(SlotWordTags, RequestedSlotsArePrefixedInReverseOrder) {
  const auto ex = slot_example("7pm", {{"time", 0, 3}}, {"date", "time"});
  const WordTags wt = slot_word_tags(ex);
  EXPECT_EQ(wt.words, (Strings{"time", "date", "7pm"}));
  EXPECT_EQ(wt.tags, (Strings{"O", "O", "B-time"}));
  const TagSet vocab{"O", "B-time", "I-time"};
  // BERT pieces: time date 7 ##pm.
  EXPECT_EQ(slot_gold_spans(ex, bert(), vocab), (Strings{"time:2-4"}));
}

TEST(SlotWordTags, EveryExactOccurrenceIsLabelled) {
  // The prefixed slot name "people" equals a span word, so it is labelled too.
  const auto ex = slot_example("4 people", {{"people", 0, 8}}, {"people"});
  EXPECT_EQ(slot_word_tags(ex).tags, (Strings{"B-people", "I-people", "I-people"}));
  // "Sacramento." is not the span word "Sacramento"; the second occurrence is labelled.
  const auto city = slot_example("I live in Sacramento. Sacramento is nice", {{"city", 10, 20}});
  EXPECT_EQ(slot_word_tags(city).tags, (Strings{"O", "O", "O", "O", "B-city", "O", "O"}));
}

TEST(SlotWordTags, OffsetsAreCodePoints) {
  // "café" is 4 code points but 5 bytes: [8,11) is "5pm".
  const auto ex = slot_example("café at 5pm", {{"time", 8, 11}});
  EXPECT_EQ(slot_word_tags(ex).tags, (Strings{"O", "O", "B-time"}));
  // A span word split on NBSP gives two dict words.
  const auto nbsp = slot_example("at 7\u00a0pm", {{"time", 3, 7}});
  EXPECT_EQ(slot_word_tags(nbsp).tags, (Strings{"O", "B-time", "I-time"}));
}

TEST(ContinuationTag, UsesInsideFormOnlyIfKnown) {
  const TagSet vocab{"O", "B-a", "I-a", "B-b"};
  EXPECT_EQ(continuation_tag("B-a", vocab), "I-a");
  EXPECT_EQ(continuation_tag("I-a", vocab), "I-a");
  EXPECT_EQ(continuation_tag("B-b", vocab), "B-b");
  EXPECT_EQ(continuation_tag("O", vocab), "O");
}

TEST(ExpandToPieces, UnkCountsAsOnePieceAndEmptyWordsVanish) {
  const TagSet vocab{"O", "B-a", "I-a", "B-b"};
  const PieceTags pt = expand_to_pieces({"unaffable", "x", "你好", std::string(101, 'z'), "\x01"},
                                        {"B-a", "O", "B-b", "I-a", "B-b"}, bert(), vocab);
  EXPECT_EQ(pt.ids, (std::vector<std::int32_t>{14477, 20961, 3468, 1060, 100, 100, 100}));
  EXPECT_EQ(pt.tags, (Strings{"B-a", "I-a", "I-a", "O", "B-b", "B-b", "I-a"}));
  EXPECT_THROW(expand_to_pieces({"a"}, {}, bert(), vocab), std::invalid_argument);
}

TEST(EvalFilter, DropsSpecialTokensAndTheWordUser) {
  const auto& tok = bert();
  for (std::int32_t id : {0, 100, 101, 102, 103, 5310})
    EXPECT_TRUE(eval_drops_token(tok, id)) << id;
  // "users", "##user" (decodes to "##user") and ordinary words stay.
  for (std::int32_t id : {5198, 20330, 7592, 1}) EXPECT_FALSE(eval_drops_token(tok, id)) << id;
  EXPECT_THROW(eval_drops_token(tok, 30522), TokenizerError);

  // [CLS] user hello [UNK] world [SEP]: the [UNK] inside the value is dropped, so the span
  // indices count only kept positions.
  const std::vector<std::int32_t> ids{101, 5310, 7592, 100, 2088, 102};
  const Strings tags{"[PAD]", "B-x", "B-a", "I-a", "I-a", "[PAD]"};
  const Strings kept = eval_tag_sequence(ids, tags, tok);
  EXPECT_EQ(kept, (Strings{"B-a", "I-a"}));
  EXPECT_EQ(extract_slot_spans(kept), (Strings{"a:0-2"}));
  EXPECT_THROW(eval_tag_sequence(ids, {"O"}, tok), std::invalid_argument);
}

TEST(TagSpans, TheTypedFormOfTheSameRule) {
  EXPECT_EQ(tag_spans({"O", "B-time", "I-time", "I-date", "B-date"}),
            (std::vector<TagSpan>{{"time", 1, 3}, {"date", 4, 5}}));
  EXPECT_TRUE(tag_spans({"I-time", "O"}).empty());  // an I- that opens nothing
}

TEST(ExtractSlotSpans, WorkedExamples) {
  EXPECT_TRUE(extract_slot_spans({}).empty());
  EXPECT_TRUE(extract_slot_spans({"O", "O"}).empty());
  EXPECT_EQ(extract_slot_spans({"O", "B-a", "I-a", "O"}), (Strings{"a:1-3"}));
  // The end of the list closes the open span.
  EXPECT_EQ(extract_slot_spans({"O", "B-a", "I-a"}), (Strings{"a:1-3"}));
  // B- always closes and reopens.
  EXPECT_EQ(extract_slot_spans({"B-a", "B-a", "B-b"}), (Strings{"a:0-1", "a:1-2", "b:2-3"}));
  // I- of another slot closes the open span and opens nothing; a later I-a does not reopen.
  EXPECT_EQ(extract_slot_spans({"B-a", "I-a", "I-b", "I-a", "O"}), (Strings{"a:0-2"}));
  // I- with no open span opens nothing.
  EXPECT_EQ(extract_slot_spans({"I-a", "I-a", "B-b"}), (Strings{"b:2-3"}));
  // [PAD] closes like O.
  EXPECT_EQ(extract_slot_spans({"B-a", "[PAD]", "I-a"}), (Strings{"a:0-1"}));
  // Slot names compare exactly: I-leaving_date does not continue date.
  EXPECT_EQ(extract_slot_spans({"B-date", "I-leaving_date", "B-leaving_date", "I-leaving_date"}),
            (Strings{"date:0-1", "leaving_date:2-4"}));
}

TEST(TopGold, BareColonWordsYieldNothing) {
  readers::TopExample ex;
  ex.words = {"what", ":", "time", "unaffable"};
  ex.tags = {"O", "I-SL_X", "B-SL_X", "B-SL_Y"};
  ex.intent = "IN_GET_X";
  const TagSet vocab{"O", "B-SL_X", "I-SL_X", "B-SL_Y"};
  const TopGold g = top_gold(ex, bert(), vocab);
  EXPECT_EQ(g.intent, "IN_GET_X");
  // una ##ffa ##ble: I-SL_Y is not a known tag, so the later pieces repeat B-SL_Y.
  EXPECT_EQ(g.tags, (Strings{"O", "B-SL_X", "B-SL_Y", "B-SL_Y", "B-SL_Y"}));
  ex.tags[3] = "I-SL_X";
  EXPECT_EQ(top_gold(ex, bert(), vocab).tags,
            (Strings{"O", "B-SL_X", "I-SL_X", "I-SL_X", "I-SL_X"}));
}

}  // namespace
}  // namespace dialtree::data
