// dialtree: one binary for STS conversion, tokenizers, pretraining, evaluation and serving.
#include <cstdio>
#include <exception>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"dialtree: SPACE-2 style dialog understanding toolkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", DIALTREE_VERSION);
  dialtree::cli::register_sts(app);
  dialtree::cli::register_tokenizer(app);
  dialtree::cli::register_train(app);
  dialtree::cli::register_version(app);
  try {
    dialtree::cli::configure_threads();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dialtree::DataError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
