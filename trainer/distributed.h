// Data-parallel training over PyTorch's own c10d process groups (docs/training.md "Data-parallel"):
// rendezvous from the torchrun environment variables, a Gloo process group over a TCPStore,
// bucketed averaging of gradients, a few scalar sums, and an all-gather of embedding rows whose
// gradient is correct under autograd (for the optional cross-rank contrastive candidate set).
//
// Only <ATen/core/Tensor.h> is included here; c10d, Gloo and model/torch_api.h stay inside
// distributed.cpp (docs/build.md P9, P12). The hang watchdog and the phases it watches are
// trainer/watchdog.h (torch-free, so that ThreadSanitizer can run it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trainer/health.h"    // kExitHang
#include "trainer/watchdog.h"  // PhaseKind

namespace dialtree::trainer {

/// Where this process sits in a data-parallel job (the torchrun convention).
struct Rendezvous {
  int rank = 0;             ///< RANK, in [0, world_size)
  int world_size = 1;       ///< WORLD_SIZE, >= 1
  std::string master_addr;  ///< MASTER_ADDR: host of rank 0's TCPStore (name or IPv4/IPv6)
  int master_port = 0;      ///< MASTER_PORT, in [1, 65535]
};

/// Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT through `getenv` (std::getenv by
/// default). Returns nullopt when neither RANK nor WORLD_SIZE is set (a plain single process).
/// @throws DataError naming the variable when one is set but another is missing, a number is
///   malformed or out of range (e.g. "RANK (2) must be < WORLD_SIZE (2)", "MASTER_PORT: 'x' is
///   not a port number in [1, 65535]"), or MASTER_ADDR is empty.
std::optional<Rendezvous> rendezvous_from_env(
    const std::function<const char*(const char*)>& getenv = {});

/// Settings of the process group (HF TrainingArguments names in the config).
struct DistributedOptions {
  std::string backend = "gloo";              ///< ddp_backend: only "gloo" (CPU) is built
  std::chrono::seconds timeout{1800};        ///< ddp_timeout: rendezvous and every collective
  std::int64_t bucket_cap_bytes = 25 << 20;  ///< ddp_bucket_cap_mb in bytes, > 0
  /// Run the hang watchdog (docs/training.md "Health checks"): a thread that publishes this
  /// rank's phase in the TCPStore and ends the process with kExitHang when a phase outlasts
  /// its timeout.
  bool watchdog = true;
};

/// One process's membership in a data-parallel group. Every collective must be called by all
/// ranks in the same order with tensors of the same shapes and dtypes; each one waits at most
/// the configured timeout and then throws instead of hanging.
class DataParallelGroup {
 public:
  /// Rendezvous at rz.master_addr:rz.master_port (rank 0 hosts the TCPStore there) and builds
  /// a Gloo process group (the loopback device when MASTER_ADDR is a loopback address or
  /// GLOO_SOCKET_IFNAME names an interface, else the device of this host's name).
  /// @throws DataError for an unsupported backend or bad options; std::runtime_error when the
  ///   store or the group cannot be set up within options.timeout (the message names
  ///   MASTER_ADDR:MASTER_PORT and the ranks still missing when c10d reports them).
  DataParallelGroup(const Rendezvous& rz, const DistributedOptions& options);
  ~DataParallelGroup();
  DataParallelGroup(const DataParallelGroup&) = delete;
  DataParallelGroup& operator=(const DataParallelGroup&) = delete;

  int rank() const;
  int world_size() const;

  /// Copies rank 0's values into `tensors` on every rank (contiguous CPU tensors; in place).
  void broadcast_from_rank0(const std::vector<at::Tensor>& tensors);

  /// Replaces each parameter's .grad() by its mean over the ranks. Gradients are packed in
  /// parameter order into flat buckets of at most bucket_cap_bytes (a larger gradient gets its
  /// own bucket), all buckets are reduced concurrently (SUM, then / world_size) and unpacked.
  /// An undefined .grad() takes part as zeros (and is defined afterwards), so ranks never
  /// disagree on the bucket layout. All gradients must be float32 CPU tensors.
  /// @throws std::invalid_argument on another dtype or device; std::runtime_error on timeout.
  void average_gradients(const std::vector<at::Tensor>& parameters);

  /// The element-wise sum of `values` over the ranks (float64, e.g. losses and counts to log).
  std::vector<double> sum(const std::vector<double>& values);

  /// Concatenation over the ranks, in rank order, of each rank's `local` rows:
  /// out = [rows of rank 0; rows of rank 1; ...], where rank r holds rows_per_rank[r] rows
  /// (every rank passes the same rows_per_rank; ranks with fewer rows are padded for transfer).
  /// This rank's slice of the result is `local` itself (so the graph keeps its gradient), the
  /// other slices are received values without gradient. Hence the gradient of a loss on `out`
  /// reaches this rank's parameters only through its own rows: summing the parameter
  /// gradients over ranks gives the gradient of that loss on the global batch, and after
  /// average_gradients() the caller must scale the loss's gradient by world_size.
  /// @param local float [rows_per_rank[rank], D] (any floating dtype; CPU)
  /// @return [sum(rows_per_rank), D], same dtype.
  /// @throws std::invalid_argument if local's rows differ from rows_per_rank[rank] or the list
  ///   does not have world_size entries.
  at::Tensor all_gather_rows(const at::Tensor& local,
                             const std::vector<std::int64_t>& rows_per_rank);

  /// Waits until every rank has reached this call (at most the timeout).
  void barrier();

  /// Starts a phase of this rank's main thread, e.g. (Compute, "step 7") or (Exempt,
  /// "evaluation"). Collectives run as (Collective, "<what> #<n> in <phase>") and then restore
  /// the phase they interrupted. Cheap: a lock and a clock read.
  void begin_phase(PhaseKind kind, const std::string& label);

  /// The hang timeout (seconds, > 0) the watchdog applies from now on to collectives (and twice
  /// it to Compute phases, so that the waiting ranks report a stalled rank first); Exempt phases
  /// keep ddp_timeout. It starts as ddp_timeout; the trainer sets it
  /// from the measured step time (hang_timeout_seconds() in trainer/health.h).
  ///
  /// When a phase outlasts it, the watchdog prints a diagnosis and ends the process with
  /// kExitHang: for a Compute phase, that this rank made no progress; for a collective, which
  /// ranks never arrived and what they are doing (or that they stopped publishing, or that the
  /// store on rank 0 is gone), or that a rank is in a different collective of the same number.
  /// A collective wait is not a hang while every missing rank is in an Exempt phase or started
  /// its current phase less than the timeout ago.
  void set_hang_timeout(double seconds);

  /// Seconds this rank's main thread spent inside collectives since the last call (then 0).
  double take_collective_seconds();

  /// What the health checks cost this rank since the last call (then 0), in seconds: the main
  /// thread's time in begin_phase() and in the phase bookkeeping around collectives, plus the
  /// watchdog thread's CPU time (CLOCK_THREAD_CPUTIME_ID). For the overhead figure in
  /// metrics.jsonl (health_overhead_fraction).
  double take_health_seconds();

  /// Host name of rank `r` (exchanged at start-up). @throws std::out_of_range for a bad rank.
  const std::string& host(int r) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dialtree::trainer
