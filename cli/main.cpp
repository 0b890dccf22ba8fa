// dialtree: one command for STS conversion, tokenizers, pretraining, evaluation and serving.
// This light executable is torch-free and starts in milliseconds: it runs the torch-free
// commands itself and hands every other command line to dialtree-torch, after choosing the
// BLAS kernels that process will load (cli/app.h route_for / exec_torch_binary,
// docs/performance.md).
//
// Exit status: 0 on success (also --help, --version); 2 for bad input or usage; 1 for anything
// else (cli/app.h, run_cli). Every error is one line on stderr: "error: ...".
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/command_table.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (dialtree::cli::route_for(args) == dialtree::cli::Route::Torch) {
    return dialtree::cli::exec_torch_binary(argv);
  }
  CLI::App app;
  dialtree::cli::configure_app(app);
  return dialtree::cli::run_cli(app, argc, argv, [&app] {
    // The command table's Light rows (cli/command_table.h); the torch ones are dialtree-torch's.
    dialtree::cli::register_commands(app, dialtree::cli::Route::Light,
                                     dialtree::cli::light_registrations({}));
    // The same validation of DIALTREE_NUM_THREADS / OMP_NUM_THREADS as dialtree-torch.
    (void)dialtree::cli::requested_intra_op_threads();
  });
}
