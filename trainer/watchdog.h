// The hang watchdog of data-parallel training (docs/training.md "Health checks", "Hangs"): the
// main thread's phase, a thread that publishes it in the job's key-value store and reads the
// other ranks' phases when this rank waits too long, and the diagnosis it prints before ending
// the process. Torch-free: trainer/distributed.cpp connects it to c10d's TCPStore, the tests to
// an in-memory store (so the thread runs under ThreadSanitizer, docs/build.md "Guard build").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dialtree::trainer {

/// What a rank's main thread is doing, as the hang watchdog sees it.
enum class PhaseKind {
  Compute,     ///< a training step's own work: bounded by the hang timeout
  Collective,  ///< waiting in a collective (set by the collectives themselves)
  Exempt,      ///< start-up, evaluation, checkpoints: bounded by ddp_timeout only
};

/// What the watchdog needs of the job's key-value store (all ranks see the same keys).
class StatusStore {
 public:
  virtual ~StatusStore() = default;
  /// Sets `key` to `value`. @throws std::exception when the store is unreachable.
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, or nullopt when it was never set, without waiting.
  /// @throws std::exception when the store is unreachable.
  virtual std::optional<std::string> get(const std::string& key) = 0;
};

/// One rank's hang watchdog. The main thread calls begin_phase() and enters collectives through
/// CollectiveScope; the watchdog thread (start()) polls about every tenth of the hang timeout
/// (0.05–1 s): it publishes this rank's phase as "dialtree/health/<rank>" and applies the rules
/// of docs/training.md "Hangs". A finding goes to the `on_hang` handler (by default: print
/// "error: data-parallel hang detected by rank R (HOST): WHY" and _Exit(kExitHang)); the thread
/// ends after a finding.
class HangWatchdog {
 public:
  /// Receives the diagnosis (one line, without the "error: ..." prefix).
  using OnHang = std::function<void(const std::string& why)>;

  /// @param hosts each rank's host name (world entries), for the messages
  /// @param ddp_timeout_seconds the fixed bound of Exempt phases and, until set_hang_timeout(),
  ///   the hang timeout (> 0)
  /// @param on_hang the handler of a finding; empty = print and _Exit(kExitHang)
  /// @throws std::invalid_argument for rank outside [0, world), hosts.size() != world, a null
  ///   store or a timeout <= 0.
  HangWatchdog(int rank, int world, std::vector<std::string> hosts, double ddp_timeout_seconds,
               std::shared_ptr<StatusStore> store, OnHang on_hang = {});
  /// Stops the thread (at most one poll interval).
  ~HangWatchdog();
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  /// Starts the watchdog thread (once; a second call does nothing).
  void start();

  /// One poll without the thread: publishes this rank's status and returns the finding, if any.
  /// The thread calls it; tests call it directly for a deterministic sequence.
  std::optional<std::string> poll();

  /// Starts a phase of the main thread, e.g. (Compute, "step 7"). Cheap: a lock and a clock read.
  void begin_phase(PhaseKind kind, const std::string& label);

  /// RAII: the main thread waits in collective `what` (label "<what> #<n> in <phase>"); the
  /// interrupted phase resumes, from now, when the scope ends. Adds to take_collective_seconds().
  class CollectiveScope {
   public:
    CollectiveScope(HangWatchdog& w, const char* what);
    ~CollectiveScope();
    CollectiveScope(const CollectiveScope&) = delete;
    CollectiveScope& operator=(const CollectiveScope&) = delete;

   private:
    HangWatchdog& w_;
    std::chrono::steady_clock::time_point t0_;
    PhaseKind prev_kind_ = PhaseKind::Exempt;
    std::string prev_label_;
  };

  /// The hang timeout in seconds (> 0) from now on (see DataParallelGroup::set_hang_timeout).
  /// @throws std::invalid_argument when seconds <= 0 or is NaN.
  void set_hang_timeout(double seconds);

  /// Seconds the main thread spent inside collectives since the last call (then 0). Main thread.
  double take_collective_seconds();

  /// The main thread's phase bookkeeping plus the watchdog thread's CPU time since the last call
  /// (then 0), in seconds. Main thread.
  double take_health_seconds();

 private:
  using Clock = std::chrono::steady_clock;
  struct Status;  // one rank's published status
  Status snapshot();
  [[noreturn]] void default_on_hang(const std::string& why) const;
  std::optional<std::string> diagnose_collective(const Status& me, const std::string& limit_text,
                                                 double hang);
  std::string store_gone(const Status& me, const std::string& limit_text) const;
  void run();

  const int rank_, world_;
  const std::vector<std::string> hosts_;
  const double fixed_;  // ddp_timeout, seconds
  const std::shared_ptr<StatusStore> store_;
  const OnHang on_hang_;

  // The main thread's phase, read by the watchdog thread.
  std::mutex mu_;
  PhaseKind kind_ = PhaseKind::Exempt;
  std::string label_ = "start-up";
  Clock::time_point since_ = Clock::now();
  std::int64_t seq_ = 0;  // collectives entered
  std::atomic<double> hang_timeout_;

  double collective_seconds_ = 0;                 // main thread only
  double bookkeeping_seconds_ = 0;                // main thread only
  std::atomic<std::int64_t> watchdog_cpu_ns_{0};  // added by the thread, taken by the main thread

  // The watchdog thread's own state (poll() callers only).
  std::int64_t beat_ = 0;
  bool store_ok_ = true;  // false after a failed publish
  std::vector<std::int64_t> last_beat_;
  std::vector<Clock::time_point> beat_seen_;

  std::atomic<bool> quit_{false};
  std::mutex quit_mu_;
  std::condition_variable quit_cv_;
  std::thread thread_;
};

}  // namespace dialtree::trainer
