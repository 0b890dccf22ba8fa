// trainer/step_stats.h: the statistics of one pretraining step, their vector for the element-wise
// sum over the data-parallel ranks, and the means over micro-batches and ranks.
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trainer/step_stats.h"

namespace dialtree::trainer {
namespace {

using ::testing::ElementsAre;

TEST(StepStats, TheVectorForTheSumOverRanksRoundTripsInItsDocumentedOrder) {
  StepStats s(2);
  s.losses = {1, 2, 3, 4, 5, 6, 7, 7.5, 7.75};
  s.tokens = 8, s.real_tokens = 9;
  s.set_rank_seconds(1, 0.5, 0.25);
  EXPECT_THAT(s.to_vector(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 7.5, 7.75, 8, 9, 0, 0.5, 0, 0.25));
  const StepStats back = StepStats::from_vector(s.to_vector(), 2);
  EXPECT_EQ(back.to_vector(), s.to_vector());
  EXPECT_EQ(back.world(), 2);
  EXPECT_DOUBLE_EQ(back.slowest_compute(), 0.5);
  EXPECT_THROW(StepStats::from_vector(s.to_vector(), 3), std::invalid_argument);
  EXPECT_THROW(StepStats(0), std::invalid_argument);
  EXPECT_THROW(s.set_rank_seconds(2, 1, 1), std::out_of_range);
}

TEST(StepStats, MicroBatchesGiveTheMeanAndRanksAverageTheSum) {
  StepStats s(1);
  s.add_micro_batch({1, 2, 0, 0, 0, 0, 0, 1}, 2);
  s.add_micro_batch({3, 4, 0, 0, 0, 8, 0, 2, 6}, 2);
  EXPECT_DOUBLE_EQ(s.losses.total, 2);
  EXPECT_DOUBLE_EQ(s.losses.sup, 3);
  EXPECT_DOUBLE_EQ(s.losses.generator_mlm, 4);
  EXPECT_DOUBLE_EQ(s.losses.encoder_mlm, 1.5);
  EXPECT_DOUBLE_EQ(s.losses.token_contrastive, 3);
  StepStats two = StepStats::from_vector({4, 6, 0, 0, 0, 0, 2, 3, 8, 10, 8, 1, 2, 0, 0}, 2);
  two.average_losses_over_ranks();
  EXPECT_DOUBLE_EQ(two.losses.total, 2);
  EXPECT_DOUBLE_EQ(two.losses.sup, 3);
  EXPECT_DOUBLE_EQ(two.losses.replaced_token, 1);
  EXPECT_DOUBLE_EQ(two.losses.encoder_mlm, 1.5);
  EXPECT_DOUBLE_EQ(two.losses.token_contrastive, 4);
  EXPECT_DOUBLE_EQ(two.tokens, 10);  // counts stay sums
}

}  // namespace
}  // namespace dialtree::trainer
