// Registration of the dialtree subcommands. Each cli/<name>_cmd.cpp adds one subcommand
// group to the CLI11 app; it parses flags and calls the libraries, nothing else.
#pragma once

#include <CLI/CLI.hpp>

namespace dialtree::cli {

/// `dialtree eval score` (DialoGLUE scoring; more `eval` subcommands join it in cli/eval_cmd.cpp).
void register_eval(CLI::App& app);
/// `dialtree embed --model DIR`: offline batch embeddings (cli/embed_cmd.cpp).
void register_embed(CLI::App& app);
/// `dialtree serve --model DIR`: the embedding HTTP server (cli/serve_cmd.cpp).
void register_serve(CLI::App& app);
/// `dialtree export --model BUNDLE --format hf|sentence-transformers --out DIR`.
void register_export(CLI::App& app);
/// `dialtree import-hf --from DIR --out BUNDLE`.
void register_import_hf(CLI::App& app);
/// `dialtree plot RUN_DIR... --out DIR`: training curves and score charts (cli/plot_cmd.cpp).
void register_plot(CLI::App& app);
/// `dialtree sts convert|score`.
void register_sts(CLI::App& app);
/// `dialtree tokenizer train|encode|decode`.
void register_tokenizer(CLI::App& app);
/// `dialtree train CONFIG [key=value ...]` and `dialtree print-config CONFIG [key=value ...]`.
void register_train(CLI::App& app);
/// `dialtree version`: versions of dialtree and LibTorch, thread counts.
void register_version(CLI::App& app);

/// Sets LibTorch's intra-op thread count (STACK.md P2: it defaults to 1 on these KVM
/// machines): DIALTREE_NUM_THREADS, else OMP_NUM_THREADS, else the number of online CPUs.
/// Values outside [1, CPUs] are rejected with std::invalid_argument (CASES.md C27).
void configure_threads();
/// Sets LibTorch's intra-op thread count to `n` (a flag's value, e.g. serve --num-threads).
/// @throws std::invalid_argument if n is outside [1, CPUs] (CASES.md C27).
void set_num_threads(int n);
/// Sends spdlog's default logger to stderr (stdout stays for data: summaries, vectors), as
/// "level: message", or with a timestamp when `timestamps` (long-running commands).
void log_to_stderr(bool timestamps = false);

}  // namespace dialtree::cli
