#include "trainer/watchdog.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/core.h>

#include "trainer/health.h"  // kExitHang

namespace dialtree::trainer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string health_key(int rank) {
  return "dialtree/health/" + std::to_string(rank);
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

// A rank's status as published: "beat seq kind age_ms label".
struct HangWatchdog::Status {
  std::int64_t beat = -1, seq = 0;
  PhaseKind kind = PhaseKind::Exempt;
  double age = 0;  // seconds in the current phase when published
  std::string label;

  std::string encode() const {
    return fmt::format("{} {} {} {} {}", beat, seq, static_cast<int>(kind),
                       static_cast<std::int64_t>(age * 1000), label);
  }
  static std::optional<Status> decode(const std::string& text) {
    std::istringstream in(text);
    Status s;
    int kind = 0;
    std::int64_t age_ms = 0;
    if (!(in >> s.beat >> s.seq >> kind >> age_ms) || kind < 0 || kind > 2) return std::nullopt;
    s.kind = static_cast<PhaseKind>(kind);
    s.age = static_cast<double>(age_ms) / 1000.0;
    std::getline(in >> std::ws, s.label);
    return s;
  }
};

HangWatchdog::HangWatchdog(int rank, int world, std::vector<std::string> hosts,
                           double ddp_timeout_seconds, std::shared_ptr<StatusStore> store,
                           OnHang on_hang)
    : rank_(rank),
      world_(world),
      hosts_(std::move(hosts)),
      fixed_(ddp_timeout_seconds),
      store_(std::move(store)),
      on_hang_(std::move(on_hang)),
      hang_timeout_(ddp_timeout_seconds) {
  if (world_ < 1 || rank_ < 0 || rank_ >= world_)
    throw std::invalid_argument(fmt::format("HangWatchdog: rank {} of {}", rank_, world_));
  if (hosts_.size() != static_cast<std::size_t>(world_))
    throw std::invalid_argument(
        fmt::format("HangWatchdog: {} host names for {} ranks", hosts_.size(), world_));
  if (!store_) throw std::invalid_argument("HangWatchdog: no store");
  if (!(fixed_ > 0)) throw std::invalid_argument("HangWatchdog: ddp_timeout must be > 0");
  last_beat_.assign(static_cast<std::size_t>(world_), -1);
  beat_seen_.assign(static_cast<std::size_t>(world_), Clock::now());
}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard<std::mutex> lock(quit_mu_);
    quit_ = true;
  }
  quit_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HangWatchdog::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void HangWatchdog::begin_phase(PhaseKind kind, const std::string& label) {
  const auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    kind_ = kind, label_ = label, since_ = t0;
  }
  bookkeeping_seconds_ += seconds_between(t0, Clock::now());
}

HangWatchdog::CollectiveScope::CollectiveScope(HangWatchdog& w, const char* what) : w_(w) {
  {
    std::lock_guard<std::mutex> lock(w_.mu_);
    prev_kind_ = w_.kind_, prev_label_ = w_.label_;
    ++w_.seq_;
    w_.kind_ = PhaseKind::Collective;
    w_.label_ = fmt::format("{} #{} in {}", what, w_.seq_, prev_label_);
    w_.since_ = Clock::now();
    t0_ = w_.since_;
  }
  w_.bookkeeping_seconds_ += seconds_between(t0_, Clock::now());
}

HangWatchdog::CollectiveScope::~CollectiveScope() {
  const auto now = Clock::now();
  w_.collective_seconds_ += seconds_between(t0_, now);
  {
    std::lock_guard<std::mutex> lock(w_.mu_);
    w_.kind_ = prev_kind_, w_.label_ = std::move(prev_label_);
    w_.since_ = now;  // the interrupted phase resumes now
  }
  w_.bookkeeping_seconds_ += seconds_between(now, Clock::now());
}

void HangWatchdog::set_hang_timeout(double seconds) {
  if (!(seconds > 0)) throw std::invalid_argument("set_hang_timeout: seconds must be > 0");
  hang_timeout_ = seconds;
}

double HangWatchdog::take_collective_seconds() {
  return std::exchange(collective_seconds_, 0.0);
}

double HangWatchdog::take_health_seconds() {
  const auto ns = watchdog_cpu_ns_.exchange(0);
  return std::exchange(bookkeeping_seconds_, 0.0) + 1e-9 * static_cast<double>(ns);
}

HangWatchdog::Status HangWatchdog::snapshot() {
  Status me;
  std::lock_guard<std::mutex> lock(mu_);
  me.beat = ++beat_, me.seq = seq_, me.kind = kind_, me.label = label_;
  me.age = seconds_between(since_, Clock::now());
  return me;
}

void HangWatchdog::default_on_hang(const std::string& why) const {
  std::fprintf(stderr, "error: data-parallel hang detected by rank %d (%s): %s\n", rank_,
               hosts_[static_cast<std::size_t>(rank_)].c_str(), why.c_str());
  std::fflush(stderr);
  std::_Exit(kExitHang);
}

// The watchdog thread: polls until stopped or until the first finding.
void HangWatchdog::run() {
  double cpu_before = thread_cpu_seconds();
  while (true) {
    const double poll_s = std::clamp(hang_timeout_.load() / 10.0, 0.05, 1.0);
    {
      std::unique_lock<std::mutex> lock(quit_mu_);
      quit_cv_.wait_for(lock, std::chrono::duration<double>(poll_s), [&] { return quit_.load(); });
    }
    if (quit_) return;
    const std::optional<std::string> finding = poll();
    const double cpu_now = thread_cpu_seconds();
    watchdog_cpu_ns_ += static_cast<std::int64_t>(std::llround((cpu_now - cpu_before) * 1e9));
    cpu_before = cpu_now;
    if (finding) {
      if (on_hang_) {
        on_hang_(*finding);
      } else {
        default_on_hang(*finding);
      }
      return;
    }
  }
}

// Publishes this rank's status (a failed publish stops publishing: rank 0 may have finished) and
// applies the rules of docs/training.md "Hangs".
std::optional<std::string> HangWatchdog::poll() {
  const Status me = snapshot();
  if (store_ok_) {
    try {
      store_->set(health_key(rank_), me.encode());
    } catch (const std::exception&) {
      store_ok_ = false;
    }
  }
  const double hang = hang_timeout_.load();
  // A stalled compute phase waits twice the hang timeout, so that the ranks waiting for it in a
  // collective report first, naming it.
  const double limit = me.kind == PhaseKind::Exempt    ? fixed_
                       : me.kind == PhaseKind::Compute ? 2 * hang
                                                       : hang;
  if (me.age <= limit) return std::nullopt;
  // Until a hang timeout shorter than ddp_timeout is set, a collective's own wait fails first
  // (naming the collective).
  if (me.kind == PhaseKind::Collective && hang >= fixed_) return std::nullopt;
  const std::string limit_text =
      me.kind == PhaseKind::Exempt    ? fmt::format("ddp_timeout {:.0f} s", fixed_)
      : me.kind == PhaseKind::Compute ? fmt::format("2 x the hang timeout of {:.1f} s", hang)
                                      : fmt::format("hang timeout {:.1f} s", hang);
  if (me.kind != PhaseKind::Collective) {
    return fmt::format("this rank made no progress for {:.1f} s in {} ({})", me.age, me.label,
                       limit_text);
  }
  if (!store_ok_) return store_gone(me, limit_text);
  return diagnose_collective(me, limit_text, hang);
}

std::string HangWatchdog::store_gone(const Status& me, const std::string& limit_text) const {
  return fmt::format(
      "waited {:.1f} s in {} ({}), and the TCPStore that rank 0 hosts is unreachable: rank 0 "
      "({}) has stopped",
      me.age, me.label, limit_text, hosts_[0]);
}

// This rank has waited in collective `me` beyond its limit: finds the ranks that have not
// arrived and whether they are stuck. Nothing while every missing rank still moves.
std::optional<std::string> HangWatchdog::diagnose_collective(const Status& me,
                                                             const std::string& limit_text,
                                                             double hang) {
  std::vector<std::string> stuck;
  std::size_t missing = 0;
  const auto now = Clock::now();
  for (int s = 0; s < world_; ++s) {
    if (s == rank_) continue;
    std::optional<Status> st;
    try {
      if (auto text = store_->get(health_key(s))) st = Status::decode(*text);
    } catch (const std::exception&) {
      return store_gone(me, limit_text);
    }
    const auto us = static_cast<std::size_t>(s);
    const std::string who = fmt::format("rank {} ({})", s, hosts_[us]);
    if (!st) {
      ++missing;
      stuck.push_back(who + " never published its status");
      continue;
    }
    if (st->beat != last_beat_[us]) last_beat_[us] = st->beat, beat_seen_[us] = now;
    if (st->seq > me.seq || (st->seq == me.seq && st->kind == PhaseKind::Collective)) {
      if (st->seq == me.seq && st->label != me.label) {
        return fmt::format(
            "{} is in collective '{}' while this rank is in '{}': the ranks disagree on the "
            "order of collectives",
            who, st->label, me.label);
      }
      continue;  // arrived (or already past it)
    }
    ++missing;
    const double silent = seconds_between(beat_seen_[us], now);
    const double their_limit = st->kind == PhaseKind::Exempt ? fixed_ : hang;
    if (silent > hang) {
      stuck.push_back(
          fmt::format("{} never arrived and has published nothing for {:.1f} s (dead or frozen; "
                      "last seen in {})",
                      who, silent, st->label));
    } else if (st->age > their_limit) {
      stuck.push_back(
          fmt::format("{} never arrived: it has been in {} for {:.1f} s", who, st->label, st->age));
    }
  }
  if (missing == 0) {
    return fmt::format("every rank arrived at {}, but it did not complete in {:.1f} s ({})",
                       me.label, me.age, limit_text);
  }
  if (stuck.empty()) return std::nullopt;
  std::string text;
  for (const auto& s : stuck) text += (text.empty() ? "" : "; ") + s;
  return fmt::format("waited {:.1f} s in {} ({}): {}", me.age, me.label, limit_text, text);
}

}  // namespace dialtree::trainer
