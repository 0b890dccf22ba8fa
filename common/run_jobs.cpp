#include "common/run_jobs.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>

namespace dialtree {

void run_jobs(const std::vector<std::function<void()>>& jobs, int threads) {
  std::size_t n = threads > 0 ? static_cast<std::size_t>(threads)
                              : std::max(1u, std::thread::hardware_concurrency());
  n = std::min(n, jobs.size());
  std::vector<std::exception_ptr> errors(jobs.size());
  auto run_one = [&](std::size_t i) {
    try {
      jobs[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (n <= 1) {
    for (std::size_t i = 0; i < jobs.size(); ++i) run_one(i);
  } else {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < n; ++t) {
      pool.emplace_back([&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) run_one(i);
      });
    }
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace dialtree
