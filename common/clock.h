// Wall-clock intervals for logs, metrics and benchmarks: the steady clock, in seconds.
#pragma once

#include <chrono>

namespace dialtree {

/// Seconds (fractional) elapsed on std::chrono::steady_clock since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dialtree
