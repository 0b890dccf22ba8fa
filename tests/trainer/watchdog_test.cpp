// The hang watchdog's rules (docs/training.md "Hangs") over an in-memory store: each rule's
// finding, word for word where it matters, and the thread running beside busy main threads
// without a false finding (the guard build runs this file under ThreadSanitizer).
#include "trainer/watchdog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace dialtree::trainer {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// The job's key-value store, shared by the ranks of one test; `down` makes it unreachable.
class MemoryStore final : public StatusStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (down_) throw std::runtime_error("Connection refused");
    kv_[key] = value;
  }
  std::optional<std::string> get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (down_) throw std::runtime_error("Connection refused");
    const auto it = kv_.find(key);
    if (it == kv_.end()) return std::nullopt;
    return it->second;
  }
  void take_down() {
    std::lock_guard<std::mutex> lock(mu_);
    down_ = true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> kv_;
  bool down_ = false;
};

const std::vector<std::string> kHosts = {"host-a", "host-b"};

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// A 2-rank job's watchdogs over one in-memory store, polled by hand.
class Watchdog : public ::testing::Test {
 protected:
  // Rank r, in compute phase `phase`, with ddp_timeout `fixed` and hang timeout `hang`
  // (seconds; 0 leaves it at ddp_timeout). Findings go nowhere: poll() returns them.
  HangWatchdog& rank(int r, const std::string& phase, double fixed, double hang = 0) {
    ranks_.push_back(
        std::make_unique<HangWatchdog>(r, 2, kHosts, fixed, store_, [](const std::string&) {}));
    if (hang > 0) ranks_.back()->set_hang_timeout(hang);
    ranks_.back()->begin_phase(PhaseKind::Compute, phase);
    return *ranks_.back();
  }
  // Whether w's poll finds nothing after `ms` milliseconds.
  static bool quiet_after(HangWatchdog& w, int ms) {
    sleep_ms(ms);
    return !w.poll();
  }
  // What w's poll finds after `ms` milliseconds ("" and a test failure when nothing).
  static std::string finding_after(HangWatchdog& w, int ms) {
    sleep_ms(ms);
    const auto finding = w.poll();
    EXPECT_TRUE(finding) << "no finding after " << ms << " ms";
    return finding.value_or("");
  }
  // Rank 0's finding when, in step 1, rank 0 waits in collective `what0` and rank 1 in `what1`
  // (their first collective) for 0.1 s, twice the hang timeout.
  std::string both_in_collectives(const char* what0, const char* what1) {
    HangWatchdog& w0 = rank(0, "step 1", 10, 0.05);
    HangWatchdog& w1 = rank(1, "step 1", 10, 0.05);
    HangWatchdog::CollectiveScope s0(w0, what0), s1(w1, what1);
    EXPECT_FALSE(w1.poll());
    return finding_after(w0, 100);
  }
  std::string published(int r) {
    return store_->get("dialtree/health/" + std::to_string(r)).value_or("");
  }

  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>();
  std::vector<std::unique_ptr<HangWatchdog>> ranks_;
};

TEST(HangWatchdog, RejectsBadArguments) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_THROW(HangWatchdog(2, 2, kHosts, 10, store), std::invalid_argument);
  EXPECT_THROW(HangWatchdog(0, 3, kHosts, 10, store), std::invalid_argument);
  EXPECT_THROW(HangWatchdog(0, 2, kHosts, 10, nullptr), std::invalid_argument);
  EXPECT_THROW(HangWatchdog(0, 2, kHosts, 0, store), std::invalid_argument);
  HangWatchdog w(0, 2, kHosts, 10, store);
  EXPECT_THROW(w.set_hang_timeout(0), std::invalid_argument);
  EXPECT_THROW(w.set_hang_timeout(std::nan("")), std::invalid_argument);
}

TEST_F(Watchdog, PublishesThePhaseAndCollectivesRestoreIt) {
  HangWatchdog& w = rank(1, "step 2", 10);
  EXPECT_FALSE(w.poll());
  // "beat seq kind age_ms label": the first beat, no collective yet, Compute = 0.
  EXPECT_THAT(published(1), MatchesRegex("1 0 0 [0-9]+ step 2"));
  {
    HangWatchdog::CollectiveScope scope(w, "sum");
    sleep_ms(30);
    EXPECT_FALSE(w.poll());
    EXPECT_THAT(published(1), MatchesRegex("2 1 1 [0-9]+ sum #1 in step 2"));
  }
  EXPECT_FALSE(w.poll());
  EXPECT_THAT(published(1), MatchesRegex("3 1 0 [0-9]+ step 2"));
  const double s = w.take_collective_seconds();
  EXPECT_GE(s, 0.03);
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(w.take_collective_seconds(), 0.0);
  EXPECT_GE(w.take_health_seconds(), 0.0);
}

TEST_F(Watchdog, AStalledComputePhaseWaitsTwiceTheHangTimeout) {
  HangWatchdog& w = rank(0, "step 7", 10, 0.1);
  EXPECT_TRUE(quiet_after(w, 120));  // beyond the hang timeout, within twice it
  EXPECT_THAT(finding_after(w, 120),
              MatchesRegex("this rank made no progress for [0-9]+\\.[0-9] s in step 7 "
                           "\\(2 x the hang timeout of 0\\.1 s\\)"));
}

TEST_F(Watchdog, ExemptPhasesAreBoundedByDdpTimeoutOnly) {
  HangWatchdog& w = rank(0, "step 4", 0.3, 0.05);
  w.begin_phase(PhaseKind::Exempt, "evaluation after step 4");
  EXPECT_TRUE(quiet_after(w, 150));  // three hang timeouts
  EXPECT_THAT(finding_after(w, 200), HasSubstr("in evaluation after step 4 (ddp_timeout 0 s)"));
}

TEST_F(Watchdog, ACollectiveWaitIsLeftToTheCollectiveUntilAHangTimeoutIsSet) {
  HangWatchdog& w = rank(0, "step 1", 0.05);  // hang timeout = ddp_timeout
  HangWatchdog::CollectiveScope scope(w, "sum");
  EXPECT_TRUE(quiet_after(w, 100));
}

TEST_F(Watchdog, NamesTheRankThatNeverArrivedAndWhereItIs) {
  HangWatchdog& w1 = rank(1, "step 3", 10, 0.1);
  HangWatchdog& w0 = rank(0, "step 3", 10, 0.1);
  HangWatchdog::CollectiveScope scope(w0, "gradient all-reduce");
  sleep_ms(150);
  EXPECT_FALSE(w1.poll());  // 0.15 s of compute: within twice the hang timeout
  EXPECT_THAT(finding_after(w0, 0),
              MatchesRegex("waited [0-9]+\\.[0-9] s in gradient all-reduce #1 in step 3 "
                           "\\(hang timeout 0\\.1 s\\): rank 1 \\(host-b\\) never "
                           "arrived: it has been in step 3 for [0-9]+\\.[0-9] s"));
}

TEST_F(Watchdog, WaitsWhileTheMissingRankStillMoves) {
  HangWatchdog& w0 = rank(0, "step 3", 10, 0.1);
  HangWatchdog::CollectiveScope scope(w0, "gradient all-reduce");
  sleep_ms(150);
  HangWatchdog& w1 = rank(1, "step 3", 10, 0.1);  // it only just started its step
  EXPECT_FALSE(w1.poll());
  EXPECT_FALSE(w0.poll());
}

TEST_F(Watchdog, ARankThatStoppedPublishingIsDeadOrFrozen) {
  HangWatchdog& w1 = rank(1, "step 5", 10, 0.1);
  EXPECT_FALSE(w1.poll());  // published once, then silent
  HangWatchdog& w0 = rank(0, "step 5", 10, 0.1);
  HangWatchdog::CollectiveScope scope(w0, "sum");
  // Rank 1's beat is new to rank 0 and its published age was 0: not yet a finding.
  EXPECT_TRUE(quiet_after(w0, 150));
  EXPECT_THAT(finding_after(w0, 150),
              ContainsRegex("rank 1 \\(host-b\\) never arrived and has published nothing for "
                            "[0-9]+\\.[0-9] s \\(dead or frozen; last seen in step 5\\)"));
}

TEST_F(Watchdog, ARankThatNeverPublishedIsNamed) {
  HangWatchdog& w0 = rank(0, "step 1", 10, 0.05);
  HangWatchdog::CollectiveScope scope(w0, "sum");
  EXPECT_THAT(finding_after(w0, 100), HasSubstr("): rank 1 (host-b) never published its status"));
}

TEST_F(Watchdog, RanksInDifferentCollectivesOfTheSameNumberDisagree) {
  EXPECT_EQ(both_in_collectives("sum", "gradient all-reduce"),
            "rank 1 (host-b) is in collective 'gradient all-reduce #1 in step 1' while this "
            "rank is in 'sum #1 in step 1': the ranks disagree on the order of collectives");
}

TEST_F(Watchdog, EveryRankArrivedButTheCollectiveDidNotComplete) {
  EXPECT_THAT(both_in_collectives("sum", "sum"),
              MatchesRegex("every rank arrived at sum #1 in step 1, but it did not complete in "
                           "[0-9]+\\.[0-9] s \\(hang timeout 0\\.1 s\\)"));
}

TEST_F(Watchdog, AnUnreachableStoreMeansRankZeroStopped) {
  HangWatchdog& w1 = rank(1, "step 9", 10, 0.05);
  HangWatchdog::CollectiveScope scope(w1, "sum");
  store_->take_down();
  EXPECT_FALSE(w1.poll());  // the failed publish is not a finding by itself
  EXPECT_THAT(finding_after(w1, 100),
              HasSubstr("in sum #1 in step 9 (hang timeout 0.1 s), and the TCPStore that rank 0 "
                        "hosts is unreachable: rank 0 (host-a) has stopped"));
}

// Two ranks as threads, each with its watchdog thread: 40 steps of compute and a collective
// (a two-thread rendezvous) without a finding, then rank 1 stalls in a compute phase and rank 0's
// watchdog names it. Under ThreadSanitizer this checks the phase hand-over between the threads.
TEST(HangWatchdog, TheThreadReportsAStalledPeerAndNothingWhileBothMove) {
  auto store = std::make_shared<MemoryStore>();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> findings;  // "<rank>: <why>"
  int arrived = 0, generation = 0;
  bool release_stall = false;
  auto rendezvous = [&] {
    std::unique_lock<std::mutex> lock(mu);
    const int gen = generation;
    if (++arrived == 2) {
      arrived = 0, ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen || release_stall; });
    }
  };
  std::vector<std::unique_ptr<HangWatchdog>> w;
  for (int r = 0; r < 2; ++r) {
    w.push_back(std::make_unique<HangWatchdog>(r, 2, kHosts, 30, store, [&, r](const auto& why) {
      std::lock_guard<std::mutex> lock(mu);
      findings.push_back(std::to_string(r) + ": " + why);
      cv.notify_all();
    }));
    w.back()->set_hang_timeout(1.0);
    w.back()->start();
  }
  constexpr int kSteps = 40;
  auto rank_main = [&](int r) {
    for (int step = 1; step <= kSteps + 1; ++step) {
      w[r]->begin_phase(PhaseKind::Compute, "step " + std::to_string(step));
      sleep_ms(2);
      if (r == 1 && step == kSteps + 1) {  // the stall: until the test releases it
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return release_stall; });
        return;
      }
      HangWatchdog::CollectiveScope scope(*w[r], "gradient all-reduce");
      rendezvous();
      if (r == 0 && step == kSteps + 1) return;  // released after the finding
    }
  };
  std::thread t0(rank_main, 0), t1(rank_main, 1);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return !findings.empty(); });
    release_stall = true;
    cv.notify_all();
  }
  t0.join();
  t1.join();
  w.clear();  // stops the threads before `findings` is read without the lock
  ASSERT_FALSE(findings.empty()) << "no finding within 20 s";
  EXPECT_THAT(findings[0], StartsWith("0: waited "));
  EXPECT_THAT(findings[0], HasSubstr("in gradient all-reduce #41 in step 41 (hang timeout 1.0 s): "
                                     "rank 1 (host-b) never arrived: it has been in step 41 for"));
}

}  // namespace
}  // namespace dialtree::trainer
