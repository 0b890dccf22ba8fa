// `dialtree version` and the LibTorch thread set-up. The only CLI file that includes torch.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/core.h>
#include <torch/torch.h>

#include "cli/commands.h"

namespace dialtree::cli {

void configure_threads() {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int n = cpus;
  for (const char* var : {"DIALTREE_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long parsed = std::strtol(v, &end, 10);
    if (*end != '\0' || parsed < 1 || parsed > cpus) {
      throw std::invalid_argument(std::string(var) + "=" + v + " must be an integer in [1, " +
                                  std::to_string(cpus) + "]");
    }
    n = static_cast<int>(parsed);
    break;
  }
  at::set_num_threads(n);
}

void set_num_threads(int n) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n < 1 || n > cpus) {
    throw std::invalid_argument("thread count " + std::to_string(n) + " must be in [1, " +
                                std::to_string(cpus) + "]");
  }
  at::set_num_threads(n);
}

void register_version(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print versions and thread settings");
  cmd->callback([] {
    fmt::print("dialtree {}\n", DIALTREE_VERSION);
    fmt::print("libtorch {} (intra-op threads {}, inter-op threads {})\n", TORCH_VERSION,
               at::get_num_threads(), at::get_num_interop_threads());
    const auto x = torch::ones({2, 2});
    fmt::print("tensor check: sum(ones(2,2) @ ones(2,2)) = {}\n",
               torch::mm(x, x).sum().item<float>());
  });
}

}  // namespace dialtree::cli
