// A small fixed pool of threads for independent jobs: the probe's fits (eval/probe.h) run side
// by side through it. Torch-free.
#pragma once

#include <functional>
#include <vector>

namespace dialtree {

/// Runs every job of `jobs` on up to `threads` threads (0 or less: std::thread::
/// hardware_concurrency(), at least 1; never more threads than jobs), each job on one thread,
/// the calling thread waiting; with one thread they run in order on the calling thread. Jobs
/// are taken in index order as threads come free. If the jobs write disjoint outputs, the
/// results do not depend on the thread count. Every job runs even when one throws; afterwards
/// the exception of the lowest-indexed job that threw is rethrown. Returns when all are done.
void run_jobs(const std::vector<std::function<void()>>& jobs, int threads);

}  // namespace dialtree
