#include "trainer/distributed.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/core.h>
#include "model/torch_api.h"
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

// The watchdog's view of c10d's store (check() first: get() would wait for a missing key).
class C10dStatusStore final : public StatusStore {
 public:
  explicit C10dStatusStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::optional<std::string> get(const std::string& key) override {
    if (!store_->check({key})) return std::nullopt;
    const auto bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace

struct DataParallelGroup::Impl {
  int rank = 0, world = 1;
  std::chrono::milliseconds timeout{0};
  std::int64_t bucket_cap_bytes = 0;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  std::vector<std::string> hosts;
  std::unique_ptr<HangWatchdog> watchdog;  // phases always; its thread when options.watchdog
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
  impl_->watchdog = std::make_unique<HangWatchdog>(rz.rank, rz.world_size, impl_->hosts,
                                                   static_cast<double>(options.timeout.count()),
                                                   std::make_shared<C10dStatusStore>(impl_->store));
  if (options.watchdog) impl_->watchdog->start();
}

DataParallelGroup::~DataParallelGroup() = default;

void DataParallelGroup::begin_phase(PhaseKind kind, const std::string& label) {
  impl_->watchdog->begin_phase(kind, label);
}

double DataParallelGroup::take_health_seconds() {
  return impl_->watchdog->take_health_seconds();
}

void DataParallelGroup::set_hang_timeout(double seconds) {
  impl_->watchdog->set_hang_timeout(seconds);
}

double DataParallelGroup::take_collective_seconds() {
  return impl_->watchdog->take_collective_seconds();
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
  HangWatchdog::CollectiveScope scope(*impl_->watchdog, "broadcast");
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
  HangWatchdog::CollectiveScope scope(*impl_->watchdog, "gradient all-reduce");
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
  HangWatchdog::CollectiveScope scope(*impl_->watchdog, "sum");
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
    HangWatchdog::CollectiveScope scope(*impl_->watchdog, "all-gather");
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
