// SPACE-2 MLM masking (docs/method.md §4.2): BERT 80/10/10 statistics, value-span masking,
// determinism, and the span-flag helpers on the real BERT vocabulary and a SentencePiece model.
#include "data/masking.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/utf8.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/serialize.h"
#include "data/wordpiece.h"
#include "test_paths.h"

namespace dialtree::data {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr std::int32_t kBertVocab = 30522;

bool is_marker(std::int32_t id, const SpecialTokens& s) {
  return id == s.sos_u || id == s.eos_u || id == s.sos_r || id == s.eos_r;
}

std::vector<std::int32_t> range_ids(std::int32_t first, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = first + static_cast<std::int32_t>(i);
  return v;
}

/// Positions of `m`'s MLM targets, in order.
std::vector<std::int32_t> target_positions(const MaskedTokens& m) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < m.labels.size(); ++i) {
    if (m.labels[i] != kMlmIgnoreLabel) out.push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

/// The first 4,000 non-empty lines of DialoGLUE's unlabelled MLM corpus.
std::vector<std::string> corpus_lines() {
  std::vector<std::string> lines;
  std::ifstream in(dialtree::testing::shared_data("dialoglue/mlm_all_no_multiwoz.txt"));
  for (std::string line; std::getline(in, line) && lines.size() < 4000;) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

/// Trains a 600-piece SentencePiece model on `lines` in `dir`; returns its model path.
std::string train_small_sentencepiece(const dialtree::testing::TempDir& dir,
                                      const std::vector<std::string>& lines) {
  {
    std::ofstream out(dir.file("corpus.txt"));
    for (const std::string& l : lines) out << l << '\n';
  }
  SentencePieceTrainOptions o;
  o.inputs = {dir.file("corpus.txt")};
  o.out_dir = dir.file("spm");
  o.vocab_size = 600;
  o.character_coverage = 1.0;
  return train_sentencepiece(o).model_path;
}

/// user (40 tokens) / system (30) / user (45), ids well away from the special ids.
std::vector<Utterance> three_turns() {
  return {{"user", range_ids(2000, 40)},
          {"system", range_ids(3000, 30)},
          {"user", range_ids(4000, 45)}};
}

TEST(MlmMasking, BertStatisticsAndMarkersNeverChosen) {
  const SpecialTokens special;
  const SerializedExample ex = serialize_context(three_turns(), special);
  ASSERT_EQ(ex.input_ids.size(), 40u + 30u + 45u + 6u);
  std::mt19937_64 rng(1234);
  std::size_t eligible = 0, chosen = 0, to_mask = 0, to_random = 0, unchanged = 0;
  const int draws = 3000;
  for (int d = 0; d < draws; ++d) {
    const MaskedTokens m = mask_for_mlm(ex, {}, special, kBertVocab, rng);
    ASSERT_EQ(m.input_ids.size(), ex.input_ids.size());
    ASSERT_EQ(m.labels.size(), ex.input_ids.size());
    for (std::size_t i = 0; i < ex.input_ids.size(); ++i) {
      const std::int32_t orig = ex.input_ids[i];
      if (is_marker(orig, special)) {
        ASSERT_EQ(m.labels[i], kMlmIgnoreLabel) << "marker chosen at " << i;
        ASSERT_EQ(m.input_ids[i], orig);
        continue;
      }
      ++eligible;
      if (m.labels[i] == kMlmIgnoreLabel) {
        ASSERT_EQ(m.input_ids[i], orig) << "non-target changed at " << i;
        continue;
      }
      ASSERT_EQ(m.labels[i], orig);
      ++chosen;
      if (m.input_ids[i] == special.mask) {
        ++to_mask;
      } else if (m.input_ids[i] == orig) {
        ++unchanged;
      } else {
        ASSERT_GE(m.input_ids[i], 1);
        ASSERT_LT(m.input_ids[i], kBertVocab);
        ++to_random;
      }
    }
  }
  // 345,000 eligible tokens: the standard error of the 15 % rate is ~0.0006; of the 80/10/10
  // shares among ~52,000 targets ~0.002 / 0.0013.
  const double rate = static_cast<double>(chosen) / static_cast<double>(eligible);
  EXPECT_NEAR(rate, 0.15, 0.004);
  EXPECT_NEAR(static_cast<double>(to_mask) / chosen, 0.8, 0.01);
  EXPECT_NEAR(static_cast<double>(to_random) / chosen, 0.1, 0.008);
  EXPECT_NEAR(static_cast<double>(unchanged) / chosen, 0.1, 0.008);

  // The random id is uniform over [1, V-1] and excludes nothing else (role markers and [MASK]
  // included). V = 16, every target replaced by a random id.
  MlmMaskingOptions all_random;
  all_random.mask_prob = 1.0;
  all_random.mask_token = 0.0;
  all_random.random_token = 1.0;
  std::map<std::int32_t, int> histogram;
  int targets = 0;
  for (int d = 0; d < 200; ++d) {
    const MaskedTokens m = mask_for_mlm(ex, {}, special, 16, rng, all_random);
    for (std::size_t i = 0; i < m.labels.size(); ++i) {
      if (m.labels[i] == kMlmIgnoreLabel) continue;
      ++targets;
      ++histogram[m.input_ids[i]];
    }
  }
  EXPECT_EQ(targets, 200 * 115);  // every eligible token is a target
  EXPECT_EQ(histogram.size(), 15u);
  EXPECT_EQ(histogram.begin()->first, 1);
  EXPECT_EQ(histogram.rbegin()->first, 15);
  for (const auto& [id, count] : histogram) {
    EXPECT_NEAR(count, targets / 15.0, 5 * std::sqrt(targets / 15.0)) << "id " << id;
  }
  // V = 2: the only random id is 1.
  const MaskedTokens two = mask_for_mlm(ex, {}, special, 2, rng, all_random);
  for (std::size_t i = 0; i < two.labels.size(); ++i) {
    if (two.labels[i] != kMlmIgnoreLabel) {
      EXPECT_EQ(two.input_ids[i], 1);
    }
  }
  // mask_prob = 0: nothing.
  MlmMaskingOptions none;
  none.mask_prob = 0.0;
  const MaskedTokens untouched = mask_for_mlm(ex, {}, special, kBertVocab, rng, none);
  EXPECT_EQ(untouched.input_ids, ex.input_ids);
  EXPECT_EQ(std::count(untouched.labels.begin(), untouched.labels.end(), kMlmIgnoreLabel),
            static_cast<std::ptrdiff_t>(ex.input_ids.size()));
}

TEST(MlmMasking, SpanUtterancesAreFullyMaskedOthersGetBertMasking) {
  const SpecialTokens special;
  const std::vector<Utterance> turns = three_turns();
  // The system utterance (middle) has a value span on its tokens 2..4.
  std::vector<std::vector<std::uint8_t>> flags(3);
  flags[0].assign(40, 0);
  flags[1].assign(30, 0);
  flags[2].assign(45, 0);
  flags[1][2] = flags[1][3] = flags[1][4] = 1;
  const SerializedExample ex = serialize_context(turns, special);
  const std::vector<std::uint8_t> ctx = context_span_flags(flags);
  ASSERT_EQ(ctx.size(), ex.input_ids.size());
  // Utterance 1 starts at index 42 (<sos_r>), its token j is at 43 + j.
  ASSERT_EQ(ex.input_ids[42], special.sos_r);
  EXPECT_EQ(ctx[45], 1);
  EXPECT_EQ(std::count(ctx.begin(), ctx.end(), 1), 3);

  // Every eligible token a target and always [MASK]: the BERT utterances are masked entirely,
  // the span utterance only on its three span tokens.
  MlmMaskingOptions all;
  all.mask_prob = 1.0;
  all.mask_token = 1.0;
  all.random_token = 0.0;
  std::mt19937_64 rng(5);
  const MaskedTokens m = mask_for_mlm(ex, ctx, special, kBertVocab, rng, all);
  for (std::size_t i = 0; i < ex.input_ids.size(); ++i) {
    const bool marker = is_marker(ex.input_ids[i], special);
    const bool in_span_utt = i >= 42 && i < 42 + 32;
    const bool target = !marker && (!in_span_utt || ctx[i] == 1);
    EXPECT_EQ(m.labels[i], target ? ex.input_ids[i] : kMlmIgnoreLabel) << i;
    EXPECT_EQ(m.input_ids[i], target ? special.mask : ex.input_ids[i]) << i;
  }

  // With the default 15 % BERT masking the span utterance is always exactly the same: its span
  // tokens masked 100 % (no 80/10/10), the rest untouched; the other utterances vary.
  std::size_t bert_targets = 0;
  for (int d = 0; d < 200; ++d) {
    const MaskedTokens r = mask_for_mlm(ex, ctx, special, kBertVocab, rng);
    for (std::size_t i = 42; i < 42 + 32; ++i) {
      EXPECT_EQ(r.labels[i], ctx[i] ? ex.input_ids[i] : kMlmIgnoreLabel);
      EXPECT_EQ(r.input_ids[i], ctx[i] ? special.mask : ex.input_ids[i]);
    }
    for (std::size_t i = 0; i < ex.input_ids.size(); ++i) {
      if (i < 42 || i >= 42 + 32) bert_targets += r.labels[i] != kMlmIgnoreLabel;
    }
  }
  EXPECT_NEAR(bert_targets / (200.0 * 85), 0.15, 0.02);

  // A flag on a role marker alone does not make a span utterance.
  std::vector<std::uint8_t> marker_only(ex.input_ids.size(), 0);
  marker_only[42] = 1;
  const MaskedTokens mm = mask_for_mlm(ex, marker_only, special, kBertVocab, rng, all);
  EXPECT_EQ(mm.labels[42], kMlmIgnoreLabel);
  EXPECT_EQ(mm.labels[43], ex.input_ids[43]);  // BERT masking with p = 1
  EXPECT_EQ(mm.labels[50], ex.input_ids[50]);

  // Left max_len truncation cuts the first kept utterance: it has no position 0 but is still
  // one utterance. Both kept utterances have a span, so only the span tokens are targets.
  SerializeOptions cut;
  cut.max_len = 60;  // 121 tokens -> the last 60: 13 tokens of the system utterance + 47
  flags[1].assign(30, 0);
  flags[1][28] = 1;
  flags[2][0] = 1;
  const SerializedExample short_ex = serialize_context(turns, special, cut);
  const std::vector<std::uint8_t> short_flags = context_span_flags(flags, cut);
  ASSERT_EQ(short_ex.input_ids.size(), 60u);
  ASSERT_EQ(short_flags.size(), 60u);
  EXPECT_NE(short_ex.position_ids[0], 0);
  const MaskedTokens sm = mask_for_mlm(short_ex, short_flags, special, kBertVocab, rng, all);
  std::vector<std::size_t> targets;
  for (std::size_t i = 0; i < 60; ++i) {
    if (sm.labels[i] != kMlmIgnoreLabel) targets.push_back(i);
  }
  // The 121 entries lose their first 61: the system utterance keeps its tokens 18..29 at
  // indices 0..11 (token 28 at 10), <eos_r> at 12, <sos_u> at 13, user token 0 at 14.
  ASSERT_EQ(short_ex.input_ids[10], 3028);
  ASSERT_EQ(short_ex.input_ids[14], 4000);
  EXPECT_THAT(targets, ElementsAre(10, 14));
}

TEST(MlmMasking, DeterministicForASeedAndChecksItsInputs) {
  const SpecialTokens special;
  const SerializedExample ex = serialize_context(three_turns(), special);
  std::mt19937_64 a(99), b(99), c(100);
  const MaskedTokens ma = mask_for_mlm(ex, {}, special, kBertVocab, a);
  const MaskedTokens mb = mask_for_mlm(ex, {}, special, kBertVocab, b);
  const MaskedTokens mc = mask_for_mlm(ex, {}, special, kBertVocab, c);
  EXPECT_EQ(ma.input_ids, mb.input_ids);
  EXPECT_EQ(ma.labels, mb.labels);
  EXPECT_NE(ma.labels, mc.labels);
  // The generator advanced identically, so the next draws agree too.
  EXPECT_EQ(mask_for_mlm(ex, {}, special, kBertVocab, a).labels,
            mask_for_mlm(ex, {}, special, kBertVocab, b).labels);

  // Known answer, pinned so that a change in RNG use is noticed: seed 7, one user utterance of
  // ids 1000..1019, p = 0.5.
  const SerializedExample small = serialize_context({{"user", range_ids(1000, 20)}}, special);
  MlmMaskingOptions half;
  half.mask_prob = 0.5;
  std::mt19937_64 seeded(7);
  const MaskedTokens k = mask_for_mlm(small, {}, special, kBertVocab, seeded, half);
  EXPECT_THAT(target_positions(k), ElementsAre(3, 4, 5, 8, 10, 13, 14, 15, 16, 17, 20));
  EXPECT_THAT(k.input_ids,
              ElementsAre(13, 1000, 1001, 28626, 10361, 103, 1005, 1006, 103, 1008, 1009, 1010,
                          1011, 103, 103, 103, 103, 103, 1017, 1018, 103, 7));

  // Input checks.
  std::mt19937_64 rng(1);
  EXPECT_THROW(mask_for_mlm(ex, std::vector<std::uint8_t>(3, 0), special, kBertVocab, rng),
               std::invalid_argument);
  EXPECT_THROW(mask_for_mlm(ex, {}, special, 1, rng), std::invalid_argument);
  SerializedExample broken = ex;
  broken.position_ids.pop_back();
  EXPECT_THROW(mask_for_mlm(broken, {}, special, kBertVocab, rng), std::invalid_argument);
  for (const auto& [p, m, r] : std::vector<std::tuple<double, double, double>>{
           {1.5, 0.8, 0.1}, {-0.1, 0.8, 0.1}, {0.15, 0.8, 0.3}, {0.15, std::nan(""), 0.1}}) {
    MlmMaskingOptions bad;
    bad.mask_prob = p;
    bad.mask_token = m;
    bad.random_token = r;
    EXPECT_THROW(mask_for_mlm(ex, {}, special, kBertVocab, rng, bad), std::invalid_argument);
  }
  // An empty example is fine.
  EXPECT_TRUE(mask_for_mlm(SerializedExample{}, {}, special, kBertVocab, rng).labels.empty());
  // context_span_flags checks.
  EXPECT_THROW(context_span_flags({}), std::invalid_argument);
  SerializeOptions zero;
  zero.max_utt_len = 0;
  EXPECT_THROW(context_span_flags({{1}}, zero), std::invalid_argument);
}

// Whole-word masking (docs/training.md "Whole-word masking"): the draw is per word, every
// sub-word of a chosen word is a target, and a word ends at a marker or an utterance's end.
TEST(MlmMasking, WholeWordChoosesWordsWithAllTheirSubWords) {
  const SpecialTokens special;
  constexpr std::int32_t kVocab = 64;
  // Ids 40..63 continue a word, every other id begins one.
  auto table = std::make_shared<std::vector<std::uint8_t>>(kVocab, 0);
  for (std::int32_t id = 40; id < kVocab; ++id) (*table)[static_cast<std::size_t>(id)] = 1;
  MlmMaskingOptions whole;
  whole.continues_word = table;
  whole.mask_prob = 0.3;
  // user: words [20 41 42] [21] [22 43]; system: [44 45] (a continuation after the marker
  // begins a word) [23 46].
  const SerializedExample ex = serialize_context(
      {{"user", {20, 41, 42, 21, 22, 43}}, {"system", {44, 45, 23, 46}}}, special);
  const std::vector<std::vector<std::size_t>> words = {{1, 2, 3}, {4}, {5, 6}, {9, 10}, {11, 12}};
  std::mt19937_64 rng(5);
  std::vector<int> chosen(words.size(), 0);
  const int draws = 20000;
  for (int d = 0; d < draws; ++d) {
    const MaskedTokens m = mask_for_mlm(ex, {}, special, kVocab, rng, whole);
    for (std::size_t w = 0; w < words.size(); ++w) {
      std::size_t targets = 0;
      for (std::size_t k : words[w]) targets += m.labels[k] != kMlmIgnoreLabel ? 1 : 0;
      ASSERT_TRUE(targets == 0 || targets == words[w].size()) << "word " << w << ", draw " << d;
      chosen[w] += targets > 0 ? 1 : 0;
    }
    for (std::size_t k : {0, 7, 8, 13}) ASSERT_EQ(m.labels[k], kMlmIgnoreLabel) << k;  // markers
  }
  // Each word is chosen with p = 0.3 (standard error 0.0032 over 20,000 draws).
  for (std::size_t w = 0; w < words.size(); ++w) {
    EXPECT_NEAR(static_cast<double>(chosen[w]) / draws, 0.3, 0.016) << "word " << w;
  }
  // p = 1: every sub-word is a target, 80/10/10 applied per sub-word as without whole words.
  whole.mask_prob = 1.0;
  whole.mask_token = 1.0;
  whole.random_token = 0.0;
  const MaskedTokens all = mask_for_mlm(ex, {}, special, kVocab, rng, whole);
  EXPECT_THAT(all.labels, ElementsAre(kMlmIgnoreLabel, 20, 41, 42, 21, 22, 43, kMlmIgnoreLabel,
                                      kMlmIgnoreLabel, 44, 45, 23, 46, kMlmIgnoreLabel));
  EXPECT_EQ(std::count(all.input_ids.begin(), all.input_ids.end(), special.mask), 10);
  // Known answer, pinned so that a change in RNG use is noticed: seed 7, p = 0.5, [MASK] only.
  whole.mask_prob = 0.5;
  std::mt19937_64 seeded(7);
  const MaskedTokens k = mask_for_mlm(ex, {}, special, kVocab, seeded, whole);
  EXPECT_THAT(target_positions(k), ElementsAre(5, 6, 9, 10, 11, 12));  // words 3, 4 and 5
  // A table of another size than the vocabulary is refused.
  whole.continues_word = std::make_shared<std::vector<std::uint8_t>>(kVocab - 1, 0);
  EXPECT_THROW(mask_for_mlm(ex, {}, special, kVocab, rng, whole), std::invalid_argument);
}

TEST(MlmMasking, WordContinuationFlagsOfBothTokenizerKinds) {
  const WordPieceTokenizer bert(
      dialtree::testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  const std::vector<std::uint8_t> flags = word_continuation_flags(bert);
  ASSERT_EQ(flags.size(), static_cast<std::size_t>(bert.vocab_size()));
  const auto continues = [&](const std::string& token) {
    const std::int32_t id = bert.token_to_id(token);
    EXPECT_GE(id, 0) << token;
    return flags[static_cast<std::size_t>(id)] != 0;
  };
  EXPECT_TRUE(continues("##ing"));
  EXPECT_TRUE(continues("##s"));
  EXPECT_FALSE(continues("the"));
  EXPECT_FALSE(continues(","));
  EXPECT_FALSE(continues("[CLS]"));
  EXPECT_FALSE(continues("[MASK]"));
  // "unaffordable": una ##ff ##ord ##able, one word.
  const std::vector<std::int32_t> ids = bert.encode("unaffordable, really");
  std::vector<int> of_ids;
  for (std::int32_t id : ids) of_ids.push_back(flags[static_cast<std::size_t>(id)]);
  EXPECT_EQ(bert.tokenize("unaffordable, really").size(), ids.size());
  EXPECT_EQ(std::count(of_ids.begin(), of_ids.end(), 1),
            static_cast<std::ptrdiff_t>(ids.size()) - 3);  // "un", ",", "really" begin words
  EXPECT_EQ(of_ids.front(), 0);

  // SentencePiece: a piece with U+2581 begins a word; "," after a word begins one too.
  dialtree::testing::TempDir dir;
  const SentencePieceTokenizer spm(train_small_sentencepiece(dir, corpus_lines()));
  const std::vector<std::uint8_t> sp = word_continuation_flags(spm);
  ASSERT_EQ(sp.size(), static_cast<std::size_t>(spm.vocab_size()));
  const std::string text = "I'd like a reservation, please";
  const std::vector<std::int32_t> pieces = spm.encode(text);
  const std::vector<std::string> strings = spm.tokenize(text);
  ASSERT_EQ(pieces.size(), strings.size());
  std::string words;  // the pieces joined, " " before each word start
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    std::string piece = strings[i];
    if (piece.rfind("\xE2\x96\x81", 0) == 0) piece = piece.substr(3);
    if (i > 0 && sp[static_cast<std::size_t>(pieces[i])] == 0) words += ' ';
    words += piece;
  }
  EXPECT_EQ(words, "I 'd like a reservation , please");
  EXPECT_EQ(sp[static_cast<std::size_t>(spm.special().mask)], 0);
}

/// Code point span of the first occurrence of `needle` in `text`.
CharSpan span_of(const std::string& text, const std::string& needle) {
  const std::size_t byte = text.find(needle);
  EXPECT_NE(byte, std::string::npos) << needle;
  const std::size_t start = utf8::length(text.substr(0, byte));
  return {start, start + utf8::length(needle)};
}

TEST(SpanFlags, WordPieceAlignmentMentionsAndContextTruncation) {
  const WordPieceTokenizer bert(
      dialtree::testing::shared_data("dialoglue/bert-base-uncased-vocab.txt"));
  const auto tokens_flagged = [&](const std::string& text, const std::vector<CharSpan>& spans) {
    const std::vector<std::uint8_t> flags = value_span_flags(bert, text, spans);
    const std::vector<std::string> tokens = bert.tokenize(text);
    EXPECT_EQ(flags.size(), tokens.size());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < flags.size() && i < tokens.size(); ++i) {
      if (flags[i]) out.push_back(tokens[i]);
    }
    return out;
  };
  const std::string text = "I want Cheap food in the centre, (north) of town";
  EXPECT_THAT(tokens_flagged(text, {span_of(text, "Cheap"), span_of(text, "centre")}),
              ElementsAre("cheap", "centre"));
  EXPECT_THAT(tokens_flagged(text, {span_of(text, "north")}), ElementsAre("north"));
  EXPECT_THAT(tokens_flagged(text, {span_of(text, "Cheap food")}), ElementsAre("cheap", "food"));
  EXPECT_THAT(tokens_flagged(text, {{0, 1}}), ElementsAre("i"));
  EXPECT_THAT(tokens_flagged(text, {span_of(text, "town")}), ElementsAre("town"));
  EXPECT_THAT(tokens_flagged(text, {{3, 3}}), ElementsAre());  // empty span
  // Boundaries inside a token: the straddling token is flagged ("downtown" is one piece).
  const std::string down = "go downtown please";
  EXPECT_THAT(tokens_flagged(down, {span_of(down, "town")}), ElementsAre("downtown"));
  EXPECT_THAT(tokens_flagged(down, {span_of(down, "down")}), ElementsAre("downtown"));
  // A boundary between two pieces of one word is exact: "playstations" = playstation ##s.
  const std::string ps = "my playstations broke";
  EXPECT_THAT(tokens_flagged(ps, {span_of(ps, "playstation")}), ElementsAre("playstation"));
  // Code points, not bytes: "café" has 4 code points and 5 bytes.
  const std::string cafe = "café in the centre";
  EXPECT_EQ(span_of(cafe, "centre"), (CharSpan{12, 18}));
  EXPECT_THAT(tokens_flagged(cafe, {span_of(cafe, "centre")}), ElementsAre("centre"));
  EXPECT_THROW(value_span_flags(bert, cafe, {{12, 19}}), std::out_of_range);
  EXPECT_THROW(value_span_flags(bert, cafe, {{5, 4}}), std::out_of_range);
  EXPECT_THROW(value_span_flags(bert, std::string("bad \xff"), {}), TokenizerError);

  // Mentions as SPACE-2 finds them.
  sts::Tree label;
  label.add_value("restaurant", "inform", "area", {"centre", CharSpan{19, 25}});
  label.add_value("restaurant", "inform", "price", {"CHEAP", std::nullopt});
  label.add_value("restaurant", "inform", "food", {"thai", std::nullopt});  // absent
  label.add_value("restaurant", "inform", "dir", {"north", std::nullopt});
  const std::string utt = "cheap place in the centre, centre-ish, cheaper, northern";
  const std::vector<CharSpan> mentions = label_mention_spans(utt, label);
  // "centre" at 19 (its span) and 27 (followed by '-': token-aligned), "cheap" at 0 only
  // ("cheaper" at 39 is one word), nothing for "north" inside "northern" (48) or for the absent
  // "thai".
  EXPECT_THAT(mentions, ElementsAre(CharSpan{0, 5}, CharSpan{19, 25}, CharSpan{27, 33}));
  EXPECT_EQ(utt.substr(19, 6), "centre");
  // The same mentions per slot, slots in byte order, those without a mention left out.
  const auto by_slot = label_mention_spans_by_slot(utt, label);
  ASSERT_EQ(by_slot.size(), 2u);
  EXPECT_EQ(by_slot[0].first, "area");
  EXPECT_THAT(by_slot[0].second, ElementsAre(CharSpan{19, 25}, CharSpan{27, 33}));
  EXPECT_EQ(by_slot[1].first, "price");
  EXPECT_THAT(by_slot[1].second, ElementsAre(CharSpan{0, 5}));
  // A labelled span is always kept, even when it is not token-aligned or found elsewhere.
  sts::Tree odd;
  odd.add_value("d", "i", "s", {"orth", CharSpan{49, 53}});
  EXPECT_THAT(label_mention_spans(utt, odd), ElementsAre(CharSpan{49, 53}));
  sts::Tree outside;
  outside.add_value("d", "i", "s", {"x", CharSpan{50, 99}});
  EXPECT_THROW(label_mention_spans(utt, outside), std::out_of_range);

  // Context alignment: the same truncations as serialize_context().
  SerializeOptions opts;
  opts.max_ctx_turn = 2;
  opts.max_utt_len = 3;
  opts.max_len = 7;
  const std::vector<Utterance> history{
      {"user", {1, 2}}, {"system", {3, 4, 5, 6}}, {"user", {7, 8}}};
  const std::vector<std::vector<std::uint8_t>> flags{{1, 1}, {1, 0, 0, 1}, {0, 1}};
  const SerializedExample ex = serialize_context(history, SpecialTokens{}, opts);
  const std::vector<std::uint8_t> ctx = context_span_flags(flags, opts);
  // Utterances 1 and 2 kept; utterance 1 keeps ids 4, 5, 6 -> [sos_r 4 5 6 eos_r sos_u 7 8
  // eos_u] = 9 entries, the last 7 kept: [5 6 eos_r sos_u 7 8 eos_u].
  EXPECT_THAT(ex.input_ids, ElementsAre(5, 6, 8, 13, 7, 8, 7));
  EXPECT_THAT(ctx, ElementsAre(0, 1, 0, 0, 0, 1, 0));
  // Per-token int32 labels take the same path, with their own marker value.
  const std::vector<std::vector<std::int32_t>> labels{{4, 4}, {2, -1, -1, 3}, {-1, 9}};
  EXPECT_THAT(context_token_labels(labels, opts, -1), ElementsAre(-1, 3, -1, -1, -1, 9, -1));
  EXPECT_THROW(context_token_labels({}, opts, -1), std::invalid_argument);
}

// SentencePiece: whole-word spans map exactly onto pieces (their pieces decode to the span
// text), mid-word spans are covered by a superset.
TEST(SpanFlags, SentencePieceSpansCoverTheirText) {
  dialtree::testing::TempDir dir;
  const std::vector<std::string> lines = corpus_lines();
  const SentencePieceTokenizer spm(train_small_sentencepiece(dir, lines));

  std::mt19937_64 rng(3);
  int exact = 0, checked = 0;
  for (std::size_t n = 0; n < 300 && n < lines.size(); ++n) {
    const std::string& line = lines[n];
    if (!utf8::is_valid(line)) continue;
    // Word boundaries (ASCII spaces) in code points.
    const std::u32string cps = utf8::decode(line);
    std::vector<std::size_t> starts, ends;
    for (std::size_t i = 0; i < cps.size(); ++i) {
      if (cps[i] != U' ' && (i == 0 || cps[i - 1] == U' ')) starts.push_back(i);
      if (cps[i] != U' ' && (i + 1 == cps.size() || cps[i + 1] == U' ')) ends.push_back(i + 1);
    }
    if (starts.size() < 2) continue;
    const std::size_t w0 = rng() % starts.size();
    const std::size_t w1 = w0 + rng() % std::min<std::size_t>(3, starts.size() - w0);
    const CharSpan span{starts[w0], ends[w1]};
    const std::vector<std::uint8_t> flags = value_span_flags(spm, line, {span});
    const std::vector<std::int32_t> ids = spm.encode(line);
    ASSERT_EQ(flags.size(), ids.size());
    std::vector<std::int32_t> flagged;
    std::size_t first = ids.size(), last = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!flags[i]) continue;
      flagged.push_back(ids[i]);
      first = std::min(first, i);
      last = i;
    }
    ASSERT_FALSE(flagged.empty()) << line;
    EXPECT_EQ(last - first + 1, flagged.size()) << "not contiguous: " << line;
    const std::string span_text = utf8::substr(line, span.first, span.second);
    const std::string decoded = spm.decode(flagged);
    ++checked;
    if (decoded == span_text) ++exact;
    // Mid-word: a sub-span of the first word's interior is covered by a superset.
    const CharSpan inner{starts[w0] + 1, ends[w0]};
    if (inner.second > inner.first) {
      const std::vector<std::uint8_t> f2 = value_span_flags(spm, line, {inner});
      std::vector<std::int32_t> got;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (f2[i]) got.push_back(ids[i]);
      }
      EXPECT_NE(spm.decode(got).find(utf8::substr(line, inner.first, inner.second)),
                std::string::npos)
          << line;
    }
  }
  // nmt_nfkc can change a few characters (e.g. full-width forms), so allow rare mismatches.
  EXPECT_GT(checked, 250);
  EXPECT_GE(exact, checked * 98 / 100) << exact << " of " << checked;
}

}  // namespace
}  // namespace dialtree::data
