// trainer/health.h and trainer/launcher.h: the straggler rule, the hang timeout, the fault
// injection switches and the restart helpers (docs/training.md "Health checks"). The newest
// checkpoint a restart takes: tests/trainer/run_dir_test.cpp.
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "trainer/health.h"
#include "trainer/launcher.h"

namespace dialtree::trainer {
namespace {

using ::testing::HasSubstr;

TEST(StragglerDetector, TwoRanksTheSlowOneIsReportedAfterTheGivenWindowsInARow) {
  StragglerDetector d(2, 1.5, 2);
  EXPECT_TRUE(d.update({1.0, 1.1}).empty());  // within the ratio
  EXPECT_TRUE(d.update({1.0, 3.0}).empty());  // first outlier window: not yet
  const auto found = d.update({1.0, 3.1});    // second in a row: reported
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 1);
  EXPECT_DOUBLE_EQ(found[0].seconds, 3.1);
  EXPECT_DOUBLE_EQ(found[0].peer_seconds, 1.0);
  EXPECT_DOUBLE_EQ(found[0].ratio, 3.1);
  EXPECT_EQ(found[0].windows, 2);
  EXPECT_EQ(d.update({1.0, 2.9}).at(0).windows, 3);  // reported again while it stays one
  EXPECT_TRUE(d.update({1.0, 1.2}).empty());         // recovered: the streak ends
  EXPECT_TRUE(d.update({1.0, 3.0}).empty());         // a new streak starts from 1
}

TEST(StragglerDetector, ManyRanksCompareEachWithTheMedianOfItsPeers) {
  StragglerDetector d(5, 1.5, 1);
  // Rank 3 is 2x the others; rank 0 is fast, which is not a fault.
  const auto found = d.update({0.4, 1.0, 1.1, 2.0, 0.9});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 3);
  EXPECT_DOUBLE_EQ(found[0].peer_seconds, 0.95);  // median of 0.4, 1.0, 1.1, 0.9
  // One rank alone has no peers.
  StragglerDetector alone(1, 1.5, 1);
  EXPECT_TRUE(alone.update({5.0}).empty());
  // 2.5x, but 15 ms apart: noise on tiny steps, not a straggler.
  StragglerDetector tiny(2, 1.5, 1);
  EXPECT_TRUE(tiny.update({0.010, 0.025}).empty());
  EXPECT_THROW(d.update({1.0}), std::invalid_argument);
  EXPECT_THROW(StragglerDetector(2, 1.0, 1), std::invalid_argument);
  EXPECT_THROW(StragglerDetector(2, 1.5, 0), std::invalid_argument);
}

TEST(Health, MedianAndHangTimeout) {
  EXPECT_DOUBLE_EQ(median_of({}), 0.0);
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(hang_timeout_seconds(0.0, 20, 60, 1800), 1800);  // nothing measured yet
  EXPECT_DOUBLE_EQ(hang_timeout_seconds(0.5, 20, 60, 1800), 60);    // floor
  EXPECT_DOUBLE_EQ(hang_timeout_seconds(10, 20, 60, 1800), 200);
}

TEST(FaultPlan, ParsesEveryKeyAndRejectsBadItemsNamingThem) {
  EXPECT_FALSE(parse_fault_plan("").applies_to(0));
  const FaultPlan p = parse_fault_plan("rank=1,slow_ms=250.5,kill_at_step=7");
  EXPECT_TRUE(p.applies_to(1));
  EXPECT_FALSE(p.applies_to(0));
  EXPECT_DOUBLE_EQ(p.slow_ms, 250.5);
  EXPECT_EQ(p.kill_at_step, 7);
  EXPECT_EQ(p.hang_at_step, 0);
  const FaultPlan q = parse_fault_plan("hang_at_step=3,rank=0,skip_collective_at_step=2");
  EXPECT_EQ(q.hang_at_step, 3);
  EXPECT_EQ(q.skip_collective_at_step, 2);
  auto message = [](const std::string& text) {
    try {
      parse_fault_plan(text);
    } catch (const DataError& e) {
      EXPECT_EQ(e.field(), "DIALTREE_FAULT");
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("rank=1,slow=3"), HasSubstr("item 'slow=3': unknown key 'slow'"));
  EXPECT_THAT(message("rank=1,kill_at_step=0"), HasSubstr("'0' is not an integer in [1,"));
  EXPECT_THAT(message("rank=x"), HasSubstr("item 'rank=x': 'x' is not an integer"));
  EXPECT_THAT(message("slow_ms=5"), HasSubstr("names no rank"));
  EXPECT_THAT(message("rank=1,rank=2"), HasSubstr("key given twice"));
  EXPECT_THAT(message("rank=1,"), HasSubstr("item 2 is empty"));
  EXPECT_THAT(message("rank=1,,kill_at_step=3"), HasSubstr("item 2 is empty"));
  EXPECT_THAT(message("rank=1,kill"), HasSubstr("item 'kill': expected key=value"));
  EXPECT_THAT(message("rank=1,slow_ms=-4"), HasSubstr("is not a number in [0,"));
}

TEST(Launcher, DescribeExit) {
  EXPECT_EQ(describe_exit(W_EXITCODE(1, 0)), "exited with status 1");
  EXPECT_EQ(describe_exit(W_EXITCODE(75, 0)), "exited with status 75 (its hang watchdog fired)");
  EXPECT_EQ(describe_exit(W_EXITCODE(0, SIGKILL)), "was killed by signal 9 (SIGKILL)");
}

}  // namespace
}  // namespace dialtree::trainer
