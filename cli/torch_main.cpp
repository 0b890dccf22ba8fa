// dialtree-torch: the executable behind `dialtree` that runs the commands needing LibTorch
// (embed, eval dialoglue / probe / pseudo-label, serve, export, import-hf, train, version
// --verbose), and the torch-free ones too. Users run `dialtree`, which chooses the BLAS kernels
// and exec()s this (cli/app.h, docs/performance.md).
//
// Exit status: 0 on success (also --help, --version); 2 for bad input or usage; 1 for anything
// else (cli/app.h, run_cli). Every error is one line on stderr: "error: ...".
#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "common/blas_kernels.h"

int main(int argc, char** argv) {
  // Started by `dialtree`, the kernel choice is made; started directly, make it now (at most
  // one re-exec, common/blas_kernels.h).
  dialtree::ensure_blas_kernels(argv);
  CLI::App app;
  dialtree::cli::configure_app(app);
  dialtree::cli::register_light_commands(app, dialtree::cli::print_runtime_details);
  dialtree::cli::register_embed(app);
  dialtree::cli::register_eval(app);
  dialtree::cli::register_serve(app);
  dialtree::cli::register_export(app);
  dialtree::cli::register_import_hf(app);
  dialtree::cli::register_train(app);
  return dialtree::cli::run_cli(app, argc, argv, dialtree::cli::configure_threads);
}
