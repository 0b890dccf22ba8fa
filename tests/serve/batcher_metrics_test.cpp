// serve/batcher.h (dynamic batching by a padded token budget) and serve/metrics.h (Prometheus).
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/batcher.h"
#include "serve/metrics.h"

namespace dialtree::serve {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

struct Item {
  std::size_t tokens;
  int id;
};

/// Records every batch as the list of its item ids.
struct Recorder {
  std::mutex mutex;
  std::vector<std::vector<int>> batches;
  std::atomic<int> items{0};
  void operator()(std::vector<Item>& batch) {
    std::vector<int> ids;
    for (const Item& i : batch) ids.push_back(i.id);
    std::lock_guard<std::mutex> lock(mutex);
    batches.push_back(ids);
    items += static_cast<int>(batch.size());
  }
};

void wait_for(const Recorder& r, int n) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (r.items.load() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
}

TEST(Batcher, PacksInOrderByThePaddedTokenBudget) {
  Recorder rec;
  BatchLimits limits;
  limits.max_batch_tokens = 60;
  limits.max_batch_requests = 100;
  limits.max_wait = 200ms;
  {
    Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); });
    // Padded cost: 3 x 10 = 30, then a 50-token item would make 4 x 50 = 200 > 60: the budget
    // is full, so the first batch leaves at once; 50 + 20 -> 2 x 50 = 100 > 60: 50 alone;
    // then 20 + 20 + 20 = 60 fits exactly.
    b.submit({{10, 0}, {10, 1}, {10, 2}, {50, 3}, {20, 4}, {20, 5}, {20, 6}});
    wait_for(rec, 7);
  }
  EXPECT_EQ(rec.batches, (std::vector<std::vector<int>>{{0, 1, 2}, {3}, {4, 5, 6}}));
}

TEST(Batcher, AnInputOverTheBudgetRunsAloneAndTheCountLimitHolds) {
  Recorder rec;
  BatchLimits limits;
  limits.max_batch_tokens = 16;
  limits.max_batch_requests = 2;
  limits.max_wait = 50ms;
  {
    Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); });
    b.submit({{100, 0}, {1, 1}, {1, 2}, {1, 3}});
    wait_for(rec, 4);
  }
  EXPECT_EQ(rec.batches, (std::vector<std::vector<int>>{{0}, {1, 2}, {3}}));
}

TEST(Batcher, RequestsFromManyClientsShareAForwardPass) {
  Recorder rec;
  BatchLimits limits;
  limits.max_batch_tokens = 1000;
  limits.max_batch_requests = 64;
  limits.max_wait = 300ms;  // long, so all 16 clients arrive inside one window
  {
    Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); });
    std::vector<std::thread> clients;
    for (int c = 0; c < 16; ++c) {
      clients.emplace_back([&b, c] { b.submit({{5, c}}); });
    }
    for (auto& t : clients) t.join();
    wait_for(rec, 16);
  }
  EXPECT_EQ(rec.items.load(), 16);
  EXPECT_LE(rec.batches.size(), 2u);  // one window (two if a thread started very late)
}

TEST(Batcher, ALoneClientWaitsOnlyOnceAndALargerLoadIsWaitedFor) {
  // The first batch waits max_wait for company (the forecast starts at a full batch); once a
  // batch of one has run, a lone client's next input starts at once.
  Recorder rec;
  BatchLimits limits;
  // A long max_wait, so that "at once" (about 1 ms) and "after max_wait" stay apart on a busy
  // machine.
  limits.max_wait = 1000ms;
  Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); });
  auto t0 = std::chrono::steady_clock::now();
  b.submit({{5, 0}});
  wait_for(rec, 1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 950ms);
  t0 = std::chrono::steady_clock::now();
  b.submit({{5, 1}});
  wait_for(rec, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  // Three inputs at once: the forecast (1) is met, they leave together; the next batch is then
  // expected to hold three, so a single input waits for company, and two more that come within
  // max_wait join it.
  b.submit({{5, 2}, {5, 3}, {5, 4}});
  wait_for(rec, 5);
  b.submit({{5, 5}});
  std::this_thread::sleep_for(50ms);
  b.submit({{5, 6}, {5, 7}});
  wait_for(rec, 8);
  b.stop();
  EXPECT_EQ(rec.batches, (std::vector<std::vector<int>>{{0}, {1}, {2, 3, 4}, {5, 6, 7}}));
}

TEST(Batcher, StopRunsWhatIsQueuedWithoutWaitingAndRefusesLaterSubmits) {
  Recorder rec;
  BatchLimits limits;
  limits.max_wait = 10s;  // stop() must not wait for it
  Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); });
  b.submit({{3, 0}, {3, 1}});
  const auto t0 = std::chrono::steady_clock::now();
  b.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(rec.items.load(), 2);
  EXPECT_EQ(b.queue_depth(), 0u);
  EXPECT_THROW(b.submit({{1, 2}}), std::logic_error);
  EXPECT_THROW(Batcher<Item>(BatchLimits{0, 1, 1ms}, [](std::vector<Item>&) {}),
               std::invalid_argument);
}

TEST(Batcher, ARunnerThatThrowsDoesNotEndTheWorker) {
  std::atomic<int> calls{0};
  BatchLimits limits;
  limits.max_batch_requests = 1;
  limits.max_wait = 1ms;
  {
    Batcher<Item> b(limits, [&](std::vector<Item>&) {
      if (calls++ == 0) throw std::runtime_error("boom");
    });
    b.submit({{1, 0}});
    b.submit({{1, 1}});
  }
  EXPECT_EQ(calls.load(), 2);
}

// docs/serving.md "Inference workers": with two workers a second batch starts while the first
// is still running, every input runs exactly once, and the queue still leaves in arrival order.
TEST(Batcher, TwoWorkersRunTwoBatchesAtOnceAndEveryInputOnce) {
  Recorder rec;
  BatchLimits limits;
  limits.max_batch_requests = 2;
  limits.max_wait = 1ms;
  std::mutex mutex;
  std::condition_variable cv;
  int running = 0, most = 0;
  {
    Batcher<Item> b(
        limits,
        [&](std::vector<Item>& batch) {
          {
            std::unique_lock<std::mutex> lock(mutex);
            most = std::max(most, ++running);
            cv.notify_all();
            // The first two batches wait for each other (at most 5 s): with one worker this
            // would time out with most == 1.
            cv.wait_for(lock, 5s, [&] { return most >= 2; });
            --running;
          }
          rec(batch);
        },
        /*workers=*/2);
    std::vector<Item> items;
    for (int i = 0; i < 40; ++i) items.push_back({1, i});
    b.submit(items);
    wait_for(rec, 40);
  }
  EXPECT_EQ(most, 2);
  std::vector<int> seen;
  for (const auto& batch : rec.batches) {
    EXPECT_LE(batch.size(), 2u);
    // Within a batch, arrival order; a batch is two consecutive inputs.
    for (std::size_t k = 1; k < batch.size(); ++k) EXPECT_EQ(batch[k], batch[k - 1] + 1);
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
  EXPECT_THROW(Batcher<Item>(BatchLimits{}, [](std::vector<Item>&) {}, 0), std::invalid_argument);
}

TEST(Batcher, StopWithTwoWorkersDrainsTheQueueAndJoinsBoth) {
  Recorder rec;
  BatchLimits limits;
  limits.max_batch_requests = 3;
  limits.max_wait = 10s;  // stop() must not wait for it
  Batcher<Item> b(limits, [&](std::vector<Item>& batch) { rec(batch); }, 2);
  std::vector<Item> items;
  for (int i = 0; i < 10; ++i) items.push_back({2, i});
  b.submit(items);
  const auto t0 = std::chrono::steady_clock::now();
  b.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(rec.items.load(), 10);
  EXPECT_EQ(b.queue_depth(), 0u);
}

TEST(Metrics, RendersCountersGaugesAndCumulativeHistograms) {
  Metrics m;
  m.record_request("/embed", 200);
  m.record_request("/embed", 200);
  m.record_request("/embed", 400);
  m.observe_batch(3, 30, 0.002);
  m.observe_batch(8, 80, 0.2);
  m.observe_request_duration("/embed", 0.004);
  m.count_cancelled(3);
  const std::string text = m.render(5, 2, 7);
  EXPECT_THAT(text, HasSubstr("dialtree_requests_total{route=\"/embed\",status=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_requests_total{route=\"/embed\",status=\"400\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE dialtree_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_queue_size 5\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_requests_in_flight 2\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_open_connections 7\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_cancelled_inputs_total 3\n"));
  // Batch sizes 3 and 8 in power-of-two buckets: le=2 -> 0, le=4 -> 1, le=8 -> 2, +Inf -> 2.
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_bucket{le=\"2\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_bucket{le=\"4\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_bucket{le=\"8\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_bucket{le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_sum 11\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_batch_size_count 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr("dialtree_request_duration_seconds_bucket{route=\"/embed\",le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("dialtree_request_duration_seconds_count{route=\"/embed\"} 1\n"));
  EXPECT_THROW(Histogram({1.0, 1.0}), std::invalid_argument);
}

// The exposition passes Prometheus' own linter, `promtool check metrics` (Debian's prometheus
// package; scripts/setup.sh installs it): counters end in _total, no counter ends in _count,
// units are base units. promtool reads the text on stdin and prints one line per problem.
TEST(Metrics, PromtoolFindsNothingToLint) {
  Metrics m;
  m.record_request("/embed", 200);
  m.record_request("/v1/embeddings", 422);
  m.observe_batch(3, 30, 0.002);
  m.observe_request_duration("/embed", 0.004);
  m.observe_queue_time(0.001);
  m.observe_input_length(12);
  const std::string path = ::testing::TempDir() + "dialtree-metrics.txt";
  {
    std::ofstream out(path);
    out << m.render(1, 1, 1);
  }
  const std::string command = "promtool check metrics < '" + path + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = ::pclose(pipe);
  std::remove(path.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_NE(WEXITSTATUS(status), 127) << "promtool is not installed (scripts/setup.sh)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace dialtree::serve
