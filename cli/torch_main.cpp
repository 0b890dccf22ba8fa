// dialtree-torch: the executable behind `dialtree` that runs the commands needing LibTorch
// (embed, eval dialoglue / probe / pseudo-label, serve, export, import-hf, train, version
// --verbose), and the torch-free ones too. Users run `dialtree`, which chooses the BLAS kernels
// and exec()s this (cli/app.h, docs/performance.md).
//
// Exit status: 0 on success (also --help, --version); 2 for bad input or usage; 1 for anything
// else (cli/app.h, run_cli). Every error is one line on stderr: "error: ...".
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/command_table.h"
#include "cli/commands.h"
#include "common/blas_kernels.h"

int main(int argc, char** argv) {
  // Started by `dialtree`, the kernel choice is made; started directly, make it now (at most
  // one re-exec, common/blas_kernels.h).
  dialtree::ensure_blas_kernels(argv);
  using namespace dialtree::cli;
  CLI::App app;
  configure_app(app);
  return run_cli(app, argc, argv, [&app] {
    // Every row of the command table (cli/command_table.h): the light ones as `dialtree`
    // registers them, with `version --verbose`'s runtime report, and the torch ones.
    std::vector<Registration> registrations = light_registrations(print_runtime_details);
    for (Registration& torch : std::vector<Registration>{
             {{"eval", "dialoglue"}, register_eval_dialoglue},
             {{"eval", "probe"}, register_eval_probe},
             {{"eval", "pseudo-label"}, register_eval_pseudo_label},
             {{"embed"}, register_embed},
             {{"serve"}, register_serve},
             {{"export"}, register_export},
             {{"import-hf"}, register_import_hf},
             {{"train"}, register_train},
         }) {
      registrations.push_back(std::move(torch));
    }
    register_commands(app, Route::Torch, registrations);
    configure_threads();
  });
}
