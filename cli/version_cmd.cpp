// `dialtree version [--verbose]`. Torch-free: the version of the LibTorch dialtree was built
// with comes from its header; --verbose is routed to dialtree-torch (cli/app.h), which loads
// LibTorch and the BLAS and reports what actually runs (cli/torch_runtime.cpp).
#include <memory>
#include <stdexcept>
#include <utility>

#include <fmt/core.h>
#include <torch/version.h>

#include "cli/commands.h"
#include "common/check.h"

namespace dialtree::cli {

void register_version(CLI::App& app, std::function<void()> details) {
  CLI::App* cmd = app.add_subcommand("version", "Print versions (--verbose: the run-time set-up)");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("-v,--verbose", *verbose,
                "Also load LibTorch and the BLAS and print what runs: BLAS library, kernel set "
                "and how it was chosen, thread counts, CPU, native bf16 (for bug reports)");
  cmd->callback([verbose, details = std::move(details)] {
    fmt::print("dialtree {}\n", DIALTREE_VERSION);
    fmt::print("libtorch {} (built with)\n", TORCH_VERSION);
    if (!*verbose) return;
    DIALTREE_CHECK(details != nullptr, "version --verbose reached the torch-free executable");
    details();
  });
}

}  // namespace dialtree::cli
