// plan_batches (common/batching.h): worked examples of the order and both limits.
#include "common/batching.h"

#include <cstddef>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace dialtree {
namespace {

using Batches = std::vector<std::vector<std::size_t>>;

TEST(PlanBatches, LongestFirstTiesInInputOrderCutBySize) {
  EXPECT_EQ(plan_batches({3, 10, 5, 10, 7}, {2, 0}), (Batches{{1, 3}, {4, 2}, {0}}));
  EXPECT_EQ(plan_batches({3, 10, 5, 10, 7}, {64, 0}), (Batches{{1, 3, 4, 2, 0}}));
}

TEST(PlanBatches, TheTokenBudgetCountsPaddedTokens) {
  // 10 x 2 = 20 > 15: the two 10-token inputs go alone; then 7 x 2 = 14 fits, 7 x 3 = 21 not.
  EXPECT_EQ(plan_batches({3, 10, 5, 10, 7}, {64, 15}), (Batches{{1}, {3}, {4, 2}, {0}}));
  // An input longer than the budget still gets a batch of its own.
  EXPECT_EQ(plan_batches({100, 2, 2}, {64, 15}), (Batches{{0}, {1, 2}}));
  // Exactly at the budget is within it.
  EXPECT_EQ(plan_batches({5, 5, 5}, {64, 15}), (Batches{{0, 1, 2}}));
}

TEST(PlanBatches, InInputOrderTheLongestSoFarSetsThePadding) {
  // 3, 10 -> 20 padded tokens; + 5 -> 30 > 25: cut. 5, 10 -> 20; + 7 -> 30: cut.
  EXPECT_EQ(plan_batches({3, 10, 5, 10, 7}, {64, 25, false}), (Batches{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(plan_batches({3, 10, 5, 10, 7}, {2, 0, false}), (Batches{{0, 1}, {2, 3}, {4}}));
}

TEST(PlanBatches, FirstBatchSizeIsTheFirstBatchInInputOrder) {
  const std::vector<std::size_t> lengths = {3, 10, 5, 10, 7};
  EXPECT_EQ(first_batch_size(lengths, {64, 25, false}), 2u);
  EXPECT_EQ(first_batch_size(lengths, {64, 0, false}), 5u);
  EXPECT_EQ(first_batch_size({100, 2}, {64, 15, false}), 1u);
  EXPECT_EQ(first_batch_size({}, {64, 15, false}), 0u);
  EXPECT_THROW(first_batch_size({1}, {0, 0, false}), std::invalid_argument);
}

TEST(InputLengthProblem, OneInputMustFitOneBatch) {
  EXPECT_EQ(input_length_problem(256, 256), "");
  EXPECT_EQ(input_length_problem(3, 16384), "");
  EXPECT_EQ(input_length_problem(257, 256),
            "257 exceeds --max-batch-tokens 256: one input must fit one batch; raise "
            "--max-batch-tokens");
}

TEST(PlanBatches, EmptyInputAndBadLimits) {
  EXPECT_TRUE(plan_batches({}, {}).empty());
  EXPECT_EQ(plan_batches({0, 0}, {}), (Batches{{0, 1}}));
  EXPECT_THROW(plan_batches({1, 2}, {0, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree
