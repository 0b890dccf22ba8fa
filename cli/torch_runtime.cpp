// The torch side of the CLI's set-up: LibTorch's thread count and the run-time report of
// `dialtree version --verbose` (docs/performance.md). The only CLI file besides the commands
// that include torch.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/core.h>
#include "model/torch_api.h"

#include "cli/app.h"
#include "cli/commands.h"
#include "common/blas_kernels.h"
#include "common/cpu_features.h"
#include "common/malloc_info.h"
#include "model/device.h"

namespace dialtree::cli {

void configure_threads() {
  at::set_num_threads(requested_intra_op_threads());
}

void set_num_threads(int n) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n < 1 || n > cpus) {
    throw std::invalid_argument("thread count " + std::to_string(n) + " must be in [1, " +
                                std::to_string(cpus) + "]");
  }
  at::set_num_threads(n);
}

void print_runtime_details() {
  fmt::print("libtorch threads: intra-op {}, inter-op {}\n", at::get_num_threads(),
             at::get_num_interop_threads());
  const BlasRuntime blas = inspect_loaded_blas();
  fmt::print("blas library: {}\n", blas.library.empty() ? "(none loaded)" : blas.library);
  if (blas.openblas) {
    fmt::print("blas: OpenBLAS, kernels {} ({}), {} threads ({})\n", blas.corename,
               to_string(openblas_core_tier(blas.corename)), blas.num_threads, blas.parallel);
    fmt::print("blas config: {}\n", blas.config);
  }
  const char* decision = std::getenv(kBlasDecisionEnv);
  fmt::print("blas kernel choice: {}\n", decision != nullptr ? decision : "none made");
  const CpuInfo& cpu = host_cpu();
  fmt::print("cpu: {} (vendor {}, family {}, model {}), widest kernels {}\n", cpu.model_name,
             cpu.vendor, cpu.family, cpu.model, to_string(cpu_kernel_tier(cpu)));
  fmt::print("native bf16: {}\n", cpu_has_native_bf16() ? "yes" : "no");
  fmt::print("malloc: {}\n", malloc_implementation());
  // docs/gpu.md: what `device: auto` picks on this machine.
  const auto gpus = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  fmt::print("cuda: {}, {} GPU{} visible; device auto = {}\n",
             torch::hasCUDA() ? "built in" : "not in this LibTorch", gpus, gpus == 1 ? "" : "s",
             model::resolve_device("auto", "device").str());
  const auto x = torch::ones({2, 2});
  fmt::print("tensor check: sum(ones(2,2) @ ones(2,2)) = {}\n",
             torch::mm(x, x).sum().item<float>());
}

}  // namespace dialtree::cli
