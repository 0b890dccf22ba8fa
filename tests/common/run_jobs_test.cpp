// common/run_jobs.h: every job runs once on any number of threads, one thread runs them in order
// on the caller's, several run side by side, and the lowest-indexed job's exception comes back
// after all have run.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/run_jobs.h"

namespace dialtree {
namespace {

TEST(RunJobs, RunsEveryJobOnceWhateverTheThreadCount) {
  for (const int threads : {-1, 0, 1, 2, 3, 16}) {
    for (const std::size_t count : {0u, 1u, 5u, 100u}) {
      std::vector<int> runs(count, 0);
      std::vector<std::function<void()>> jobs;
      for (std::size_t i = 0; i < count; ++i) jobs.emplace_back([&runs, i] { ++runs[i]; });
      run_jobs(jobs, threads);
      EXPECT_EQ(runs, std::vector<int>(count, 1)) << threads << " threads, " << count << " jobs";
    }
  }
}

TEST(RunJobs, OneThreadRunsTheJobsInOrderOnTheCaller) {
  std::vector<std::size_t> order;
  std::vector<std::thread::id> where;
  std::vector<std::function<void()>> jobs;
  for (std::size_t i = 0; i < 4; ++i) {
    jobs.emplace_back([&, i] {
      order.push_back(i);
      where.push_back(std::this_thread::get_id());
    });
  }
  run_jobs(jobs, 1);
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3}));
  for (const auto& id : where) EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(RunJobs, SeveralThreadsRunJobsSideBySide) {
  // Each job waits (up to 20 s) until both have started: only two threads get both through.
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  const auto meet = [&] {
    ++started;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (started.load() >= 2) ++met;
  };
  run_jobs({meet, meet}, 2);
  EXPECT_EQ(met.load(), 2);
}

TEST(RunJobs, RethrowsTheLowestIndexedJobsExceptionAfterAllHaveRun) {
  for (const int threads : {1, 4}) {
    std::atomic<int> ran{0};
    std::vector<std::function<void()>> jobs;
    for (int i = 0; i < 10; ++i) {
      jobs.emplace_back([&ran, i] {
        ++ran;
        if (i == 3 || i == 7) throw std::runtime_error("job " + std::to_string(i));
      });
    }
    try {
      run_jobs(jobs, threads);
      ADD_FAILURE() << "no exception, " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "job 3") << threads << " threads";
    }
    EXPECT_EQ(ran.load(), 10) << threads << " threads";
  }
}

}  // namespace
}  // namespace dialtree
