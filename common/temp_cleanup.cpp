#include "common/temp_cleanup.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace dialtree {

namespace {

// Slot states.
constexpr int kFree = 0;
constexpr int kBusy = 1;  // being filled in or emptied
constexpr int kFile = 2;
constexpr int kDirectory = 3;

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxTempPathBytes + 1] = {};
};

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

Slot g_slots[kMaxTempPaths];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Removes what is registered: files first, then the (by now empty) directories.
void remove_registered() noexcept {
  for (int pass = 0; pass < 2; ++pass) {
    const int want = pass == 0 ? kFile : kDirectory;
    for (Slot& s : g_slots) {
      int expected = want;
      // Claim the slot so that nobody rewrites the path while we use it.
      if (!s.state.compare_exchange_strong(expected, kBusy)) continue;
      if (want == kFile) {
        ::unlink(s.path);
      } else {
        ::rmdir(s.path);
      }
      s.state.store(kFree);
    }
  }
}

extern "C" void cleanup_handler(int sig) {
  const int saved_errno = errno;
  remove_registered();
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  errno = saved_errno;
  // Still blocked while this handler runs: delivered, with its default action, on return.
  ::raise(sig);
}

}  // namespace

int register_temp_path(const char* path, TempKind kind) noexcept {
  if (path == nullptr) return -1;
  const std::size_t len = std::strlen(path);
  if (len == 0 || len > kMaxTempPathBytes) return -1;
  for (std::size_t i = 0; i < kMaxTempPaths; ++i) {
    Slot& s = g_slots[i];
    int expected = kFree;
    if (!s.state.compare_exchange_strong(expected, kBusy)) continue;
    std::memcpy(s.path, path, len + 1);
    s.state.store(kind == TempKind::File ? kFile : kDirectory);
    return static_cast<int>(i);
  }
  return -1;
}

void unregister_temp_path(int slot) noexcept {
  if (slot < 0 || static_cast<std::size_t>(slot) >= kMaxTempPaths) return;
  Slot& s = g_slots[slot];
  // Wait out a signal handler that is removing this very path on another thread.
  for (;;) {
    int st = s.state.load();
    if (st == kFree) return;
    if (st != kBusy && s.state.compare_exchange_strong(st, kFree)) return;
  }
}

std::size_t registered_temp_path_count() noexcept {
  std::size_t n = 0;
  for (const Slot& s : g_slots) {
    const int st = s.state.load();
    n += st == kFile || st == kDirectory;
  }
  return n;
}

void install_temp_cleanup_signal_handlers() {
  for (int sig : kSignals) {
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) != 0) {
      throw std::runtime_error("sigaction(" + std::to_string(sig) +
                               ") failed: " + std::strerror(errno));
    }
    if (old.sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup: keep ignoring it
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = cleanup_handler;
    sigemptyset(&sa.sa_mask);
    for (int other : kSignals) sigaddset(&sa.sa_mask, other);  // one cleanup at a time
    sa.sa_flags = 0;
    if (::sigaction(sig, &sa, nullptr) != 0) {
      throw std::runtime_error("sigaction(" + std::to_string(sig) +
                               ") failed: " + std::strerror(errno));
    }
  }
}

}  // namespace dialtree
