// Pretraining examples from real sts/1 data: one per user turn, grouped by source, view sets.
#include <gtest/gtest.h>

#include "data/wordpiece.h"
#include "sts/convert.h"
#include "test_paths.h"
#include "trainer/pretrain_data.h"

namespace dialtree::trainer {
namespace {

TEST(PretrainData, SgdAndIntentFilesGroupBySourceWithOneExamplePerUserTurn) {
  testing::TempDir tmp;
  const data::WordPieceTokenizer tok(testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  const auto sgd = sts::convert(
      sts::SourceFormat::Sgd, testing::shared_data("pretrain/sgd_train_subset/dialogues_001.json"));
  const auto hwu = sts::convert(sts::SourceFormat::IntentCsv,
                                testing::shared_data("dialoglue/hwu/train_10.csv"));
  sts::write_jsonl(tmp.file("sgd.jsonl"), sgd);
  sts::write_jsonl(tmp.file("hwu.jsonl"), hwu);
  std::size_t user_turns = 0;
  for (const auto& d : sgd) {
    for (const auto& t : d.turns) user_turns += t.role == "user";
  }
  data::SerializeOptions opt;
  opt.max_len = 64;
  const auto ds =
      load_pretrain_data({tmp.file("sgd.jsonl"), tmp.file("hwu.jsonl")}, true, tok, opt);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].name, "hwu");  // byte order of names
  EXPECT_EQ(ds[0].examples.size(), 640u);
  EXPECT_EQ(ds[1].name, "sgd");
  EXPECT_EQ(ds[1].examples.size(), user_turns);
  EXPECT_EQ(dataset_sizes(ds), (std::vector<std::size_t>{640, user_turns}));

  // hwu/train_10.csv row 0 is a single user turn: [sos_u, pieces..., eos_u], all role 1, turn 1.
  const auto& first = ds[0].examples[0];
  EXPECT_EQ(first.tokens.input_ids.front(), 13);
  EXPECT_EQ(first.tokens.input_ids.back(), 7);
  for (auto r : first.tokens.role_ids) EXPECT_EQ(r, 1);
  EXPECT_FALSE(first.views.empty_tree);
  EXPECT_EQ(first.views.sets[static_cast<int>(sts::View::I)].size(), 1u);

  // SGD examples see their context: the second user turn starts with the first user turn.
  const auto& second = ds[1].examples[1];
  EXPECT_EQ(second.tokens.turn_index, 2u);
  EXPECT_EQ(second.tokens.turn_ids.front(), 3);  // user, system, user(current)
  EXPECT_LE(second.tokens.input_ids.size(), 64u);

  // Unlabelled loading computes no view sets.
  const auto un = load_pretrain_data({tmp.file("hwu.jsonl")}, false, tok, opt);
  ASSERT_EQ(un.size(), 1u);
  EXPECT_TRUE(un[0].examples[0].views.empty_tree);
}

// The token-level tree term's slot ids (docs/training.md "A token-level tree term"): one id per
// slot name, by first appearance over the loaded records (record 0 mentions people; record 1's
// slots come in byte order, date before people), kNoSlot outside mentions, and nothing at all
// unless asked for.
TEST(PretrainData, SpanSlotsGiveEachSlotNameOneIdAcrossRecords) {
  testing::TempDir tmp;
  const data::WordPieceTokenizer tok(testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  // Record 1: "We will require and outside table to seat 9 people on August 23rd", people=[42,50)
  // and date=[54,65).
  const auto r8k = sts::convert(sts::SourceFormat::SlotJson,
                                testing::shared_data("dialoglue/restaurant8k/train.json"));
  sts::write_jsonl(tmp.file("r8k.jsonl"), {r8k.begin(), r8k.begin() + 3});
  EXPECT_TRUE(
      load_pretrain_data({tmp.file("r8k.jsonl")}, true, tok, {})[0].examples[0].span_slots.empty());
  const auto ds = load_pretrain_data({tmp.file("r8k.jsonl")}, true, tok, {}, nullptr, true);
  ASSERT_EQ(ds.size(), 1u);
  ASSERT_GE(ds[0].examples.size(), 2u);
  const auto slotted = [&](const PretrainExample& ex) {
    EXPECT_EQ(ex.span_slots.size(), ex.tokens.input_ids.size());
    std::string out;
    for (std::size_t i = 0; i < ex.span_slots.size(); ++i) {
      EXPECT_EQ(ex.span_slots[i] != kNoSlot, ex.span_flags[i] != 0) << "token " << i;
      if (ex.span_slots[i] != kNoSlot) {
        out +=
            tok.id_to_token(ex.tokens.input_ids[i]) + ":" + std::to_string(ex.span_slots[i]) + " ";
      }
    }
    return out;
  };
  EXPECT_EQ(slotted(ds[0].examples[0]), "5:0 adults:0 and:0 1:0 child:0 ");
  EXPECT_EQ(slotted(ds[0].examples[1]), "9:0 people:0 august:1 23rd:1 ");
}

}  // namespace
}  // namespace dialtree::trainer

namespace dialtree::trainer {
namespace {

TEST(PretrainData, EmptyTurnsAndDialogsAreLeftOutAndCounted) {
  // docs/failure-cases.md B13: they were dropped without a word.
  testing::TempDir tmp;
  const data::WordPieceTokenizer tok(testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  auto turn = [](const std::string& text) { return sts::Turn{"user", text, std::nullopt, {}}; };
  sts::write_jsonl(tmp.file("mixed.jsonl"),
                   {sts::Dialog{"a", "x", {turn("i lost my card")}},
                    sts::Dialog{"b", "x", {turn(""), turn("where is my money"), turn("")}},
                    sts::Dialog{"c", "x", {turn("")}}, sts::Dialog{"d", "x", {}}});
  PretrainDataSkips skipped;
  const auto ds = load_pretrain_data({tmp.file("mixed.jsonl")}, false, tok, {}, &skipped);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].examples.size(), 2u);  // one per kept user turn
  EXPECT_EQ(skipped.turns, 3u);
  EXPECT_EQ(skipped.dialogs, 2u);  // "c" (its only turn empty) and "d" (no turn)
}

TEST(PretrainData, SpanFlagsMarkLabelledValueTokens) {
  testing::TempDir tmp;
  const data::WordPieceTokenizer tok(testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  // restaurant8k train record 0: "There will be 5 adults and 1 child." people=[14,34)
  const auto r8k = sts::convert(sts::SourceFormat::SlotJson,
                                testing::shared_data("dialoglue/restaurant8k/train.json"));
  sts::write_jsonl(tmp.file("r8k.jsonl"), {r8k.begin(), r8k.begin() + 3});
  const auto ds = load_pretrain_data({tmp.file("r8k.jsonl")}, true, tok, {});
  ASSERT_EQ(ds.size(), 1u);
  const auto& ex = ds[0].examples[0];
  ASSERT_EQ(ex.span_flags.size(), ex.tokens.input_ids.size());
  // [sos_u] there will be | 5 adults and 1 child | . [eos_u]
  std::string flagged;
  for (std::size_t i = 0; i < ex.span_flags.size(); ++i) {
    if (ex.span_flags[i]) flagged += tok.id_to_token(ex.tokens.input_ids[i]) + " ";
  }
  EXPECT_EQ(flagged, "5 adults and 1 child ");
}

}  // namespace
}  // namespace dialtree::trainer
