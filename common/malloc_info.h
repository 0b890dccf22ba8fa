// Which malloc this process runs on (docs/build.md P13). Torch-free; jemalloc is found at run time
// (its mallctl()), so nothing that calls this needs to link it.
#pragma once

#include <string>

namespace dialtree {

/// "jemalloc <version>, dirty_decay_ms <n>" when jemalloc is this process's malloc (the
/// dialtree-torch executable and the benchmarks link it; n is -1 when freed pages are kept, as
/// `dialtree train` runs), else "glibc" (test binaries, sanitizer builds). Never throws.
std::string malloc_implementation();

}  // namespace dialtree
