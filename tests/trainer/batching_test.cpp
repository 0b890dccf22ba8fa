// Batch plans: one dataset per batch, every example once per epoch, deterministic, resumable.
#include <algorithm>
#include <map>
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

// Worked example of the grouping rule (trainer/batching.h): keys A = 1, B = 2, C = 3, none.
TEST(GroupedOrder, KeysFormGroupsAndLeftoversPairUpInPermutationOrder) {
  const std::vector<std::size_t> order = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::vector<std::uint32_t>> keys = {{1}, {2}, {1}, {2}, {1},
                                                        {3}, {1}, {},  {},  {}};
  const std::vector<std::size_t> out = grouped_order(order, keys, 2, 99);
  ASSERT_EQ(out.size(), 10u);
  // A: 0 2 4 6 -> {0,2} {4,6}; B: 1 3 -> {1,3}; leftovers in order 5 7 8 9 -> {5,7} {8,9}.
  const std::set<std::set<std::size_t>> expected = {{0, 2}, {4, 6}, {1, 3}, {5, 7}, {8, 9}};
  std::set<std::set<std::size_t>> got;
  for (std::size_t i = 0; i < out.size(); i += 2) got.insert({out[i], out[i + 1]});
  EXPECT_EQ(got, expected);
  // Seeded: the same seed gives the same order; the group order moves with the seed.
  EXPECT_EQ(grouped_order(order, keys, 2, 99), out);
  bool moved = false;
  for (std::uint64_t seed = 0; seed < 8 && !moved; ++seed) {
    moved = grouped_order(order, keys, 2, seed) != out;
  }
  EXPECT_TRUE(moved);
  // Off below 2.
  EXPECT_EQ(grouped_order(order, keys, 1, 99), order);
}

TEST(GroupedOrder, TheIncompleteGroupGoesLast) {
  // Groups of 3 over 7 examples: {0,1,2} and {3,4,5} share keys, 6 is alone.
  const std::vector<std::vector<std::uint32_t>> keys = {{5}, {5}, {5}, {8}, {8}, {8}, {9}};
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const std::vector<std::size_t> out =
        grouped_order(permutation(7, seed), keys, 3, seed + 100);
    ASSERT_EQ(out.size(), 7u);
    EXPECT_EQ(out.back(), 6u) << "seed " << seed;
    EXPECT_EQ(keys[out[0]], keys[out[1]]);
    EXPECT_EQ(keys[out[0]], keys[out[2]]);
    EXPECT_EQ(keys[out[3]], keys[out[4]]);
    EXPECT_EQ(keys[out[3]], keys[out[5]]);
  }
}

TEST(BatchStream, GroupedBatchesShareKeysAndStillCoverEveryExampleOnce) {
  // Dataset 0: 24 examples, key i % 6 (four of each); dataset 1: 10 examples without keys.
  Grouping g;
  g.group_size = 4;
  g.keys.resize(2);
  for (std::uint32_t i = 0; i < 24; ++i) g.keys[0].push_back({i % 6});
  g.keys[1].assign(10, {});
  BatchStream s({24, 10}, 8, 3, g);
  EXPECT_EQ(s.batches_per_epoch(), 3u + 2u);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::set<std::size_t>> seen(2);
    std::size_t groups = 0;
    for (const BatchRef& b : s.plan(epoch)) {
      for (std::size_t e : b.examples) EXPECT_TRUE(seen[b.dataset].insert(e).second);
      if (b.dataset != 0) continue;
      ASSERT_EQ(b.examples.size(), 8u);
      for (std::size_t start = 0; start < 8; start += 4, ++groups) {
        for (std::size_t k = start + 1; k < start + 4; ++k) {
          EXPECT_EQ(b.examples[k] % 6, b.examples[start] % 6) << "epoch " << epoch;
        }
      }
    }
    EXPECT_EQ(seen[0].size(), 24u);
    EXPECT_EQ(seen[1].size(), 10u);
    EXPECT_EQ(groups, 6u);
  }
  // Deterministic and resumable like the ungrouped stream.
  BatchStream again({24, 10}, 8, 3, g);
  EXPECT_EQ(again.plan(1), s.plan(1));
  // Inactive grouping = the ungrouped plan, bit for bit.
  Grouping off = g;
  off.group_size = 1;
  EXPECT_EQ(BatchStream({24, 10}, 8, 3, off).plan(0), BatchStream({24, 10}, 8, 3).plan(0));
  EXPECT_NE(s.plan(0), BatchStream({24, 10}, 8, 3).plan(0));
  // Keys that do not match the datasets are refused.
  Grouping wrong = g;
  wrong.keys.pop_back();
  EXPECT_THROW(BatchStream({24, 10}, 8, 3, wrong), std::invalid_argument);
  wrong = g;
  wrong.keys[1].pop_back();
  EXPECT_THROW(BatchStream({24, 10}, 8, 3, wrong), std::invalid_argument);
}

TEST(BatchStream, GroupsStayAlignedInTheShortLastBatchAndAGroupedStreamResumes) {
  // 22 examples, key i % 5: keys 0 and 1 have five members (a group and one left over), keys
  // 2-4 four. Batches of 8 in groups of 4: 8 + 8 + 6; the two leftovers close the batch of 6.
  Grouping g;
  g.group_size = 4;
  g.keys.resize(1);
  for (std::uint32_t i = 0; i < 22; ++i) g.keys[0].push_back({i % 5});
  BatchStream s({22}, 8, 9, g);
  for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
    std::size_t short_batches = 0;
    for (const BatchRef& b : s.plan(epoch)) {
      const std::size_t full = b.examples.size() == 6 ? 4 : 8;
      short_batches += b.examples.size() == 6 ? 1 : 0;
      for (std::size_t k = 0; k < full; ++k) {
        EXPECT_EQ(b.examples[k] % 5, b.examples[k - k % 4] % 5) << "epoch " << epoch;
      }
      if (b.examples.size() == 6) {
        EXPECT_LE(b.examples[4] % 5, 1u);  // the leftovers of keys 0 and 1
        EXPECT_LE(b.examples[5] % 5, 1u);
        EXPECT_NE(b.examples[4] % 5, b.examples[5] % 5);
      }
    }
    EXPECT_EQ(short_batches, 1u);
  }
  // seek() resumes the grouped plan where it stopped, across an epoch boundary.
  std::vector<BatchRef> expected;
  StreamPosition mid;
  for (int i = 0; i < 10; ++i) {
    if (i == 4) mid = s.position();
    expected.push_back(s.next());
  }
  BatchStream resumed({22}, 8, 9, g);
  resumed.seek(mid);
  for (int i = 4; i < 10; ++i) EXPECT_EQ(resumed.next(), expected[i]) << "batch " << i;
}

TEST(BatchStream, AnExampleWithTwoKeysIsGroupedByEitherAcrossEpochs) {
  // Example 0 has keys 1 and 2; example 1 has key 1, example 2 key 2. In pairs, 0 joins the
  // one its drawn key names and the other is left alone, last.
  Grouping g;
  g.group_size = 2;
  g.keys = {{{1, 2}, {1}, {2}}};
  BatchStream s({3}, 2, 17, g);
  std::set<std::size_t> partners;
  for (std::uint64_t epoch = 0; epoch < 32; ++epoch) {
    const std::vector<BatchRef> plan = s.plan(epoch);
    ASSERT_EQ(plan.size(), 2u);
    const BatchRef& pair = plan[0].examples.size() == 2 ? plan[0] : plan[1];
    ASSERT_EQ(pair.examples.size(), 2u);
    ASSERT_TRUE(pair.examples[0] == 0 || pair.examples[1] == 0);
    partners.insert(pair.examples[0] == 0 ? pair.examples[1] : pair.examples[0]);
  }
  EXPECT_EQ(partners, (std::set<std::size_t>{1, 2}));
}

}  // namespace
}  // namespace dialtree::trainer
