#include "trainer/fault_injection.h"

#include <chrono>
#include <csignal>
#include <thread>

namespace dialtree::trainer {

FaultInjector::FaultInjector(const FaultPlan& plan, int rank, int world)
    : plan_(plan), armed_(plan.applies_to(rank)) {
  check_fault_rank(plan, world);
}

FaultInjector FaultInjector::from_env(int rank, int world) {
  return FaultInjector(fault_plan_from_env(), rank, world);
}

void FaultInjector::before_step(std::int64_t step) {
  if (!armed_) return;
  if (plan_.kill_at_step == step) std::raise(SIGKILL);
  if (plan_.hang_at_step == step) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  if (plan_.slow_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(plan_.slow_ms));
  }
}

bool FaultInjector::skips_collective(std::int64_t step) const {
  return armed_ && plan_.skip_collective_at_step == step;
}

}  // namespace dialtree::trainer
