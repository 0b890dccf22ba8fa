#include "model/packing.h"

#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace dialtree::model {
namespace {

/// The buckets as (begin, end, length) triples, for readable comparisons.
std::vector<std::vector<std::int64_t>> triples(const std::vector<LengthBucket>& buckets) {
  std::vector<std::vector<std::int64_t>> out;
  for (const LengthBucket& b : buckets) {
    out.push_back({static_cast<std::int64_t>(b.begin), static_cast<std::int64_t>(b.end), b.length});
  }
  return out;
}

using Triples = std::vector<std::vector<std::int64_t>>;

TEST(PlanLengthBuckets, KnownAnswers) {
  // One bucket: 16 + 4 x 50² = 10016; the tens apart: 16 + 3 x 10² + 16 + 50² = 2832.
  EXPECT_EQ(triples(plan_length_buckets({10, 10, 10, 50}, 16)), (Triples{{0, 3, 10}, {3, 4, 50}}));
  // Similar lengths stay together: 100 + 3 x 7² = 247 beats 100 + 2 x 6² + 100 + 7² = 321.
  EXPECT_EQ(triples(plan_length_buckets({5, 6, 7}, 100)), (Triples{{0, 3, 7}}));
  // No overhead: a cut at every length change, equal lengths together (ties keep one bucket).
  EXPECT_EQ(triples(plan_length_buckets({3, 3, 9, 9}, 0)), (Triples{{0, 2, 3}, {2, 4, 9}}));
  // A huge overhead: one bucket, padded to the longest.
  EXPECT_EQ(triples(plan_length_buckets({1, 2, 40}, 1000000)), (Triples{{0, 3, 40}}));
  EXPECT_TRUE(plan_length_buckets({}, 16).empty());
  EXPECT_EQ(triples(plan_length_buckets({7}, 16)), (Triples{{0, 1, 7}}));
}

TEST(PlanLengthBuckets, ThreeBucketsWhereTheyPay) {
  // Three buckets: 3 x 1024 + 4 x 5² + 2 x 30² + 120² = 19372. Merging the first two:
  // 2 x 1024 + 6 x 30² + 120² = 21848; the last two: 2 x 1024 + 4 x 5² + 3 x 120² = 45348.
  const std::vector<std::int64_t> lengths = {5, 5, 5, 5, 30, 30, 120};
  EXPECT_EQ(triples(plan_length_buckets(lengths, 1024)),
            (Triples{{0, 4, 5}, {4, 6, 30}, {6, 7, 120}}));
}

TEST(PlanLengthBuckets, RejectsUnsortedOrEmptyLengthsAndNegativeOverhead) {
  EXPECT_THROW(plan_length_buckets({5, 3}, 16), std::invalid_argument);
  EXPECT_THROW(plan_length_buckets({0, 3}, 16), std::invalid_argument);
  EXPECT_THROW(plan_length_buckets({3}, -1), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::model
