// The local launcher of data-parallel runs (`dialtree train --nproc-per-node N`, docs/training.md
// "Data-parallel" and "Health checks"): it starts N ranks on 127.0.0.1, forwards a stop signal
// to them, stops the others when one fails, and restarts the job from its newest checkpoint
// (newest_checkpoint(), trainer/run_dir.h) up to --max-restarts times. Torch-free (fork/exec and
// waitpid only).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dialtree::trainer {

/// A free TCP port on 127.0.0.1 at the time of the call (bound to port 0, then released), for
/// launching local workers. @throws std::runtime_error if no socket can be bound.
int free_loopback_port();

/// How a child process ended, from its waitpid() status, in words: "exited with status 1",
/// "exited with status 75 (its hang watchdog fired)", "was killed by signal 9 (SIGKILL)".
std::string describe_exit(int wait_status);

/// What launch_local_workers() runs.
struct LaunchOptions {
  int nproc = 1;                  ///< ranks to start, >= 1
  std::vector<std::string> args;  ///< argv[1..] of every rank, e.g. {"train", CONFIG, k=v...}
  std::string output_dir;         ///< the run's output_dir (where restarts find checkpoints)
  int max_restarts = 0;           ///< restarts of the whole group after a failure (torchrun's)
  std::string program = "/proc/self/exe";  ///< the executable every rank runs
  /// On a restart, run one rank fewer and keep the global batch by raising
  /// gradient_accumulation_steps (possible when accumulation × ranks is divisible by ranks - 1).
  bool exclude_failed_rank = false;
  int gradient_accumulation_steps = 1;  ///< the run's, for exclude_failed_rank
};

/// Runs `program args...` as ranks 0..nproc-1 of a local job (RANK, LOCAL_RANK, WORLD_SIZE,
/// MASTER_ADDR 127.0.0.1 and a free MASTER_PORT in their environment) and supervises them:
/// - when `stop_signal()` returns a signal number, that signal is forwarded to every rank, which
///   stop together after a checkpoint (status 128 + signal, not counted as a failure); when
///   `force_stop()` turns true (a second signal), the ranks are killed at once;
/// - when a rank fails otherwise (non-zero status or killed), `log` names the rank and how it
///   ended, the other ranks are killed (SIGKILL), and unless the failure was a usage error
///   (status 2) or max_restarts restarts have been made, the group is started again with
///   `resume_from_checkpoint=<the newest complete checkpoint this job wrote>` appended (step 0
///   when there is none; the log names it) and without DIALTREE_FAULT in its environment, so an
///   injected fault fires once. With exclude_failed_rank, the restarted group has one rank
///   fewer and `gradient_accumulation_steps=A·N/(N-1)` appended, so every optimiser step still
///   consumes A·N micro-batches (the same trajectory: the checkpoint counts batches, not
///   ranks); when A·N is not divisible by N-1 the log says so and the group keeps N ranks.
/// Returns the job's exit status: 0, the failing rank's status (128 + signal when killed), or
/// 128 + the forwarded signal. @throws std::runtime_error when fork() fails.
int launch_local_workers(const LaunchOptions& options, const std::function<int()>& stop_signal,
                         const std::function<bool()>& force_stop,
                         const std::function<void(const std::string&)>& log);

}  // namespace dialtree::trainer
