// The observers of the pretraining loop (trainer/log_window.h, trainer/fault_injection.h): the
// logging window and its checkpoint JSON, the metrics.jsonl records and log lines, and the fault
// switches. The data-parallel health monitor runs in tests/trainer/pretrain_test.cpp's
// two-process runs.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "trainer/fault_injection.h"
#include "trainer/log_window.h"

namespace dialtree::trainer {
namespace {

using ::testing::HasSubstr;

StepEvent event_of(const StepStats& s, std::int64_t step, std::int64_t total) {
  StepEvent e;
  e.step = step, e.total = total, e.stats = &s, e.examples = 8;
  e.grad_norm = 2, e.learning_rate = 1e-4, e.seconds = 0.5, e.train_seconds = 0.5 * step;
  return e;
}

TEST(LogWindow, SumsStepsAndRoundTripsThroughTheCheckpointJson) {
  StepStats s(1);
  s.losses = {1.5, 0.5, 0.25, 2, 3, 0, 0, 0.5};
  s.tokens = 100, s.real_tokens = 75;
  LogWindow w;
  w.add(event_of(s, 1, 10));
  w.add(event_of(s, 2, 10));
  EXPECT_DOUBLE_EQ(w.loss, 3);
  EXPECT_DOUBLE_EQ(w.mlm_u, 6);
  EXPECT_EQ(w.steps, 2);
  EXPECT_EQ(w.examples, 16);
  EXPECT_DOUBLE_EQ(w.real_tokens, 150);
  EXPECT_DOUBLE_EQ(w.encoder_mlm, 1);
  w.rank_compute = {1, 2};
  const LogWindow back = LogWindow::from_json(w.to_json());
  EXPECT_EQ(back.to_json(), w.to_json());
  // A window from a checkpoint older than the padding count, RTD and the health checks.
  const LogWindow old = LogWindow::from_json({{"loss", 1.0},
                                              {"sup", 0.0},
                                              {"self", 0.0},
                                              {"mlm_l", 0.0},
                                              {"mlm_u", 0.0},
                                              {"grad_norm", 1.0},
                                              {"steps", 1},
                                              {"examples", 4},
                                              {"seconds", 0.5}});
  EXPECT_DOUBLE_EQ(old.tokens, 0);
  EXPECT_DOUBLE_EQ(old.encoder_mlm, 0);
  EXPECT_TRUE(old.rank_compute.empty());
  EXPECT_THROW(LogWindow::from_json(nlohmann::json::object()), nlohmann::json::exception);
}

// A reporter that adds one key and one piece of text.
class FixedReporter : public WindowReporter {
 public:
  std::string report(const LogWindow& w, nlohmann::json& record) override {
    record["reported_steps"] = w.steps;
    return "  [reported]";
  }
};

TEST(MetricsLog, WritesTheWindowsMeansEveryLoggingStepsAndAtTheLastStep) {
  LogWindow window;
  std::ostringstream metrics;
  std::vector<std::string> lines;
  FixedReporter reporter;
  MetricsLog log(
      window, &metrics, [&](const std::string& l) { lines.push_back(l); },
      {/*logging_steps=*/2, /*steps_per_epoch=*/4, /*rtd=*/true, /*first_step=*/0,
       /*encoder_mlm=*/true, /*token_contrastive=*/true},
      &reporter);
  StepStats s(1);
  s.losses = {1.5, 0.5, 0.25, 2, 3, 0.75, 0.125, 1.25, 2.5};
  s.tokens = 100, s.real_tokens = 75;
  for (std::int64_t step = 1; step <= 3; ++step) log.after_step(event_of(s, step, 3));
  std::istringstream in(metrics.str());
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 2u);  // steps 2 and 3 (the last)
  EXPECT_EQ(records[0].at("step"), 2);
  EXPECT_DOUBLE_EQ(records[0].at("epoch"), 0.5);
  EXPECT_DOUBLE_EQ(records[0].at("loss"), 1.5);
  EXPECT_DOUBLE_EQ(records[0].at("contrastive"), 0.5);
  EXPECT_DOUBLE_EQ(records[0].at("padded_token_fraction"), 0.25);
  EXPECT_DOUBLE_EQ(records[0].at("examples_per_second"), 16.0);
  EXPECT_DOUBLE_EQ(records[0].at("generator_mlm"), 0.75);
  EXPECT_DOUBLE_EQ(records[0].at("encoder_mlm"), 1.25);
  EXPECT_DOUBLE_EQ(records[0].at("token_contrastive"), 2.5);
  // The process's resident set (Linux): a test binary's, so more than 1 MiB and less than 64 GiB.
  EXPECT_GT(records[0].at("resident_set_mb").get<double>(), 1.0);
  EXPECT_LT(records[0].at("resident_set_mb").get<double>(), 65536.0);
  EXPECT_EQ(records[0].at("reported_steps"), 2);
  EXPECT_EQ(records[1].at("reported_steps"), 1);  // a new window after each record
  EXPECT_EQ(window.steps, 0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("step 2/3  loss 1.5000 (contrastive 0.5000, self 0.2500, "
                                  "mlm 2.000/3.000)  generator mlm 0.750, replaced-token BCE "
                                  "0.1250, encoder mlm 1.250  token 2.5000  lr 1.00e-04  |g| 2.00  16.0 ex/s  padding 25%  "
                                  "[reported]  ETA "));
  EXPECT_THAT(lines[0], ::testing::ContainsRegex("  RSS [0-9]+\\.[0-9][0-9] GB$"));
}

TEST(FaultInjector, AppliesToItsRankOnlyAndChecksTheRank) {
  const FaultPlan plan = parse_fault_plan("rank=1,skip_collective_at_step=3");
  const FaultInjector mine(plan, 1, 2), other(plan, 0, 2);
  EXPECT_TRUE(mine.armed());
  EXPECT_FALSE(other.armed());
  EXPECT_TRUE(mine.skips_collective(3));
  EXPECT_FALSE(mine.skips_collective(2));
  EXPECT_FALSE(other.skips_collective(3));
  EXPECT_THROW(FaultInjector(plan, 0, 1), DataError);  // rank 1 of a 1-rank job
  FaultInjector none(FaultPlan{}, 0, 1);
  none.before_step(1);  // nothing happens
  EXPECT_FALSE(none.armed());
}

TEST(DurationText, MinutesBelowAnHourHoursAbove) {
  EXPECT_EQ(duration_text(187.9), "3m07s");
  EXPECT_EQ(duration_text(3900), "1h05m");
}

}  // namespace
}  // namespace dialtree::trainer
