// Multi-view score: the worked example of docs/method.md §3.6 and properties of §3.2–3.5.
#include <optional>
#include <random>

#include <gtest/gtest.h>

#include "sts/score.h"

namespace dialtree::sts {
namespace {

Tree example_t1() {
  Tree t;
  t.add_value("hotel", "inform", "area", {"centre", std::nullopt});
  t.add_value("hotel", "inform", "pricerange", {"cheap", std::nullopt});
  return t;
}

Tree example_t2() {
  Tree t;
  t.add_value("hotel", "inform", "area", {"north", std::nullopt});
  t.add_value("hotel", "request", "phone", {"?", std::nullopt});
  return t;
}

Tree intent_only(const std::string& intent) {
  Tree t;
  t.add_intent(kDefaultDomain, intent);
  return t;
}

TEST(Score, WorkedExampleOfSpace2Section36) {
  const ViewScores s = score_views(example_t1(), example_t2());
  const double expected[kNumViews] = {1, 0.5, 1.0 / 3, 0, 0.5, 1.0 / 3, 0, 1.0 / 3, 0, 0};
  for (std::size_t k = 0; k < kNumViews; ++k) {
    EXPECT_NEAR(s.jaccard[k], expected[k], 1e-12) << view_names()[k];
    EXPECT_TRUE(s.defined[k]) << view_names()[k];
  }
  EXPECT_NEAR(combined_score(example_t1(), example_t2()), 0.30, 1e-12);
}

TEST(Score, ViewSetsOfWorkedExample) {
  const ViewSets v = view_sets(example_t2());
  using V = std::vector<std::string>;
  EXPECT_EQ(v.sets[static_cast<int>(View::I)], (V{"inform", "request"}));
  EXPECT_EQ(v.sets[static_cast<int>(View::SV)], (V{"area-north", "phone-?"}));
  EXPECT_EQ(v.sets[static_cast<int>(View::DISV)],
            (V{"hotel-inform-area-north", "hotel-request-phone-?"}));
}

TEST(Score, IntentOnlyTreesUsePlaceholders) {
  const ViewScores same = score_views(intent_only("card_arrival"), intent_only("card_arrival"));
  for (std::size_t k = 0; k < kNumViews; ++k) {
    EXPECT_EQ(same.jaccard[k], k == static_cast<std::size_t>(View::I) ? 1.0 : 0.0)
        << view_names()[k];
    EXPECT_EQ(same.defined[k], k == static_cast<std::size_t>(View::I)) << view_names()[k];
  }
  EXPECT_EQ(combined_score(intent_only("card_arrival"), intent_only("card_arrival")), 1.0);
  const ViewScores other = score_views(intent_only("card_arrival"), intent_only("lost_card"));
  for (double j : other.jaccard) EXPECT_EQ(j, 0.0);
  EXPECT_EQ(combined_score(intent_only("card_arrival"), intent_only("lost_card")), 0.0);
}

TEST(Score, CleaningStripsAndLowerCases) {
  Tree a, b;
  a.add_value(" Hotel ", "INFORM", "Area", {"Centre", std::nullopt});
  b.add_value("hotel", "inform", "area", {"centre ", std::nullopt});
  const ViewScores s = score_views(a, b);
  for (double j : s.jaccard) EXPECT_EQ(j, 1.0);
  EXPECT_EQ(combined_score(a, b), 1.0);
}

TEST(Score, EmptyTreesScoreZeroAndFixUpEmptiesLabels) {
  Tree empty;
  EXPECT_EQ(combined_score(empty, example_t1()), 0.0);
  EXPECT_EQ(combined_score(empty, empty), 0.0);  // off-diagonal: empty scores 0 with anything
  // Fix-up (§2.1): DEFAULT_INTENT without slots empties the whole label.
  Tree t;
  t.add_intent("restaurant", kDefaultIntent);
  t.add_value("restaurant", "inform", "food", {"thai", std::nullopt});
  EXPECT_TRUE(fix_up(t).empty());
  EXPECT_TRUE(view_sets(t).empty_tree);
  Tree no_intents;
  no_intents.domains["hotel"];
  EXPECT_TRUE(fix_up(no_intents).empty());
  EXPECT_FALSE(fix_up(example_t1()).empty());
}

TEST(Score, SlotNamesSharedAcrossDomainsInSButNotInDis) {
  Tree a, b;
  a.add_value("hotel", "inform", "area", {"north", std::nullopt});
  b.add_value("restaurant", "inform", "area", {"north", std::nullopt});
  const ViewScores s = score_views(a, b);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::S)], 1.0);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::ISV)], 1.0);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::D)], 0.0);
  EXPECT_EQ(s.jaccard[static_cast<int>(View::DIS)], 0.0);
}

// A random tree over a small vocabulary, so that overlaps are frequent.
Tree random_tree(std::mt19937& rng) {
  const char* domains[] = {"hotel", "train", kDefaultDomain};
  const char* intents[] = {"inform", "request", kDefaultIntent};
  const char* slots[] = {"area", "day", "price"};
  const char* values[] = {"north", "monday", "cheap", "2"};
  std::uniform_int_distribution<int> pick3(0, 2), pick4(0, 3), count(0, 3);
  Tree t;
  for (int n = count(rng); n > 0; --n) {
    const std::string d = domains[pick3(rng)], i = intents[pick3(rng)];
    const int ns = count(rng);
    if (ns == 0) t.add_intent(d, i);
    for (int s = 0; s < ns; ++s) t.add_value(d, i, slots[pick3(rng)], {values[pick4(rng)], {}});
  }
  return t;
}

TEST(Score, PropertiesOnRandomTrees) {
  std::mt19937 rng(7);
  std::vector<Tree> trees;
  for (int n = 0; n < 64; ++n) trees.push_back(random_tree(rng));
  const BatchScores b = batch_scores(trees);
  ASSERT_EQ(b.batch_size(), trees.size());
  for (std::size_t k = 0; k < kNumViews; ++k) {
    const ScoreMatrix& m = b.views[k];
    EXPECT_TRUE(m.isApprox(m.transpose())) << view_names()[k];             // symmetry
    for (Eigen::Index i = 0; i < m.rows(); ++i) EXPECT_EQ(m(i, i), 1.0f);  // diagonal 1
    EXPECT_GE(m.minCoeff(), 0.0f);
    EXPECT_LE(m.maxCoeff(), 1.0f);
  }
  for (std::size_t i = 0; i < trees.size(); ++i) {
    for (std::size_t j = 0; j < trees.size(); ++j) {
      EXPECT_DOUBLE_EQ(combined_score(trees[i], trees[j]), combined_score(trees[j], trees[i]));
    }
    // A non-empty tree's defined views score 1 against itself.
    const ViewScores self = score_views(trees[i], trees[i]);
    for (std::size_t k = 0; k < kNumViews; ++k) {
      EXPECT_EQ(self.jaccard[k], self.defined[k] ? 1.0 : 0.0);
    }
  }
}

TEST(Score, BatchLayoutBbk) {
  const BatchScores b = batch_scores(std::vector<Tree>{example_t1(), example_t2()});
  const std::vector<float> bbk = b.to_bbk();
  ASSERT_EQ(bbk.size(), 2u * 2u * kNumViews);
  // (i=0, j=1, k=I) and (i=1, j=0, k=S)
  EXPECT_FLOAT_EQ(bbk[(0 * 2 + 1) * kNumViews + static_cast<int>(View::I)], 0.5f);
  EXPECT_FLOAT_EQ(bbk[(1 * 2 + 0) * kNumViews + static_cast<int>(View::S)], 1.0f / 3);
  EXPECT_FLOAT_EQ(bbk[(1 * 2 + 1) * kNumViews + static_cast<int>(View::V)], 1.0f);
  const ScoreMatrix c = batch_combined(
      std::vector<ViewSets>{view_sets(example_t1()), view_sets(example_t2()), view_sets({})});
  EXPECT_FLOAT_EQ(c(0, 1), 0.3f);
  EXPECT_FLOAT_EQ(c(2, 2), 1.0f);
  EXPECT_FLOAT_EQ(c(0, 2), 0.0f);
}

// find_view: a name to its index in View order, nothing for anything else.
TEST(Views, FindViewGivesTheIndexInViewOrder) {
  EXPECT_EQ(find_view("D"), std::optional<std::size_t>(0));
  EXPECT_EQ(find_view("SV"), std::optional<std::size_t>(static_cast<std::size_t>(View::SV)));
  EXPECT_EQ(find_view("DISV"), std::optional<std::size_t>(9));
  EXPECT_FALSE(find_view("sv").has_value());
  EXPECT_FALSE(find_view("").has_value());
}

}  // namespace
}  // namespace dialtree::sts
