// What both dialtree executables share (docs/performance.md, "Two executables"): the
// light `dialtree` runs the torch-free commands itself and exec()s `dialtree-torch` for the
// others, after choosing the BLAS kernels. Torch-free.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command_table.h"

namespace dialtree::cli {

/// Thrown by a subcommand that has finished and wants a given exit status without an error
/// line (a launcher passing on its ranks' status, a run interrupted by a signal: 128 + signal).
/// run_cli() returns the status after the callback's locals are destroyed, which std::exit()
/// inside a CLI11 callback would skip.
class ExitRequest : public std::exception {
 public:
  explicit ExitRequest(int status) : status_(status) {}
  int status() const noexcept { return status_; }
  const char* what() const noexcept override { return "exit requested"; }

 private:
  int status_;
};

/// Parses argv with `app` and runs the chosen subcommand, mapping errors to dialtree's exit
/// statuses: 0 on success (also --help, --version); 2 for bad usage or input (CLI11 parse
/// errors, DataError, TokenizerError, std::invalid_argument); kExitInternalError (70) for an
/// InternalError, a bug (common/check.h); an ExitRequest's status, silently; 1 otherwise. Every
/// error is one line on stderr, "error: ...". `before_parse` (may be empty) runs first, inside the
/// same error handling: the commands' registration (register_commands(), whose broken table is
/// an InternalError) and the thread set-up.
int run_cli(CLI::App& app, int argc, char** argv, const std::function<void()>& before_parse);

/// The intra-op thread count a command should use: DIALTREE_NUM_THREADS, else OMP_NUM_THREADS,
/// else the number of online CPUs (LibTorch would otherwise default to 1 on KVM machines).
/// @throws std::invalid_argument naming the variable when its value is not an integer in
///         [1, CPUs].
int requested_intra_op_threads();

/// The route of `args` (argv without argv[0]): the route of find_command(args)'s row in the
/// command table (cli/command_table.h): Light for `sts`, `tokenizer`, `print-config`, `plot`,
/// `eval score`, `eval words` and `version` without arguments; also for `--version`. Torch for
/// everything else, including `--help`, an empty line, a group without its command and unknown
/// commands, so that the help and the "unknown command" / "needs a command" errors list every
/// command.
Route route_for(const std::vector<std::string>& args);

/// Unless DIALTREE_BLAS_KERNELS is already set (a choice made upstream stands), chooses the
/// BLAS kernels (common/blas_kernels.h: the user's OPENBLAS_CORETYPE wins, else OpenBLAS is
/// loaded and asked which core it chose), exports OPENBLAS_CORETYPE when it should change and
/// the decision's reason in DIALTREE_BLAS_KERNELS. Then replaces this process by
/// `dialtree-torch` from the same folder as this executable, with the same arguments.
/// Before that, it sets the environment defaults of the command's row in the command table
/// (cli/command_table.h: GOMP_SPINCOUNT for `serve`, MALLOC_CONF for `train` and `eval
/// dialoglue`) that the user did not choose.
/// Returns only on failure, with exit status 1 after printing "error: ..." to stderr.
int exec_torch_binary(char** argv);

/// env_default_for(args, "GOMP_SPINCOUNT", getenv_fn): the OpenMP spin count that `args` (argv
/// without argv[0]) runs with, "" where there is none (every command but `serve`) or the user
/// chose (GOMP_SPINCOUNT or OMP_WAIT_POLICY set). The command table (cli/command_table.cpp)
/// holds the value and its reason. @param getenv_fn the environment to read (std::getenv)
std::string server_spin_count(const std::vector<std::string>& args,
                              const std::function<const char*(const char*)>& getenv_fn);

/// env_default_for(args, "MALLOC_CONF", getenv_fn): the jemalloc settings that `args` (argv
/// without argv[0]) runs with, "" where there are none (every command but `train` and `eval
/// dialoglue`) or the user chose (MALLOC_CONF set and not empty). The command table
/// (cli/command_table.cpp) holds the value and its reason. @param getenv_fn the environment to
/// read (std::getenv)
std::string training_malloc_conf(const std::vector<std::string>& args,
                                 const std::function<const char*(const char*)>& getenv_fn);

}  // namespace dialtree::cli

namespace dialtree::cli {

/// Names `app` "dialtree", requires one subcommand, adds --version and dialtree's form of
/// CLI11's error messages. Both executables start with this.
void configure_app(CLI::App& app);

/// The registrations of the command table's Light rows (sts, tokenizer, print-config, plot, eval
/// score, eval words, version), for register_commands() (cli/command_table.h); both executables
/// use them. `version_details` prints what `version --verbose` adds (LibTorch, BLAS, threads);
/// the light executable passes an empty function, since route_for() sends --verbose to
/// dialtree-torch.
std::vector<Registration> light_registrations(std::function<void()> version_details);

}  // namespace dialtree::cli
