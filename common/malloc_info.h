// Which malloc this process runs on (docs/build.md P13). Torch-free; jemalloc is found at run time
// (its mallctl()), so nothing that calls this needs to link it.
#pragma once

#include <cstdint>
#include <string>

namespace dialtree {

/// "jemalloc <version>, dirty_decay_ms <n>" when jemalloc is this process's malloc (the
/// dialtree-torch executable and the benchmarks link it; n is -1 when freed pages are kept, as
/// `dialtree train` runs), else "glibc" (test binaries, sanitizer builds). Never throws.
std::string malloc_implementation();

/// Hands the pages that jemalloc holds freed back to the kernel, in every arena
/// (`arena.<all>.purge`), which also merges the freed extents it keeps. With freed pages kept
/// (`dirty_decay_ms:-1`) and allocation sizes that change every step (fine-tuning's packed
/// batches), the kept extents fragment and the resident set grows without bound; calling this
/// every few dozen steps bounds it at the price of faulting the next step's pages in once
/// (docs/build.md P13). Returns false, doing nothing, when the process does not run on jemalloc.
/// Never throws.
bool release_free_memory();

/// This process's resident set in bytes now (Linux: /proc/self/statm's resident pages times the
/// page size), for training logs that show whether memory grows (docs/build.md P13). Returns -1
/// where that file cannot be read or parsed. Never throws.
std::int64_t resident_set_bytes();

/// Optimiser steps between two release_free_memory() calls of a training loop (fine-tuning's
/// and pretraining's), which run with freed pages kept: every 50 steps kept their resident sets
/// flat at a few percent of the step's speed (docs/build.md P13).
inline constexpr std::int64_t kReleaseFreeMemoryEverySteps = 50;

}  // namespace dialtree
