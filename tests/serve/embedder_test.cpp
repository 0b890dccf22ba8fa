// serve/embedder.h: serialisation of requests' inputs (as training does) and batched forward
// passes whose padding never changes a vector.
#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "model/torch_api.h"

#include "common/error.h"
#include "data/serialize.h"
#include "model/bundle.h"
#include "model/collate.h"
#include "serve/embedder.h"
#include "test_data.h"
#include "test_paths.h"
#include "tiny_bundle.h"

namespace dialtree::serve {
namespace {

using dialtree::testing::max_abs_diff;

using dialtree::testing::TempDir;
using ::testing::HasSubstr;

Input text(const std::string& s) {
  return Input{{Turn{"user", s}}, std::nullopt};
}
Input ids(std::vector<std::int64_t> v) {
  return Input{{}, std::move(v)};
}

TEST(Embedder, SerialisesADialogExactlyAsTrainingDoes) {
  TempDir tmp;
  Embedder e(serve::testing::make_tiny_bundle(tmp, false), 256);
  EXPECT_EQ(e.limits().max_utterance_length, 14u);  // 16 positions - 2 markers
  EXPECT_EQ(e.limits().max_turns, 4u);
  Input dialog{{Turn{"system", "how can i help"}, Turn{"user", "i lost my card"}}, std::nullopt};
  const data::SerializedExample got = e.prepare(dialog, false, TruncationDirection::kRight, "x");
  // The training path: data::serialize_context over the tokenizer's ids.
  data::SerializeOptions so;
  so.max_len = 256;
  so.max_utt_len = 14;
  so.max_ctx_turn = 4;
  const auto& tok = e.tokenizer();
  const data::SerializedExample want = data::serialize_context(
      {{"system", tok.encode("how can i help")}, {"user", tok.encode("i lost my card")}},
      tok.special(), so);
  EXPECT_EQ(got.input_ids, want.input_ids);
  EXPECT_EQ(got.position_ids, want.position_ids);
  EXPECT_EQ(got.role_ids, want.role_ids);
  EXPECT_EQ(got.turn_ids, want.turn_ids);
  // Known answer: [sos_r]=7 how=21 can=22 i=9 help=23 [eos_r]=8 [sos_u]=5 i lost my card [eos_u]=6.
  EXPECT_EQ(got.input_ids, (std::vector<std::int32_t>{7, 21, 22, 9, 23, 8, 5, 9, 10, 11, 12, 6}));
  EXPECT_EQ(got.turn_ids, (std::vector<std::int32_t>{2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(got.role_ids, (std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
}

TEST(Embedder, TruncationKeepsTheChosenEndOrRefusesWith413) {
  TempDir tmp;
  Embedder e(serve::testing::make_tiny_bundle(tmp, false), 256);
  std::vector<std::int64_t> long_ids;
  for (int i = 0; i < 20; ++i) long_ids.push_back(9 + i % 15);  // 20 sub-words > 14
  const auto right = e.prepare(ids(long_ids), true, TruncationDirection::kRight, "x");
  ASSERT_EQ(right.input_ids.size(), 16u);
  EXPECT_EQ(right.input_ids[1], long_ids[0]);  // keeps the first 14
  EXPECT_EQ(right.input_ids[14], long_ids[13]);
  const auto left = e.prepare(ids(long_ids), true, TruncationDirection::kLeft, "x");
  EXPECT_EQ(left.input_ids[1], long_ids[6]);  // keeps the last 14, as SPACE-2 training
  EXPECT_EQ(left.input_ids[14], long_ids[19]);
  try {
    e.prepare(ids(long_ids), false, TruncationDirection::kRight, "input[3]");
    FAIL() << "no error";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInputTooLong);
    EXPECT_EQ(err.param(), "input[3]");
    EXPECT_THAT(err.what(), HasSubstr("20 tokens; at most 14"));
  }
  // Five turns with a four-turn table: refused without truncation, newest four kept with it.
  Input five{{}, std::nullopt};
  for (const char* t : {"hello", "how can i help", "my card", "the bank", "transfer money"}) {
    five.turns.push_back(Turn{five.turns.size() % 2 ? "system" : "user", t});
  }
  EXPECT_THROW(e.prepare(five, false, TruncationDirection::kRight, "x"), ApiError);
  const auto kept = e.prepare(five, true, TruncationDirection::kRight, "x");
  EXPECT_EQ(kept.turn_ids.front(), 4);
  // A token id outside the vocabulary is a 422 naming the element.
  try {
    e.prepare(ids({9, 24}), true, TruncationDirection::kRight, "input");
    FAIL() << "no error";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kValidation);
    EXPECT_EQ(err.param(), "input[1]");
  }
}

TEST(Embedder, TheTotalLengthLimitCutsOldContextOrRefuses) {
  TempDir tmp;
  Embedder e(serve::testing::make_tiny_bundle(tmp, false), 10);
  Input two{{Turn{"system", "how can i help"}, Turn{"user", "i lost my card"}}, std::nullopt};
  EXPECT_THROW(e.prepare(two, false, TruncationDirection::kRight, "x"), ApiError);  // 12 > 10
  const auto cut = e.prepare(two, true, TruncationDirection::kRight, "x");
  EXPECT_EQ(cut.input_ids.size(), 10u);
  EXPECT_EQ(cut.input_ids.back(), 6);  // the current turn's [eos_u] survives
}

TEST(Embedder, PaddingNeverChangesAVectorAndOutputsMatchTheModel) {
  TempDir tmp;
  const std::string dir = serve::testing::make_tiny_bundle(tmp, true);
  Embedder e(dir, 256);
  const auto a = e.prepare(text("hello"), true, TruncationDirection::kRight, "a");
  const auto b =
      e.prepare(text("i lost my card where is the bank"), true, TruncationDirection::kRight, "b");
  const auto c = e.prepare(
      Input{{Turn{"system", "how can i help"}, Turn{"user", "transfer money"}}, std::nullopt}, true,
      TruncationDirection::kRight, "c");
  const ForwardOutputs alone = e.forward({&a}, true);
  const ForwardOutputs batch = e.forward({&b, &a, &c}, true);
  ASSERT_EQ(alone.pooled.size(), 1u);
  ASSERT_EQ(batch.pooled.size(), 3u);
  ASSERT_EQ(alone.pooled[0].size(), 32u);
  EXPECT_LT(max_abs_diff(alone.pooled[0], batch.pooled[1]), 1e-5f);
  EXPECT_LT(max_abs_diff(alone.probs[0], batch.probs[1]), 1e-5f);
  EXPECT_GT(max_abs_diff(batch.pooled[0], batch.pooled[1]), 1e-3f);  // different inputs differ
  float sum = 0.0f;
  for (float p : batch.probs[2]) sum += p;
  EXPECT_NEAR(sum, 1.0f, 1e-5f);
  EXPECT_TRUE(e.forward({}, true).pooled.empty());
  EXPECT_TRUE(e.forward({&a}, false).probs.empty());

  // Independent path: load the bundle, collate, forward, row 0 of the [CLS]-prepended output.
  model::LoadedBundle bundle = model::load_bundle(dir);
  torch::NoGradGuard g;
  const auto hidden = bundle.model->forward(model::collate({c}), true);
  const auto want = hidden.select(1, 0)[0].contiguous();
  const std::vector<float> want_v(want.data_ptr<float>(), want.data_ptr<float>() + 32);
  EXPECT_LT(max_abs_diff(want_v, batch.pooled[2]), 1e-6f);
  EXPECT_EQ(e.intent_labels(), (std::vector<std::string>{"card_lost", "transfer", "greeting"}));
}

TEST(Embedder, BadBundleAndBadLimitAreClearErrors) {
  TempDir tmp;
  EXPECT_THROW(Embedder(tmp.file("nowhere"), 256), DataError);
  const std::string dir = serve::testing::make_tiny_bundle(tmp, false);
  EXPECT_THROW(Embedder(dir, 2), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::serve
