// Which malloc this process runs on, for logs, /info, env.json and `version --verbose`
// (docs/build.md P13). Torch-free.
#pragma once

#include <string>

namespace dialtree {

/// "jemalloc <version>, dirty_decay_ms <n>" when jemalloc is this process's malloc (the
/// dialtree-torch executable and the benchmarks link it, with freed pages kept: n = -1, unless
/// MALLOC_CONF says otherwise), else "glibc" (test binaries, sanitizer builds). jemalloc is found
/// at run time (its mallctl()), so nothing that calls this needs to link it. Never throws.
std::string malloc_implementation();

}  // namespace dialtree
