// What both dialtree executables share (docs/performance.md, "Two executables"): the
// light `dialtree` runs the torch-free commands itself and exec()s `dialtree-torch` for the
// others, after choosing the BLAS kernels. Torch-free.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

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
/// same error handling: the thread set-up.
int run_cli(CLI::App& app, int argc, char** argv, const std::function<void()>& before_parse);

/// The intra-op thread count a command should use: DIALTREE_NUM_THREADS, else OMP_NUM_THREADS,
/// else the number of online CPUs (LibTorch would otherwise default to 1 on KVM machines).
/// @throws std::invalid_argument naming the variable when its value is not an integer in
///         [1, CPUs].
int requested_intra_op_threads();

/// Which executable runs a command line.
enum class Route {
  Light,  ///< torch-free: `dialtree` runs it itself, in milliseconds
  Torch,  ///< needs LibTorch: `dialtree` exec()s `dialtree-torch`
};

/// The route of `args` (argv without argv[0]): Light for `sts`, `tokenizer`, `print-config`,
/// `plot`, `eval score`, `version` without arguments and `--version`; Torch for everything
/// else, including `--help`, an empty line and unknown commands, so that the help and the
/// "unknown command" / "needs a command" errors list every command.
Route route_for(const std::vector<std::string>& args);

/// Unless DIALTREE_BLAS_KERNELS is already set (a choice made upstream stands), chooses the
/// BLAS kernels (common/blas_kernels.h: the user's OPENBLAS_CORETYPE wins, else OpenBLAS is
/// loaded and asked which core it chose), exports OPENBLAS_CORETYPE when it should change and
/// the decision's reason in DIALTREE_BLAS_KERNELS. Then replaces this process by
/// `dialtree-torch` from the same folder as this executable, with the same arguments.
/// Before that, server_spin_count() may set GOMP_SPINCOUNT for `serve`, and
/// training_malloc_conf() MALLOC_CONF for `train`.
/// Returns only on failure, with exit status 1 after printing "error: ..." to stderr.
int exec_torch_binary(char** argv);

/// The GOMP_SPINCOUNT that `dialtree serve` runs with when the user set neither it nor
/// OMP_WAIT_POLICY: "10000" (OpenMP threads of a finished parallel region spin 30x shorter than
/// libgomp's default before sleeping, which leaves the CPUs to the HTTP threads between forward
/// passes: bench/README.md, server). Empty for every other command line and when the user chose.
/// libgomp reads the variable only when it loads, hence the light executable sets it.
/// @param args argv without argv[0]; @param getenv_fn the environment to read (std::getenv)
std::string server_spin_count(const std::vector<std::string>& args,
                              const std::function<const char*(const char*)>& getenv_fn);

/// The MALLOC_CONF that `dialtree train` and `dialtree eval dialoglue` run with when the user set
/// none: "dirty_decay_ms:-1,muzzy_decay_ms:-1", so that jemalloc keeps the pages a training step
/// frees instead of handing them back to the kernel and faulting them in again on the next step
/// (docs/build.md P13: the language stage ran 3x faster, fine-tuning 3-4x; fine-tuning's
/// varied batch shapes fragment the kept pages, so its loop releases them every 50 steps).
/// Empty for every other command line and when MALLOC_CONF is set to anything but "".
/// jemalloc reads the variable only when it starts, hence the light executable sets it.
/// @param args argv without argv[0]; @param getenv_fn the environment to read (std::getenv)
std::string training_malloc_conf(const std::vector<std::string>& args,
                                 const std::function<const char*(const char*)>& getenv_fn);

}  // namespace dialtree::cli

namespace dialtree::cli {

/// Names `app` "dialtree", requires one subcommand, adds --version and dialtree's form of
/// CLI11's error messages. Both executables start with this.
void configure_app(CLI::App& app);

/// Registers the torch-free commands (sts, tokenizer, print-config, plot, eval score, version)
/// on `app`. `version_details` prints what `version --verbose` adds (LibTorch, BLAS, threads);
/// the light executable passes an empty function, since route_for() sends --verbose to
/// dialtree-torch.
void register_light_commands(CLI::App& app, std::function<void()> version_details);

}  // namespace dialtree::cli
