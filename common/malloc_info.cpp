// malloc_info.h: asks jemalloc through its mallctl(), when the process has one.
#include "common/malloc_info.h"

#include <dlfcn.h>
#include <sys/types.h>

#include <cstddef>

namespace dialtree {
namespace {

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

Mallctl find_mallctl() {
  return reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
}

}  // namespace

std::string malloc_implementation() {
  const Mallctl mallctl = find_mallctl();
  if (mallctl == nullptr) return "glibc";
  const char* version = nullptr;
  std::size_t size = sizeof(version);
  std::string text = "jemalloc";
  if (mallctl("version", &version, &size, nullptr, 0) == 0 && version != nullptr) {
    text += std::string(" ") + version;
  }
  ssize_t decay = 0;
  size = sizeof(decay);
  if (mallctl("arenas.dirty_decay_ms", &decay, &size, nullptr, 0) == 0) {
    text += ", dirty_decay_ms " + std::to_string(decay);
  }
  return text;
}

bool release_free_memory() {
  static const Mallctl mallctl = find_mallctl();  // called every 50 fine-tuning steps
  if (mallctl == nullptr) return false;
  // 4096 is MALLCTL_ARENAS_ALL of jemalloc 5's public header: every arena at once.
  return mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
}

}  // namespace dialtree
