// malloc_info.h: asks jemalloc through its mallctl(), when the process has one.
#include "common/malloc_info.h"

#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>

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

std::int64_t resident_set_bytes() {
  std::ifstream in("/proc/self/statm");
  long long size_pages = 0, resident_pages = 0;
  if (!(in >> size_pages >> resident_pages) || resident_pages < 0) return -1;
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::int64_t>(resident_pages) * page : -1;
}

}  // namespace dialtree
