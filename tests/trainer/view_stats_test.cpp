// trainer/view_stats.h: the per-view figures of the soft targets, worked by hand on one batch of
// four trees (docs/method.md §3: Jaccard per view; an empty tree scores 0 against all).
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sts/score.h"
#include "sts/tree.h"
#include "trainer/view_stats.h"

namespace dialtree::trainer {
namespace {

PretrainExample example(const char* tree) {
  PretrainExample e;
  e.views = sts::view_sets(sts::tree_from_json(nlohmann::json::parse(tree)));
  return e;
}

TEST(ViewStats, OneBatchOfFourTreesKnownAnswers) {
  PretrainDataset d;
  d.name = "toy";
  d.examples = {example(R"({"bank": {"transfer": {"amount": ["5"]}}})"),
                example(R"({"bank": {"transfer": {"amount": ["9"]}}})"),
                example(R"({"bank": {"balance": {}}})"), example("{}")};
  const BatchViewStats s = batch_view_stats({d}, 4, 0, 1, 7);
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.anchors, 4u);
  EXPECT_DOUBLE_EQ(s.mean_shard_size, 4.0);
  ASSERT_EQ(s.views.size(), 10u);
  const ViewStats& dom = s.views[0];  // D: the three bank trees pull each other, Jaccard 1
  EXPECT_EQ(dom.view, "D");
  EXPECT_DOUBLE_EQ(dom.positives_per_anchor, 1.5);
  EXPECT_DOUBLE_EQ(dom.target_mass, 1.5);
  EXPECT_DOUBLE_EQ(dom.anchors_without_positive, 0.25);
  EXPECT_DOUBLE_EQ(dom.empty_sets, 0.25);
  const ViewStats& intent = s.views[1];  // I: the two transfers
  EXPECT_EQ(intent.view, "I");
  EXPECT_DOUBLE_EQ(intent.positives_per_anchor, 0.5);
  EXPECT_DOUBLE_EQ(intent.anchors_without_positive, 0.5);
  const ViewStats& slot = s.views[2];  // S: "amount" twice; balance has no slot
  EXPECT_DOUBLE_EQ(slot.positives_per_anchor, 0.5);
  EXPECT_DOUBLE_EQ(slot.empty_sets, 0.5);
  const ViewStats& value = s.views[3];  // V: "5" and "9" share nothing
  EXPECT_DOUBLE_EQ(value.positives_per_anchor, 0.0);
  EXPECT_DOUBLE_EQ(value.anchors_without_positive, 1.0);
  // Shards of 2 split the batch: fewer candidates, never more positives.
  const BatchViewStats sharded = batch_view_stats({d}, 4, 2, 1, 7);
  EXPECT_DOUBLE_EQ(sharded.mean_shard_size, 2.0);
  EXPECT_LE(sharded.views[0].positives_per_anchor, 1.0);
  EXPECT_THROW(batch_view_stats({d}, 4, 0, 0, 7), std::invalid_argument);
  EXPECT_THROW(batch_view_stats({d}, 0, 0, 1, 7), std::invalid_argument);
}

// Batches drawn to share values (docs/training.md "Batches that share values"): eight bookings,
// each time value twice; in pairs grouped by V, every anchor's shard partner shares its value.
TEST(ViewStats, BatchesGroupedByValueGiveEveryAnchorAValuePositive) {
  PretrainDataset d;
  d.name = "toy";
  for (const char* time : {"1", "2", "3", "4", "1", "2", "3", "4"}) {
    d.examples.push_back(example(
        (std::string(R"({"travel": {"book": {"time": [")") + time + R"("]}}})").c_str()));
  }
  const Grouping by_value = view_grouping({d}, "V", 2);
  ASSERT_TRUE(by_value.active());
  ASSERT_EQ(by_value.keys.size(), 1u);
  EXPECT_EQ(by_value.keys[0][0], by_value.keys[0][4]);  // the same value, one id
  EXPECT_NE(by_value.keys[0][0], by_value.keys[0][1]);
  const BatchViewStats grouped = batch_view_stats({d}, 8, 2, 4, 7, by_value);
  const ViewStats& v = grouped.views[3];
  EXPECT_EQ(v.view, "V");
  EXPECT_DOUBLE_EQ(v.positives_per_anchor, 1.0);
  EXPECT_DOUBLE_EQ(v.anchors_without_positive, 0.0);
  EXPECT_DOUBLE_EQ(grouped.views[6].positives_per_anchor, 1.0);  // SV: the same slot and value
  const BatchViewStats random = batch_view_stats({d}, 8, 2, 4, 7);
  EXPECT_LT(random.views[3].positives_per_anchor, 1.0);
  // Off, and refused.
  EXPECT_FALSE(view_grouping({d}, "", 2).active());
  EXPECT_FALSE(view_grouping({d}, "V", 1).active());
  EXPECT_THROW(view_grouping({d}, "X", 2), std::invalid_argument);
}

}  // namespace
}  // namespace dialtree::trainer
