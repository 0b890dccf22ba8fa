#include "trainer/distributed.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <time.h>

#include <fmt/core.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/error.h"

namespace dialtree::trainer {

namespace {

DataError env_error(const char* var, const std::string& message) {
  return DataError("<environment>", "", var, message);
}

// A decimal integer in [lo, hi], or a DataError naming `var`.
int env_int(const char* var, const char* text, long lo, long hi, const char* what) {
  const std::string s = text;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || errno != 0 ||
      *end != '\0' || v < lo || v > hi) {
    throw env_error(var,
                    fmt::format("{} is not {} in [{}, {}]", quote_for_message(s), what, lo, hi));
  }
  return static_cast<int>(v);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Waits for `work` at most `timeout`, naming `what` when it fails.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, std::chrono::milliseconds timeout,
              const char* what) {
  try {
    work->wait(timeout);
  } catch (const c10::Error& e) {
    // Without LibTorch's C++ stack trace: the message says what happened.
    throw std::runtime_error(fmt::format("data-parallel {} failed (timeout {} s): {}", what,
                                         timeout.count() / 1000, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("data-parallel {} failed (timeout {} s): {}", what,
                                         timeout.count() / 1000, e.what()));
  }
}

}  // namespace

std::optional<Rendezvous> rendezvous_from_env(
    const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* var) -> const char* {
    return getenv_fn ? getenv_fn(var) : std::getenv(var);
  };
  const char* rank = get("RANK");
  const char* world = get("WORLD_SIZE");
  if (rank == nullptr && world == nullptr) return std::nullopt;
  for (const char* var : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    if (get(var) == nullptr) {
      throw env_error(var,
                      "is not set, but RANK or WORLD_SIZE is: a data-parallel run needs "
                      "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (or use "
                      "--nproc-per-node)");
    }
  }
  Rendezvous rz;
  rz.world_size = env_int("WORLD_SIZE", world, 1, 1 << 16, "a process count");
  rz.rank = env_int("RANK", rank, 0, 1 << 16, "a rank");
  if (rz.rank >= rz.world_size) {
    throw env_error("RANK",
                    fmt::format("RANK ({}) must be < WORLD_SIZE ({})", rz.rank, rz.world_size));
  }
  rz.master_addr = get("MASTER_ADDR");
  if (rz.master_addr.empty()) throw env_error("MASTER_ADDR", "is empty; give rank 0's host");
  rz.master_port = env_int("MASTER_PORT", get("MASTER_PORT"), 1, 65535, "a port number");
  return rz;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string health_key(int rank) {
  return "dialtree/health/" + std::to_string(rank);
}

// A rank's status as the watchdog publishes it: "beat seq kind age_ms label".
struct RankStatus {
  std::int64_t beat = -1, seq = 0;
  PhaseKind kind = PhaseKind::Exempt;
  double age = 0;  // seconds in the current phase when published
  std::string label;
};

std::vector<std::uint8_t> encode(const RankStatus& s) {
  const std::string text = fmt::format("{} {} {} {} {}", s.beat, s.seq, static_cast<int>(s.kind),
                                       static_cast<std::int64_t>(s.age * 1000), s.label);
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::optional<RankStatus> decode(const std::vector<std::uint8_t>& bytes) {
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  RankStatus s;
  int kind = 0;
  std::int64_t age_ms = 0;
  if (!(in >> s.beat >> s.seq >> kind >> age_ms) || kind < 0 || kind > 2) return std::nullopt;
  s.kind = static_cast<PhaseKind>(kind);
  s.age = static_cast<double>(age_ms) / 1000.0;
  std::getline(in >> std::ws, s.label);
  return s;
}

}  // namespace

struct DataParallelGroup::Impl {
  int rank = 0, world = 1;
  std::chrono::milliseconds timeout{0};
  std::int64_t bucket_cap_bytes = 0;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  std::vector<std::string> hosts;

  // The main thread's phase, read by the watchdog.
  std::mutex mu;
  PhaseKind kind = PhaseKind::Exempt;
  std::string label = "start-up";
  Clock::time_point since = Clock::now();
  std::int64_t seq = 0;  // collectives entered
  std::atomic<double> hang_timeout{0.0};
  double collective_seconds = 0;          // main thread only
  double bookkeeping_seconds = 0;         // main thread only: phase updates
  std::atomic<double> watchdog_cpu{0.0};  // the watchdog thread's CPU seconds

  std::atomic<bool> quit{false};
  std::mutex quit_mu;
  std::condition_variable quit_cv;
  std::thread watchdog;

  ~Impl() {
    quit = true;
    quit_cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  }

  class CollectiveScope;

  [[noreturn]] void abort_hang(const std::string& why) {
    std::fprintf(stderr, "error: data-parallel hang detected by rank %d (%s): %s\n", rank,
                 hosts.empty() ? "?" : hosts[static_cast<std::size_t>(rank)].c_str(), why.c_str());
    std::fflush(stderr);
    std::_Exit(kExitHang);
  }

  void watch();

 private:
  // The watchdog's state and phases (watch() runs them once per poll).
  struct WatchState {
    std::vector<std::int64_t> last_beat;       // each rank's last beat seen
    std::vector<Clock::time_point> beat_seen;  // when it changed
    std::int64_t beat = 0;                     // this rank's beat counter
    bool store_ok = true;                      // false after a failed publish
  };
  RankStatus publish_status(WatchState& w);
  [[noreturn]] void store_gone(const RankStatus& me, const std::string& limit_text);
  void diagnose_collective(WatchState& w, const RankStatus& me, const std::string& limit_text,
                           double hang, double fixed);
};

// The hang watchdog (see set_hang_timeout() in the header). Publishes this rank's status every
// poll; store failures stop the publishing (rank 0 may have finished) and count as a finding only
// while this rank waits in a collective beyond its timeout.
void DataParallelGroup::Impl::watch() {
  WatchState w;
  w.last_beat.assign(static_cast<std::size_t>(world), -1);
  w.beat_seen.assign(static_cast<std::size_t>(world), Clock::now());
  auto thread_cpu = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  double cpu_before = thread_cpu();
  while (!quit) {
    const double cpu_now = thread_cpu();
    watchdog_cpu = watchdog_cpu.load() + (cpu_now - cpu_before);
    cpu_before = cpu_now;
    const double hang = hang_timeout.load();
    const double fixed = static_cast<double>(timeout.count()) / 1000.0;
    const double poll = std::clamp(hang / 10.0, 0.05, 1.0);
    {
      std::unique_lock<std::mutex> lock(quit_mu);
      quit_cv.wait_for(lock, std::chrono::duration<double>(poll), [&] { return quit.load(); });
    }
    if (quit) return;
    const RankStatus me = publish_status(w);
    // A stalled compute phase waits twice the hang timeout, so that the ranks waiting for it
    // in a collective report first, naming it.
    const double limit = me.kind == PhaseKind::Exempt    ? fixed
                         : me.kind == PhaseKind::Compute ? 2 * hang
                                                         : hang;
    if (me.age <= limit) continue;
    // Until a hang timeout shorter than ddp_timeout is set, a collective's own wait fails first
    // (wait_for, naming the collective).
    if (me.kind == PhaseKind::Collective && hang >= fixed) continue;
    const std::string limit_text =
        me.kind == PhaseKind::Exempt    ? fmt::format("ddp_timeout {:.0f} s", fixed)
        : me.kind == PhaseKind::Compute ? fmt::format("2 x the hang timeout of {:.1f} s", hang)
                                        : fmt::format("hang timeout {:.1f} s", hang);
    if (me.kind != PhaseKind::Collective) {
      abort_hang(fmt::format("this rank made no progress for {:.1f} s in {} ({})", me.age, me.label,
                             limit_text));
    }
    if (!w.store_ok) store_gone(me, limit_text);
    diagnose_collective(w, me, limit_text, hang, fixed);
  }
}

// This rank's status, published to the store (a failed publish stops publishing: rank 0 may
// have finished).
RankStatus DataParallelGroup::Impl::publish_status(WatchState& w) {
  RankStatus me;
  {
    std::lock_guard<std::mutex> lock(mu);
    me.beat = ++w.beat, me.seq = seq, me.kind = kind, me.label = label;
    me.age = seconds_between(since, Clock::now());
  }
  if (w.store_ok) {
    try {
      store->set(health_key(rank), encode(me));
    } catch (const std::exception&) {
      w.store_ok = false;
    }
  }
  return me;
}

void DataParallelGroup::Impl::store_gone(const RankStatus& me, const std::string& limit_text) {
  abort_hang(
      fmt::format("waited {:.1f} s in {} ({}), and the TCPStore that rank 0 hosts "
                  "is unreachable: rank 0 ({}) has stopped",
                  me.age, me.label, limit_text, hosts.empty() ? "?" : hosts[0]));
}

// This rank has waited in collective `me` beyond its limit: finds the ranks that have not
// arrived and whether they are stuck, and aborts naming them (or returns while they still move).
void DataParallelGroup::Impl::diagnose_collective(WatchState& w, const RankStatus& me,
                                                  const std::string& limit_text, double hang,
                                                  double fixed) {
  std::vector<std::string> stuck;
  std::size_t missing = 0;
  const auto now = Clock::now();
  for (int s = 0; s < world; ++s) {
    if (s == rank) continue;
    std::optional<RankStatus> st;
    try {
      if (store->check({health_key(s)})) st = decode(store->get(health_key(s)));
    } catch (const std::exception&) {
      store_gone(me, limit_text);
    }
    const auto us = static_cast<std::size_t>(s);
    const std::string who = fmt::format("rank {} ({})", s, hosts[us]);
    if (!st) {
      ++missing;
      stuck.push_back(who + " never published its status");
      continue;
    }
    if (st->beat != w.last_beat[us]) w.last_beat[us] = st->beat, w.beat_seen[us] = now;
    if (st->seq > me.seq || (st->seq == me.seq && st->kind == PhaseKind::Collective)) {
      if (st->seq == me.seq && st->label != me.label) {
        abort_hang(
            fmt::format("{} is in collective '{}' while this rank is in '{}': the "
                        "ranks disagree on the order of collectives",
                        who, st->label, me.label));
      }
      continue;  // arrived (or already past it)
    }
    ++missing;
    const double silent = seconds_between(w.beat_seen[us], now);
    const double their_limit = st->kind == PhaseKind::Exempt ? fixed : hang;
    if (silent > hang) {
      stuck.push_back(
          fmt::format("{} never arrived and has published nothing for {:.1f} s "
                      "(dead or frozen; last seen in {})",
                      who, silent, st->label));
    } else if (st->age > their_limit) {
      stuck.push_back(
          fmt::format("{} never arrived: it has been in {} for {:.1f} s", who, st->label, st->age));
    }
  }
  if (missing == 0) {
    abort_hang(fmt::format("every rank arrived at {}, but it did not complete in {:.1f} s ({})",
                           me.label, me.age, limit_text));
  }
  if (!stuck.empty()) {
    std::string text;
    for (const auto& s : stuck) text += (text.empty() ? "" : "; ") + s;
    abort_hang(fmt::format("waited {:.1f} s in {} ({}): {}", me.age, me.label, limit_text, text));
  }
}

// RAII: the main thread is inside collective `what` (watchdog phase, collective seconds).
class DataParallelGroup::Impl::CollectiveScope {
 public:
  CollectiveScope(Impl& g, const char* what) : g_(g) {
    {
      std::lock_guard<std::mutex> lock(g_.mu);
      prev_kind_ = g_.kind, prev_label_ = g_.label;
      ++g_.seq;
      g_.kind = PhaseKind::Collective;
      g_.label = fmt::format("{} #{} in {}", what, g_.seq, prev_label_);
      g_.since = Clock::now();
      t0_ = g_.since;
    }
    g_.bookkeeping_seconds += seconds_between(t0_, Clock::now());
  }
  ~CollectiveScope() {
    const auto now = Clock::now();
    g_.collective_seconds += seconds_between(t0_, now);
    {
      std::lock_guard<std::mutex> lock(g_.mu);
      g_.kind = prev_kind_, g_.label = std::move(prev_label_);
      g_.since = now;  // the interrupted phase resumes now
    }
    g_.bookkeeping_seconds += seconds_between(now, Clock::now());
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  Impl& g_;
  Clock::time_point t0_;
  PhaseKind prev_kind_ = PhaseKind::Exempt;
  std::string prev_label_;
};

DataParallelGroup::DataParallelGroup(const Rendezvous& rz, const DistributedOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (options.backend != "gloo") {
    throw DataError("<config>", "", "ddp_backend",
                    quote_for_message(options.backend) +
                        " is not available: this build trains on CPU with Gloo only (NCCL "
                        "needs a CUDA build of libtorch)");
  }
  if (options.timeout.count() <= 0)
    throw DataError("<config>", "", "ddp_timeout", "must be > 0 seconds");
  if (options.bucket_cap_bytes <= 0)
    throw DataError("<config>", "", "ddp_bucket_cap_mb", "must be > 0");
  if (rz.world_size < 1 || rz.rank < 0 || rz.rank >= rz.world_size) {
    throw DataError(
        "", "", "RANK",
        fmt::format("RANK ({}) must be in [0, WORLD_SIZE ({}))", rz.rank, rz.world_size));
  }
  impl_->rank = rz.rank;
  impl_->world = rz.world_size;
  impl_->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
  impl_->bucket_cap_bytes = options.bucket_cap_bytes;
  const std::string where = fmt::format("{}:{}", rz.master_addr, rz.master_port);
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(rz.master_port);
    so.isServer = rz.rank == 0;
    so.numWorkers = static_cast<std::size_t>(rz.world_size);
    so.waitWorkers = true;
    so.timeout = impl_->timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(rz.master_addr, so);
    auto pg_options = c10d::ProcessGroupGloo::Options::create(impl_->timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (is_loopback(rz.master_addr)) {
      pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      pg_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, rz.rank, rz.world_size,
                                                            pg_options);
    // Host names, for the health reports (docs/training.md "Health checks").
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "?");
    impl_->store->set("dialtree/host/" + std::to_string(rz.rank),
                      std::vector<std::uint8_t>(host, host + std::strlen(host)));
    for (int r = 0; r < rz.world_size; ++r) {
      const auto bytes = impl_->store->get("dialtree/host/" + std::to_string(r));
      impl_->hosts.emplace_back(bytes.begin(), bytes.end());
    }
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("data-parallel rendezvous of rank {} of {} at MASTER_ADDR:MASTER_PORT = {} "
                    "failed (timeout {} s): {}",
                    rz.rank, rz.world_size, where, options.timeout.count(), e.what()));
  }
  impl_->hang_timeout = static_cast<double>(options.timeout.count());
  if (options.watchdog) impl_->watchdog = std::thread([g = impl_.get()] { g->watch(); });
}

DataParallelGroup::~DataParallelGroup() = default;

void DataParallelGroup::begin_phase(PhaseKind kind, const std::string& label) {
  const auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->kind = kind, impl_->label = label, impl_->since = t0;
  }
  impl_->bookkeeping_seconds += seconds_between(t0, Clock::now());
}

double DataParallelGroup::take_health_seconds() {
  const double s = impl_->bookkeeping_seconds + impl_->watchdog_cpu.exchange(0.0);
  impl_->bookkeeping_seconds = 0;
  return s;
}

void DataParallelGroup::set_hang_timeout(double seconds) {
  if (!(seconds > 0)) throw std::invalid_argument("set_hang_timeout: seconds must be > 0");
  impl_->hang_timeout = seconds;
}

double DataParallelGroup::take_collective_seconds() {
  const double s = impl_->collective_seconds;
  impl_->collective_seconds = 0;
  return s;
}

const std::string& DataParallelGroup::host(int r) const {
  return impl_->hosts.at(static_cast<std::size_t>(r));
}

int DataParallelGroup::rank() const {
  return impl_->rank;
}
int DataParallelGroup::world_size() const {
  return impl_->world;
}

void DataParallelGroup::broadcast_from_rank0(const std::vector<at::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    if (!t.is_contiguous() || !t.device().is_cpu()) {
      throw std::invalid_argument("broadcast_from_rank0: tensors must be contiguous CPU tensors");
    }
  }
  // One flat buffer per dtype would be faster; parameters are broadcast once per run.
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::vector<std::vector<at::Tensor>> holders;
  holders.reserve(tensors.size());
  for (const auto& t : tensors) {
    holders.push_back({t});
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    works.push_back(impl_->pg->broadcast(holders.back(), o));
  }
  Impl::CollectiveScope scope(*impl_, "broadcast");
  for (const auto& w : works) wait_for(w, impl_->timeout, "broadcast");
}

void DataParallelGroup::average_gradients(const std::vector<at::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) {
    at::Tensor p_mut = p;
    if (!p_mut.grad().defined()) p_mut.mutable_grad() = torch::zeros_like(p_mut);
    const at::Tensor& g = p_mut.grad();
    if (g.scalar_type() != at::kFloat || !g.device().is_cpu()) {
      throw std::invalid_argument("average_gradients: gradients must be float32 CPU tensors");
    }
    grads.push_back(g);
  }
  // Buckets of consecutive gradients, each at most bucket_cap_bytes unless one gradient alone
  // is larger.
  std::vector<std::pair<std::size_t, std::size_t>> buckets;  // [begin, end) in grads
  for (std::size_t i = 0; i < grads.size();) {
    std::size_t j = i;
    std::int64_t bytes = 0;
    while (j < grads.size() &&
           (j == i || bytes + grads[j].numel() * 4 <= impl_->bucket_cap_bytes)) {
      bytes += grads[j].numel() * 4;
      ++j;
    }
    buckets.emplace_back(i, j);
    i = j;
  }
  Impl::CollectiveScope scope(*impl_, "gradient all-reduce");
  std::vector<std::vector<at::Tensor>> flats;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  flats.reserve(buckets.size());
  for (const auto& [b, e] : buckets) {
    std::vector<at::Tensor> parts;
    for (std::size_t k = b; k < e; ++k) parts.push_back(grads[k].reshape({-1}));
    flats.push_back({torch::cat(parts)});
    works.push_back(impl_->pg->allreduce(flats.back()));
  }
  const double inv = 1.0 / static_cast<double>(impl_->world);
  for (std::size_t n = 0; n < buckets.size(); ++n) {
    wait_for(works[n], impl_->timeout, "gradient all-reduce");
    const at::Tensor& flat = flats[n][0];
    std::int64_t offset = 0;
    for (std::size_t k = buckets[n].first; k < buckets[n].second; ++k) {
      const std::int64_t len = grads[k].numel();
      grads[k].copy_(flat.slice(0, offset, offset + len).view_as(grads[k])).mul_(inv);
      offset += len;
    }
  }
}

std::vector<double> DataParallelGroup::sum(const std::vector<double>& values) {
  if (values.empty()) return {};
  std::vector<at::Tensor> t = {
      torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64))};
  Impl::CollectiveScope scope(*impl_, "sum");
  wait_for(impl_->pg->allreduce(t), impl_->timeout, "sum");
  const double* p = t[0].data_ptr<double>();
  return std::vector<double>(p, p + values.size());
}

at::Tensor DataParallelGroup::all_gather_rows(const at::Tensor& local,
                                              const std::vector<std::int64_t>& rows_per_rank) {
  if (rows_per_rank.size() != static_cast<std::size_t>(impl_->world)) {
    throw std::invalid_argument(
        fmt::format("all_gather_rows: rows_per_rank has {} entries, the "
                    "world has {} ranks",
                    rows_per_rank.size(), impl_->world));
  }
  if (local.dim() != 2 || local.size(0) != rows_per_rank[impl_->rank]) {
    throw std::invalid_argument(fmt::format(
        "all_gather_rows: local must be [{}, D] on rank {}, got {} dimensions with {} rows",
        rows_per_rank[impl_->rank], impl_->rank, local.dim(), local.dim() > 0 ? local.size(0) : 0));
  }
  const std::int64_t most = *std::max_element(rows_per_rank.begin(), rows_per_rank.end());
  at::Tensor send;
  {
    torch::NoGradGuard no_grad;
    send = torch::zeros({most, local.size(1)}, local.options().requires_grad(false));
    send.slice(0, 0, local.size(0)).copy_(local);
  }
  std::vector<at::Tensor> inputs = {send};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < impl_->world; ++r) outputs[0].push_back(torch::empty_like(send));
  {
    Impl::CollectiveScope scope(*impl_, "all-gather");
    wait_for(impl_->pg->allgather(outputs, inputs), impl_->timeout, "all-gather");
  }
  std::vector<at::Tensor> parts;
  for (int r = 0; r < impl_->world; ++r) {
    parts.push_back(r == impl_->rank ? local : outputs[0][r].slice(0, 0, rows_per_rank[r]));
  }
  return torch::cat(parts, 0);
}

void DataParallelGroup::barrier() {
  // Gloo's barrier ignores the timeout of wait(); a one-element all-reduce honours it.
  sum({0.0});
}

}  // namespace dialtree::trainer
