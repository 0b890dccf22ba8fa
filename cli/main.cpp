// dialtree: one binary for STS conversion, tokenizers, pretraining, evaluation and serving.
//
// Exit status: 0 on success (also --help, --version); 2 for bad input or usage: a command-line
// error found by CLI11 (unknown flag, missing value, failed check), a DataError (bad input
// data), a TokenizerError, or an std::invalid_argument from option validation; 1 for anything
// else (I/O failures, internal errors). Every error is one line on stderr: "error: ...".
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "common/temp_cleanup.h"

namespace {

int report(const std::exception& e, int status) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dialtree: SPACE-2 style dialog understanding toolkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", DIALTREE_VERSION);
  // CLI11's own parse and validation errors in dialtree's form.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + "\nRun with --help for more information.\n";
  });
  dialtree::cli::register_embed(app);
  dialtree::cli::register_eval(app);
  dialtree::cli::register_serve(app);
  dialtree::cli::register_export(app);
  dialtree::cli::register_import_hf(app);
  dialtree::cli::register_plot(app);
  dialtree::cli::register_sts(app);
  dialtree::cli::register_tokenizer(app);
  dialtree::cli::register_train(app);
  dialtree::cli::register_version(app);
  try {
    // Ctrl-C / SIGTERM / SIGHUP remove the temporary files of unfinished atomic writes. A
    // subcommand may replace these handlers with its own (sigaction() after this point).
    dialtree::install_temp_cleanup_signal_handlers();
    dialtree::cli::configure_threads();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version come here with status 0 (app.exit prints them); every other
    // parse or usage error is bad usage: status 2 after CLI11's message.
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  } catch (const dialtree::DataError& e) {
    return report(e, 2);
  } catch (const dialtree::TokenizerError& e) {
    return report(e, 2);
  } catch (const std::invalid_argument& e) {
    return report(e, 2);
  } catch (const std::exception& e) {
    return report(e, 1);
  }
  return 0;
}
